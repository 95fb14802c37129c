// Node type `compare`: puts providers side by side. Records come from its inputs (sweep artifacts) and from
// record files other tools wrote in the schema of docs/records.md. Per (shape, dtype): every provider's
// metric, the fastest provider and each provider's speedup over a baseline provider.
//
// A comparison with holes is misleading (a provider that skipped the hard shapes looks fast on average),
// so the node fails, naming every gap, when a provider lacks an ok record for a (shape, dtype) pair that
// another provider has; allow_missing: true compares what is there and lists the gaps instead.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/record_match.hpp"

namespace aispflow {
namespace {

using records::Better;

// ---- external record files -----------------------------------------------------------------------------

// Reads a JSON array of records, or {"records": [...]}, checking the fields compare relies on.
json read_record_file(const std::filesystem::path& path, const std::string& shown) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NodeError(shown + ": cannot read the record file (param 'files')");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw NodeError(shown + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  const json* list = &doc;
  if (doc.is_object() && doc.contains("records")) list = &doc["records"];
  if (!list->is_array())
    throw NodeError(shown + ": expected a JSON array of records or {\"records\": [...]} (docs/records.md)");

  json out = json::array();
  std::size_t i = 0;
  for (json rec : *list) {
    const std::string where = shown + ": record " + std::to_string(i++) + ": ";
    if (!rec.is_object()) throw NodeError(where + "expected an object, got " + rec.dump());
    for (const char* field : {"provider", "dtype", "status"})
      if (!rec.contains(field) || !rec[field].is_string())
        throw NodeError(where + "field '" + field + "': expected a string (docs/records.md)");
    const std::string status = rec["status"];
    if (status != "ok" && status != "failed" && status != "skipped")
      throw NodeError(where + "field 'status': expected ok, failed or skipped, got '" + status + "'");
    if (!rec.contains("shape") || !(rec["shape"].is_string() || (rec["shape"].is_object() && rec["shape"].contains("name"))))
      throw NodeError(where + "field 'shape': expected {\"name\": ..., \"m\", \"n\", \"k\"} or a shape name");
    if (!rec.contains("_from")) rec["_from"] = shown;
    out.push_back(std::move(rec));
  }
  return out;
}

// ---- the comparison ------------------------------------------------------------------------------------

struct Cell {
  std::optional<double> value;   // best ok value, when there is one
  std::string missing_reason;    // why there is none
};

struct PairKey {
  std::string shape, dtype;
  bool operator<(const PairKey& o) const { return std::tie(shape, dtype) < std::tie(o.shape, o.dtype); }
};

class CompareNode : public NodeType {
 public:
  std::string name() const override { return "compare"; }
  std::string doc() const override {
    return "Compares GEMM providers from sweep artifacts (and record files in the docs/records.md schema): per "
           "(shape, dtype) every provider's metric, the fastest provider and the speedup over a baseline provider. "
           "Writes compare.md and compare.json. Fails, naming them, when a provider lacks ok records for pairs "
           "others have (allow_missing: true to compare anyway).";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"baseline", ParamKind::any, json(), true,
         "provider the speedups are relative to; a list = the first of them that has records (one workflow "
         "for CPU and GPU: [cublaslt, cpu.openblas]); 'auto' = the first provider in the records' order"},
        {"files", ParamKind::path_list, json::array(), false,
         "extra record files (JSON array of records or {\"records\": [...]}, schema in docs/records.md)"},
        {"metric", ParamKind::string, "tflops", false,
         "record metric to compare: tflops, gbytes_per_s, time_ms.median, time_ms.min, ..."},
        {"allow_missing", ParamKind::boolean, false, false,
         "compare even when a provider lacks ok records others have (the gaps are listed, not fatal)"},
    };
  }
  std::string check_params(const json& params) const override {
    const std::string metric = params.value("metric", std::string("tflops"));
    const records::MetricInfo* info = records::find_metric(metric);
    if (!info || info->better == Better::equal)
      return "field 'metric': '" + metric + "' is not a numeric record metric; expected one of: tflops, "
             "gbytes_per_s, time_ms.median, time_ms.min, time_ms.max";
    if (params.contains("baseline") && !baseline_candidates(params["baseline"]))
      return "field 'baseline': expected a provider name, a list of provider names, or 'auto'";
    return {};
  }

