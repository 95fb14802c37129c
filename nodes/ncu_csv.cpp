#include "nodes/ncu_csv.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace aispflow::ncu {

namespace {

const char* kBytesTotal = "dram__bytes.sum";
const char* kBytesRead = "dram__bytes_read.sum";
const char* kBytesWrite = "dram__bytes_write.sum";
const char* kDuration = "gpu__time_duration.sum";

// Where one launch's metrics accumulate while reading.
struct Launch {
  std::string kernel;
  std::optional<double> total, read, write, seconds;
};

// A metric value in base units (bytes, seconds); a missing unit means the base unit already.
std::optional<double> scaled(const std::string& value, const std::string& unit, const std::string& shown,
                             const std::string& metric) {
  const auto v = parse_number(value);
  if (!v) return std::nullopt;
  if (trim(unit).empty()) return v;
  const auto s = unit_scale(unit);
  if (!s) throw std::runtime_error(shown + ": metric " + metric + ": unknown unit '" + unit + "'");
  return *v * *s;
}

void assign(Launch& l, const std::string& metric, std::optional<double> v) {
  if (!v) return;
  if (metric == kBytesTotal) l.total = v;
  else if (metric == kBytesRead) l.read = v;
  else if (metric == kBytesWrite) l.write = v;
  else if (metric == kDuration || metric == "Duration") l.seconds = v;
}

}  // namespace

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (trim(header[i]) == name) return int(i);
  return -1;
}

std::string cell(const std::vector<std::string>& row, int c) {
  return c >= 0 && c < int(row.size()) ? trim(row[c]) : std::string();
}

