#include "nodes/roofline_kernels.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "nodes/ncu_csv.hpp"

namespace aispflow::roofline {

namespace {

using ncu::cell;
using ncu::column;
using ncu::lower;
using ncu::trim;

// The resource a metric measures, from its name ("l2__throughput.avg.pct_of_peak_sustained_elapsed" -> L2).
std::optional<std::string> resource_of(const std::string& metric) {
  static const std::vector<std::pair<std::string, std::string>> prefixes = {
      {"sm__throughput", "compute"}, {"tmem__throughput", "TMEM"},        {"l2__throughput", "L2"},
      {"lts__throughput", "L2"},     {"dram__throughput", "DRAM"},         {"gpu__dram_throughput", "DRAM"}};
  for (const auto& [prefix, resource] : prefixes)
    if (metric == prefix || metric.rfind(prefix + ".", 0) == 0) return resource;
  return std::nullopt;
}

std::string pct_text(double fraction) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.0f%%", 100 * fraction);
  return buffer;
}

}  // namespace

const std::vector<std::string>& throughput_resources() {
  static const std::vector<std::string> r = {"compute", "TMEM", "L2", "DRAM"};
  return r;
}

std::vector<KernelRow> read_kernel_rows(const std::string& text, const std::string& shown) {
  const auto rows = ncu::parse_csv_of(text, shown);
  if (rows.empty()) throw std::runtime_error(shown + ": empty; expected a header: kernel,intensity,achieved_tflops[,label]");
  std::vector<std::string> header;
  for (const auto& c : rows[0]) header.push_back(lower(trim(c)));
  const int kernel_col = column(header, "kernel"), intensity_col = column(header, "intensity"),
            achieved_col = column(header, "achieved_tflops"), label_col = column(header, "label");
  if (kernel_col < 0 || intensity_col < 0 || achieved_col < 0)
    throw std::runtime_error(shown + ":1: expected a header with columns kernel, intensity and achieved_tflops "
                                     "(optional: label)");
  std::vector<KernelRow> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    KernelRow k;
    k.kernel = cell(rows[r], kernel_col);
    if (k.kernel.empty()) continue;
    k.line = int(r + 1);
    for (const auto& [col, name, target] : {std::tuple{intensity_col, "intensity", &k.intensity},
                                            std::tuple{achieved_col, "achieved_tflops", &k.achieved_tflops}}) {
      const auto v = ncu::parse_number(cell(rows[r], col));
      if (!v || !(*v > 0))
        throw std::runtime_error(shown + ":" + std::to_string(r + 1) + ": column " + name +
                                 ": expected a positive number, got '" + cell(rows[r], col) + "'");
      *target = *v;
    }
    k.label = cell(rows[r], label_col);
    out.push_back(std::move(k));
  }
  if (out.empty()) throw std::runtime_error(shown + ": no kernel rows under the header");
  return out;
}

std::vector<KernelThroughput> read_throughput(const std::string& text, const std::string& shown,
                                              std::vector<std::string>* scales) {
  const auto rows = ncu::parse_csv_of(text, shown);
  const std::size_t h = ncu::kernel_header_row(rows, shown);
  const auto& header = rows[h];
  const int kernel_col = column(header, "Kernel Name"), id_col = column(header, "ID");
  const int name_col = column(header, "Metric Name"), unit_col = column(header, "Metric Unit"),
            value_col = column(header, "Metric Value");

  // (launch id, kernel, metric, unit, value) for every throughput value in the file.
  struct Value {
    std::string launch, kernel, metric, unit;
    double value;
  };
  std::vector<Value> values;
  if (name_col >= 0 && value_col >= 0) {   // details page: one row per metric
    for (std::size_t r = h + 1; r < rows.size(); ++r) {
      const std::string metric = cell(rows[r], name_col);
      const auto v = ncu::parse_number(cell(rows[r], value_col));
      if (!resource_of(metric) || !v) continue;
      std::string id = cell(rows[r], id_col);
      values.push_back({id.empty() ? "row" + std::to_string(r) : id, cell(rows[r], kernel_col), metric,
                        cell(rows[r], unit_col), *v});
    }
  } else {   // raw page: one column per metric, perhaps a units row first
    std::size_t first = h + 1;
    std::vector<std::string> units(header.size());
    if (first < rows.size() && cell(rows[first], kernel_col).empty()) {
      units = rows[first];
      units.resize(header.size());
      ++first;
    }
    for (std::size_t r = first; r < rows.size(); ++r) {
      const std::string kernel = cell(rows[r], kernel_col);
      if (kernel.empty()) continue;
      std::string id = cell(rows[r], id_col);
      if (id.empty()) id = "row" + std::to_string(r);
      for (std::size_t c = 0; c < header.size(); ++c)
        if (resource_of(trim(header[c])))
          if (const auto v = ncu::parse_number(cell(rows[r], int(c))))
            values.push_back({id, kernel, trim(header[c]), trim(units[c]), *v});
    }
  }
  if (values.empty())
    throw std::runtime_error(shown + ": no throughput metric found; profile with --metrics sm__throughput.avg."
                                     "pct_of_peak_sustained_elapsed,tmem__throughput...,l2__throughput...,"
                                     "dram__throughput... (percent of peak or ratios)");

  // Percent or ratio, per metric.
  std::map<std::string, double> scale;
  for (const auto& v : values) {
    if (scale.count(v.metric)) continue;
    const std::string name = lower(v.metric), unit = lower(v.unit);
    std::string why;
    if (unit == "%" || name.find("pct") != std::string::npos) {
      scale[v.metric] = 0.01;
      why = "percent (unit or name)";
    } else if (unit == "ratio" || name.find("ratio") != std::string::npos) {
      scale[v.metric] = 1;
      why = "ratio (unit or name)";
    } else {
      const bool above_one = std::any_of(values.begin(), values.end(),
                                         [&](const Value& o) { return o.metric == v.metric && o.value > 1; });
      scale[v.metric] = above_one ? 0.01 : 1;
      why = above_one ? "percent (values above 1)" : "ratio (no value above 1)";
    }
    if (scales) scales->push_back(v.metric + ": " + why);
  }

  // Per kernel, per resource: the mean over its launches.
  std::vector<KernelThroughput> out;
  std::map<std::string, std::size_t> index;
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> sums;   // (kernel, resource) -> sum, n
  std::map<std::string, std::vector<std::string>> launches;
  for (const auto& v : values) {
    auto [it, fresh] = index.try_emplace(v.kernel, out.size());
    if (fresh) out.push_back({v.kernel, 0, {}});
    auto& ids = launches[v.kernel];
    if (std::find(ids.begin(), ids.end(), v.launch) == ids.end()) ids.push_back(v.launch);
    auto& [sum, n] = sums[{v.kernel, *resource_of(v.metric)}];
    sum += v.value * scale[v.metric];
    ++n;
  }
  for (auto& k : out) {
    k.launches = int(launches[k.kernel].size());
    for (const auto& r : throughput_resources())
      if (auto it = sums.find({k.kernel, r}); it != sums.end()) k.utilisation[r] = it->second.first / it->second.second;
  }
  return out;
}