  NodeOutput run(NodeContext& ctx) const override {
    if (std::string err = check_params(ctx.params); !err.empty()) throw NodeError(err);
    const std::string metric = ctx.params.value("metric", std::string("tflops"));
    const records::MetricInfo& info = *records::find_metric(metric);
    const bool allow_missing = ctx.params.value("allow_missing", false);
    const std::vector<std::string> candidates =
        baseline_candidates(ctx.params.value("baseline", json("auto"))).value_or(std::vector<std::string>{"auto"});

    json all = collect_records(ctx);
    json file_names = json::array();
    if (ctx.params.contains("files") && ctx.params["files"].is_array()) {
      for (const auto& f : ctx.params["files"]) {
        const std::string rel = f.get<std::string>();
        file_names.push_back(rel);
        for (auto& rec : read_record_file(ctx.resolve(rel), rel)) all.push_back(std::move(rec));
      }
    }
    if (all.empty())
      throw NodeError("no records to compare: connect gemm_sweep nodes as inputs or name record files in 'files'");

    // Providers and pairs in the order they first appear, so tables follow the sweep's own order.
    std::vector<std::string> providers;
    std::vector<PairKey> pairs;
    std::map<PairKey, std::map<std::string, Cell>> cells;
    std::map<PairKey, std::map<std::string, std::vector<std::string>>> not_ok;   // status: reason, per provider
    for (const json& rec : all) {
      const std::string p = records::provider_of(rec);
      const PairKey key{records::shape_name_of(rec), records::dtype_variant_of(rec)};
      if (std::find(providers.begin(), providers.end(), p) == providers.end()) providers.push_back(p);
      if (!cells.count(key)) pairs.push_back(key);
      Cell& c = cells[key][p];
      if (!records::is_ok(rec)) {
        const std::string status = records::status_of(rec).empty() ? "no status" : records::status_of(rec);
        not_ok[key][p].push_back(status + (rec.contains("reason") && rec["reason"].is_string()
                                               ? ": " + rec["reason"].get<std::string>()
                                               : std::string()));
        continue;
      }
      const auto v = records::number_at(rec, metric);
      if (!v || !(*v > 0)) {
        not_ok[key][p].push_back("ok record without a positive '" + metric + "'");
        continue;
      }
      // Several ok records for one provider and pair (two sweeps, a re-measurement): keep the best.
      const bool better = !c.value || (info.better == Better::higher ? *v > *c.value : *v < *c.value);
      if (better) c.value = *v;
    }

    std::string baseline;
    for (const auto& c : candidates) {
      if (c == "auto") baseline = providers.front();
      if (std::find(providers.begin(), providers.end(), c) != providers.end()) baseline = c;
      if (!baseline.empty()) break;
    }
    if (baseline.empty()) {
      std::string list, wanted;
      for (const auto& p : providers) list += (list.empty() ? "" : ", ") + p;
      for (const auto& c : candidates) wanted += (wanted.empty() ? "'" : ", '") + c + "'";
      throw NodeError("param 'baseline': provider " + wanted + (candidates.size() > 1 ? " have" : " has") +
                      " no records; providers present: " + list);
    }

    // Gaps: a provider without an ok value where some other provider has one.
    json gaps = json::array();
    for (const auto& key : pairs) {
      auto& row = cells[key];
      bool someone_has_it = false;
      for (const auto& p : providers) someone_has_it |= row[p].value.has_value();
      if (!someone_has_it) continue;
      for (const auto& p : providers) {
        if (row[p].value) continue;
        std::string reason = "no record";
        if (auto it = not_ok[key].find(p); it != not_ok[key].end() && !it->second.empty()) reason = it->second.front();
        row[p].missing_reason = reason;
        gaps.push_back({{"provider", p}, {"shape", key.shape}, {"dtype", key.dtype}, {"reason", reason}});
      }
    }
    if (!gaps.empty() && !allow_missing) throw NodeError(gap_message(gaps));

    json rows = json::array();
    json unmeasured = json::array();   // pairs no provider has a result for: not rows of the table
    std::map<std::string, int> wins;
    std::map<std::string, std::pair<double, int>> log_speedups;   // sum of log(speedup), count
    for (const auto& key : pairs) {
      auto& row = cells[key];
      if (std::none_of(providers.begin(), providers.end(), [&](const auto& p) { return row[p].value.has_value(); })) {
        json reasons = json::object();
        for (const auto& [p, why] : not_ok[key]) reasons[p] = why.empty() ? "no record" : why.front();
        unmeasured.push_back({{"shape", key.shape}, {"dtype", key.dtype}, {"reasons", reasons}});
        continue;
      }
      json values = json::object(), speedup = json::object(), missing = json::object();
      std::optional<std::string> fastest;
      std::optional<double> best;
      const std::optional<double> base = row[baseline].value;
      for (const auto& p : providers) {
        const auto v = row[p].value;
        values[p] = v ? json(*v) : json();
        if (!v) {
          std::string why = row[p].missing_reason;
          if (why.empty()) {
            auto it = not_ok[key].find(p);
            why = it != not_ok[key].end() && !it->second.empty() ? it->second.front() : "no record";
          }
          missing[p] = why;
        }
        std::optional<double> s;
        if (v && base) s = info.better == Better::higher ? *v / *base : *base / *v;
        speedup[p] = s ? json(*s) : json();
        if (s) {
          log_speedups[p].first += std::log(*s);
          log_speedups[p].second += 1;
        }
        if (v && (!best || (info.better == Better::higher ? *v > *best : *v < *best))) {
          best = v;
          fastest = p;
        }
      }
      if (fastest) ++wins[*fastest];
      json r = {{"shape", key.shape},   {"dtype", key.dtype}, {"fastest", fastest ? json(*fastest) : json()},
                {"values", values},     {"speedup", speedup}};
      if (!missing.empty()) r["missing"] = missing;
      rows.push_back(std::move(r));
    }

    if (rows.empty())
      throw NodeError("nothing to compare: no provider has an ok record for any of the " +
                      std::to_string(unmeasured.size()) + " (shape, dtype) pairs (e.g. " +
                      unmeasured[0]["shape"].get<std::string>() + "/" + unmeasured[0]["dtype"].get<std::string>() +
                      ": " + unmeasured[0]["reasons"].dump() + ")");

    json summary = json::array();
    for (const auto& p : providers) {
      const auto& [sum, n] = log_speedups[p];
      summary.push_back({{"provider", p},
                         {"wins", wins[p]},
                         {"pairs_with_baseline", n},
                         {"geomean_speedup", n > 0 ? json(std::exp(sum / n)) : json()}});
    }

    json input_names = json::array();
    for (const auto& in : ctx.inputs) input_names.push_back(in.node);

    NodeOutput out;
    const auto policies = records::rest_policies(all);
    out.data = {{"metric", metric},   {"unit", info.unit}, {"better", info.better == Better::higher ? "higher" : "lower"},
                {"baseline", baseline}, {"providers", providers}, {"rows", rows}, {"summary", summary},
                {"gaps", gaps},       {"unmeasured", unmeasured}, {"rest_policies", policies},
                {"sources", {{"inputs", input_names}, {"files", file_names}}}};
    if (const std::string warning = records::mixed_rest_warning(policies); !warning.empty()) {
      out.data["warnings"] = json::array({warning});
      ctx.info("warning: " + warning);
    }
    write_output_file(ctx, "compare.json", out.data.dump(2) + "\n");
    write_output_file(ctx, "compare.md", markdown(out.data));

    std::string line = std::to_string(rows.size()) + " (shape, dtype) pairs, " + std::to_string(providers.size()) +
                       " providers, baseline " + baseline;
    if (!unmeasured.empty()) line += " (" + std::to_string(unmeasured.size()) + " pairs measured by none)";
    for (const auto& s : summary)
      if (!s["geomean_speedup"].is_null() && s["provider"] != baseline)
        line += "; " + s["provider"].get<std::string>() + " " +
                records::format_number(s["geomean_speedup"].get<double>()) + "x";
    if (!gaps.empty()) line += "; " + std::to_string(gaps.size()) + " gap(s) allowed (allow_missing)";
    ctx.info(line);
    return out;
  }