std::vector<std::vector<std::string>> parse_csv_of(const std::string& text, const std::string& shown) {
  try {
    return parse_csv(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(shown + ": " + e.what());
  }
}

std::size_t kernel_header_row(const std::vector<std::vector<std::string>>& rows, const std::string& shown) {
  std::size_t h = 0;
  while (h < rows.size() && column(rows[h], "Kernel Name") < 0) ++h;
  if (h == rows.size())
    throw std::runtime_error(shown + ": no \"Kernel Name\" column; expected an Nsight Compute CSV export "
                                     "(ncu --csv --page raw or --page details) that profiled at least one kernel");
  return h;
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      quoted = field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
      if (!(row.size() == 1 && row[0].empty())) rows.push_back(std::move(row));   // skip blank lines
      row.clear();
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw std::runtime_error("unterminated quoted field");
  if (field_started || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<double> parse_number(const std::string& text) {
  std::string s;
  for (char c : trim(text))
    if (c != ',') s += c;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> unit_scale(const std::string& unit) {
  static const std::map<std::string, double> scales = {
      {"byte", 1},       {"b", 1},          {"bytes", 1},       {"kbyte", 1e3},  {"kb", 1e3},
      {"mbyte", 1e6},    {"mb", 1e6},       {"gbyte", 1e9},     {"gb", 1e9},     {"tbyte", 1e12},
      {"tb", 1e12},      {"kibyte", 1024.0}, {"kib", 1024.0},   {"mibyte", 1048576.0}, {"mib", 1048576.0},
      {"gibyte", 1073741824.0}, {"gib", 1073741824.0},
      {"nsecond", 1e-9}, {"ns", 1e-9},      {"usecond", 1e-6},  {"us", 1e-6},    {"msecond", 1e-3},
      {"ms", 1e-3},      {"second", 1},     {"s", 1},
  };
  auto it = scales.find(lower(trim(unit)));
  if (it == scales.end()) return std::nullopt;
  return it->second;
}

std::vector<KernelTraffic> read_traffic(const std::string& text, const std::string& shown) {
  const auto rows = parse_csv_of(text, shown);
  const std::size_t h = kernel_header_row(rows, shown);
  const auto& header = rows[h];
  const int kernel_col = column(header, "Kernel Name");
  const int id_col = column(header, "ID");
  const int metric_name_col = column(header, "Metric Name");
  const int metric_value_col = column(header, "Metric Value");
  const int metric_unit_col = column(header, "Metric Unit");

  std::map<std::string, Launch> launches;   // by launch ID (or row number)
  std::vector<std::string> launch_order;
  auto launch_for = [&](const std::vector<std::string>& row, std::size_t row_index) -> Launch& {
    std::string id = id_col >= 0 && id_col < int(row.size()) ? trim(row[id_col]) : std::string();
    if (id.empty()) id = "row" + std::to_string(row_index);
    auto [it, fresh] = launches.try_emplace(id);
    if (fresh) {
      launch_order.push_back(id);
      it->second.kernel = trim(row[kernel_col]);
    }
    return it->second;
  };

  if (metric_name_col >= 0 && metric_value_col >= 0) {   // details page: one row per metric
    for (std::size_t r = h + 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      if (int(row.size()) <= std::max({kernel_col, metric_name_col, metric_value_col})) continue;
      const std::string metric = trim(row[metric_name_col]);
      const std::string unit = metric_unit_col >= 0 && metric_unit_col < int(row.size()) ? row[metric_unit_col] : "";
      assign(launch_for(row, r), metric, scaled(row[metric_value_col], unit, shown, metric));
    }
  } else {   // raw page: one column per metric, perhaps a units row first
    std::map<std::string, int> metric_cols;
    for (const char* m : {kBytesTotal, kBytesRead, kBytesWrite, kDuration})
      if (int c = column(header, m); c >= 0) metric_cols[m] = c;
    if (!metric_cols.count(kBytesTotal) && !(metric_cols.count(kBytesRead) && metric_cols.count(kBytesWrite)))
      throw std::runtime_error(shown + ": no DRAM bytes column; profile with --metrics dram__bytes.sum,"
                                       "gpu__time_duration.sum (or dram__bytes_read.sum + dram__bytes_write.sum)");
    std::size_t first = h + 1;
    std::vector<std::string> units(header.size());
    if (first < rows.size() && trim(rows[first][kernel_col]).empty()) {   // the units row has no kernel name
      units = rows[first];
      units.resize(header.size());
      ++first;
    }
    for (std::size_t r = first; r < rows.size(); ++r) {
      const auto& row = rows[r];
      if (int(row.size()) <= kernel_col || trim(row[kernel_col]).empty()) continue;
      Launch& l = launch_for(row, r);
      for (const auto& [metric, c] : metric_cols)
        if (c < int(row.size())) assign(l, metric, scaled(row[c], units[c], shown, metric));
    }
  }

  std::vector<KernelTraffic> out;
  std::map<std::string, std::size_t> index;
  for (const auto& id : launch_order) {
    const Launch& l = launches[id];
    std::optional<double> bytes = l.total;
    if (!bytes && l.read && l.write) bytes = *l.read + *l.write;
    if (!bytes) continue;   // a launch without DRAM bytes (other metrics only) adds nothing
    auto [it, fresh] = index.try_emplace(l.kernel, out.size());
    if (fresh) out.push_back(KernelTraffic{l.kernel, 0, 0, 0.0});
    KernelTraffic& k = out[it->second];
    k.launches += 1;
    k.dram_bytes += *bytes;
    if (l.seconds && k.seconds)
      *k.seconds += *l.seconds;
    else
      k.seconds.reset();   // one launch without a duration makes the kernel's total unknown
  }
  if (out.empty())
    throw std::runtime_error(shown + ": no launch with DRAM bytes (dram__bytes.sum, or dram__bytes_read.sum + "
                                     "dram__bytes_write.sum) found");
  return out;
}

std::vector<KernelFlops> read_flops(const std::string& text, const std::string& shown) {
  const auto rows = parse_csv_of(text, shown);
  if (rows.empty()) throw std::runtime_error(shown + ": empty; expected a header: kernel,flops[,provider,shape,dtype]");
  std::vector<std::string> header;
  for (const auto& c : rows[0]) header.push_back(lower(trim(c)));
  const int kernel_col = column(header, "kernel"), flops_col = column(header, "flops");
  if (kernel_col < 0 || flops_col < 0)
    throw std::runtime_error(shown + ":1: expected a header with columns kernel and flops (optional: provider, "
                                     "shape, dtype)");
  const int provider_col = column(header, "provider"), shape_col = column(header, "shape"),
            dtype_col = column(header, "dtype");
  std::vector<KernelFlops> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    KernelFlops k;
    k.kernel = cell(rows[r], kernel_col);
    const auto flops = parse_number(cell(rows[r], flops_col));
    if (k.kernel.empty()) continue;
    if (!flops || !(*flops > 0))
      throw std::runtime_error(shown + ":" + std::to_string(r + 1) + ": column flops: expected a positive number, got '" +
                               cell(rows[r], flops_col) + "'");
    k.flops = *flops;
    k.provider = cell(rows[r], provider_col);
    k.shape = cell(rows[r], shape_col);
    k.dtype = cell(rows[r], dtype_col);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace aispflow::ncu