std::string KernelBinding::describe() const {
  if (!ncu) return "binding resource unknown (kernel not in the ncu CSV)";
  std::string s = resource + "-bound (";
  bool first = true;
  for (const auto& r : throughput_resources())
    if (auto it = ncu->utilisation.find(r); it != ncu->utilisation.end()) {
      s += (first ? "" : ", ") + r + " " + pct_text(it->second);
      first = false;
    }
  return s + ")";
}

nlohmann::json KernelBinding::to_json() const {
  nlohmann::json j = {{"kernel", row.kernel}, {"intensity", row.intensity}, {"achieved_tflops", row.achieved_tflops},
                      {"binding_resource", resource}};
  if (!row.label.empty()) j["label"] = row.label;
  if (ncu) {
    j["ncu_kernel"] = ncu->kernel;
    j["launches"] = ncu->launches;
    j["utilisation"] = ncu->utilisation;
  }
  return j;
}

std::vector<KernelBinding> bind_kernels(const std::vector<KernelRow>& rows, const std::vector<KernelThroughput>& ncu,
                                        const std::string& shown) {
  std::vector<KernelBinding> out;
  for (const auto& row : rows) {
    KernelBinding b{row, std::nullopt, "unknown"};
    const KernelThroughput* match = nullptr;
    for (const auto& k : ncu)
      if (k.kernel == row.kernel) match = &k;
    if (!match) {
      std::vector<const KernelThroughput*> containing;
      for (const auto& k : ncu)
        if (k.kernel.find(row.kernel) != std::string::npos) containing.push_back(&k);
      if (containing.size() > 1) {
        std::string names;
        for (const auto* k : containing) names += "\n  " + k->kernel;
        throw std::runtime_error(shown + ":" + std::to_string(row.line) + ": kernel '" + row.kernel + "' is part of " +
                                 std::to_string(containing.size()) +
                                 " kernel names in the ncu CSV; give enough of the name to pick one:" + names);
      }
      if (containing.size() == 1) match = containing.front();
    }
    if (match && !match->utilisation.empty()) {
      b.ncu = *match;
      double best = -1;
      for (const auto& r : throughput_resources())   // ties: the earlier resource in this order
        if (auto it = match->utilisation.find(r); it != match->utilisation.end() && it->second > best) {
          best = it->second;
          b.resource = r;
        }
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::string kernels_csv(const std::vector<KernelBinding>& kernels) {
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto number = [](double v) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.6g", v);
    return std::string(buffer);
  };
  std::string s = "kernel,ncu_kernel,label,intensity_flop_per_byte,achieved_tflops,compute_pct,tmem_pct,l2_pct,dram_pct,"
                  "binding_resource\n";
  for (const auto& k : kernels) {
    s += field(k.row.kernel) + "," + field(k.ncu ? k.ncu->kernel : "") + "," + field(k.row.label) + "," +
         number(k.row.intensity) + "," + number(k.row.achieved_tflops);
    for (const auto& r : throughput_resources()) {
      s += ",";
      if (k.ncu)
        if (auto it = k.ncu->utilisation.find(r); it != k.ncu->utilisation.end()) s += number(100 * it->second);
    }
    s += "," + k.resource + "\n";
  }
  return s;
}

}  // namespace aispflow::roofline