 private:
  // The baseline param as a list of candidates: "x" -> [x]; [x, y] -> [x, y]; anything else -> nullopt.
  static std::optional<std::vector<std::string>> baseline_candidates(const json& v) {
    if (v.is_string() && !v.get<std::string>().empty()) return std::vector<std::string>{v.get<std::string>()};
    if (!v.is_array() || v.empty()) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.is_string() || e.get<std::string>().empty()) return std::nullopt;
      out.push_back(e.get<std::string>());
    }
    return out;
  }

  static std::string gap_message(const json& gaps) {
    // Grouped per provider, so the message reads as "who lacks what and why".
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::string>> per;
    for (const auto& g : gaps) {
      const std::string p = g["provider"];
      if (!per.count(p)) order.push_back(p);
      per[p].push_back(g["shape"].get<std::string>() + "/" + g["dtype"].get<std::string>() + " (" +
                       g["reason"].get<std::string>() + ")");
    }
    std::string msg = "providers lack ok records for (shape, dtype) pairs that other providers have:";
    for (const auto& p : order) {
      const auto& list = per[p];
      msg += "\n  " + p + ": " + std::to_string(list.size()) + " missing: ";
      for (std::size_t i = 0; i < list.size() && i < 6; ++i) msg += (i ? ", " : "") + list[i];
      if (list.size() > 6) msg += ", ... (" + std::to_string(list.size() - 6) + " more)";
    }
    msg += "\n(skipped or failed records are not results; set allow_missing: true to compare the pairs that exist)";
    return msg;
  }

  static std::string markdown(const json& d) {
    std::ostringstream md;
    const std::string metric = d["metric"], unit = d["unit"], baseline = d["baseline"];
    const std::vector<std::string> providers = d["providers"];
    md << "# Provider comparison: " << metric << (unit.empty() ? "" : " (" + unit + ")") << ", "
       << d["better"].get<std::string>() << " is better\n\n";
    md << "Speedup is relative to **" << baseline << "** (>1 = better than the baseline). "
       << "`—` = no ok record (reason below the table).\n\n";
    if (d.contains("rest_policies") && !d["rest_policies"].empty()) {
      std::string list;
      for (const auto& p : d["rest_policies"]) list += (list.empty() ? "" : ", ") + p.get<std::string>();
      md << "GPU rest policy of the records (timing.rest): " << list << ".\n\n";
    }
    if (d.contains("warnings"))
      for (const auto& w : d["warnings"]) md << "**Warning:** " << w.get<std::string>() << "\n\n";
    md << "| shape | dtype | fastest |";
    for (const auto& p : providers) md << " " << p << " |";
    for (const auto& p : providers)
      if (p != baseline) md << " " << p << " speedup |";
    md << "\n|---|---|---|";
    for (std::size_t i = 0; i < providers.size(); ++i) md << "---:|";
    for (const auto& p : providers)
      if (p != baseline) md << "---:|";
    md << "\n";
    for (const auto& r : d["rows"]) {
      md << "| " << r["shape"].get<std::string>() << " | " << r["dtype"].get<std::string>() << " | "
         << (r["fastest"].is_null() ? std::string("—") : "**" + r["fastest"].get<std::string>() + "**") << " |";
      for (const auto& p : providers) {
        const json& v = r["values"][p];
        md << " " << (v.is_null() ? "—" : records::format_number(v.get<double>())) << " |";
      }
      for (const auto& p : providers) {
        if (p == baseline) continue;
        const json& s = r["speedup"][p];
        md << " " << (s.is_null() ? "—" : records::format_number(s.get<double>()) + "x") << " |";
      }
      md << "\n";
    }
    md << "\n## Summary\n\n| provider | fastest on | geomean speedup vs " << baseline << " | pairs |\n|---|---:|---:|---:|\n";
    for (const auto& s : d["summary"])
      md << "| " << s["provider"].get<std::string>() << " | " << s["wins"] << " | "
         << (s["geomean_speedup"].is_null() ? "—" : records::format_number(s["geomean_speedup"].get<double>()) + "x")
         << " | " << s["pairs_with_baseline"] << " |\n";
    if (!d["unmeasured"].empty()) {
      md << "\n## Not measured by any provider\n\n";
      for (const auto& u : d["unmeasured"]) {
        md << "- " << u["shape"].get<std::string>() << "/" << u["dtype"].get<std::string>() << ":";
        for (auto it = u["reasons"].begin(); it != u["reasons"].end(); ++it)
          md << " " << it.key() << " " << it.value().get<std::string>() << ";";
        md << "\n";
      }
    }
    bool any_missing = false;
    for (const auto& r : d["rows"]) any_missing |= r.contains("missing");
    if (any_missing) {
      md << "\n## Missing results\n\n";
      for (const auto& r : d["rows"])
        if (r.contains("missing"))
          for (auto it = r["missing"].begin(); it != r["missing"].end(); ++it)
            md << "- " << it.key() << " " << r["shape"].get<std::string>() << "/" << r["dtype"].get<std::string>()
               << ": " << it.value().get<std::string>() << "\n";
    }
    return md.str();
  }
};

}  // namespace

std::unique_ptr<NodeType> make_compare_node() { return std::make_unique<CompareNode>(); }

}  // namespace aispflow
