#include "reports/run_diff.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "nodes/record_match.hpp"
#include "pipeline/build_id.hpp"
#include "pipeline/errors.hpp"
#include "pipeline/report.hpp"
#include "reports/run_data.hpp"

namespace aispflow::reports {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string dims_of(const json& rec) {
  if (!rec.contains("shape") || !rec["shape"].is_object()) return "";
  const json& s = rec["shape"];
  std::string out;
  for (const char* d : {"m", "n", "k"}) {
    if (!s.contains(d) || !s[d].is_number_integer()) return "";
    out += (out.empty() ? "" : "x") + std::to_string(s[d].get<long long>());
  }
  if (s.contains("batch") && s["batch"].is_number_integer() && s["batch"].get<long long>() != 1)
    out += " batch " + std::to_string(s["batch"].get<long long>());
  return out;
}

// Who a record is, whatever its numbers: the pairing key of two runs (without the repeat counter).
std::string identity_of(const json& rec) {
  std::string id = records::provider_of(rec) + " " + records::shape_name_of(rec);
  if (const std::string dims = dims_of(rec); !dims.empty()) id += " " + dims;
  return id + " " + records::dtype_variant_of(rec);
}

// Records keyed by identity plus "#n" for the n-th repeat of one identity in the run (n >= 2), in run order.
std::vector<std::pair<std::string, const json*>> keyed(const std::vector<RecordRef>& refs) {
  std::map<std::string, int> seen;
  std::vector<std::pair<std::string, const json*>> out;
  for (const auto& r : refs) {
    std::string key = identity_of(r.record);
    if (int n = ++seen[key]; n > 1) key += " #" + std::to_string(n);
    out.emplace_back(std::move(key), &r.record);
  }
  return out;
}

std::string reason_of(const json* rec) {
  return rec && rec->contains("reason") && (*rec)["reason"].is_string() ? (*rec)["reason"].get<std::string>() : "";
}

int verdict_rank(const std::string& v) {
  static const std::vector<std::string> order = {"regression", "missing", "new", "improvement", "fixed",
                                                 "failed", "not compared", "same"};
  return int(std::find(order.begin(), order.end(), v) - order.begin());
}

DiffRow compare_pair(const std::string& key, const json* a, const json* b, const records::MetricInfo& metric,
                     double tolerance) {
  const json& any = a ? *a : *b;
  DiffRow row;
  row.identity = key;
  row.provider = records::provider_of(any);
  row.shape = records::shape_name_of(any);
  row.dtype = records::dtype_variant_of(any);
  row.a_status = a ? records::status_of(*a) : "";
  row.b_status = b ? records::status_of(*b) : "";
  if (a && row.a_status == "ok") row.a = records::number_at(*a, metric.name);
  if (b && row.b_status == "ok") row.b = records::number_at(*b, metric.name);
  if (!b) {
    row.verdict = "missing";
    row.note = "not in B";
    return row;
  }
  if (!a) {
    row.verdict = "new";
    row.note = "not in A";
    return row;
  }
  if (row.a_status == "ok" && row.b_status == "failed") {
    row.verdict = "regression";
    row.note = "failed in B: " + reason_of(b);
    return row;
  }
  if (row.a_status == "ok" && row.b_status != "ok") {
    row.verdict = "missing";
    row.note = (row.b_status.empty() ? "no status" : row.b_status) + " in B: " + reason_of(b);
    return row;
  }
  if (row.a_status != "ok" && row.b_status == "ok") {
    row.verdict = "fixed";
    row.note = (row.a_status.empty() ? "no status" : row.a_status) + " in A: " + reason_of(a);
    return row;
  }
  if (row.a_status != "ok") {
    row.verdict = row.b_status == "failed" ? "failed" : "not compared";
    row.note = row.b_status + " in B: " + reason_of(b);
    return row;
  }
  if (!row.a || !row.b || !(*row.a > 0) || !(*row.b > 0)) {
    row.verdict = "not compared";
    row.note = "no positive '" + metric.name + "' in " + (!row.a || !(*row.a > 0) ? "A" : "B");
    return row;
  }
  row.speedup = metric.better == records::Better::lower ? *row.a / *row.b : *row.b / *row.a;
  row.verdict = *row.speedup < 1 - tolerance ? "regression" : *row.speedup > 1 + tolerance ? "improvement" : "same";
  const std::string ka = a->value("kernel", std::string()), kb = b->value("kernel", std::string());
  if (!ka.empty() && !kb.empty() && ka != kb) row.note = "kernel changed: " + ka + " -> " + kb;
  return row;
}

json run_side(const std::string& dir, const json& run) {
  json side = run;
  side["dir"] = dir;
  return side;
}

std::string number_text(const std::optional<double>& v) { return v ? records::format_number(*v) : "-"; }

std::string markdown_cell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

}  // namespace

std::size_t RunDiff::count(const std::string& verdict) const {
  return std::size_t(std::count_if(rows.begin(), rows.end(), [&](const DiffRow& r) { return r.verdict == verdict; }));
}

int RunDiff::exit_code() const { return count("regression") > 0 ? kExitExpectationsNotMet : kExitOk; }

RunDiff diff_runs(const fs::path& a_given, const fs::path& b_given, const DiffOptions& options) {
  const records::MetricInfo* metric = records::find_metric(options.metric);
  if (!metric || metric->better == records::Better::equal)
    throw InputError("--metric: '" + options.metric + "' is not a numeric metric (known: " +
                     records::known_metric_names() + ")");
  if (!(options.tolerance >= 0 && options.tolerance < 1))
    throw InputError("--tolerance: expected a percentage from 0 to below 100");
  const fs::path a_dir = run_dir_of(a_given), b_dir = run_dir_of(b_given);
  RunDiff diff;
  diff.options = options;
  diff.unit = metric->unit;
  diff.a_dir = a_dir.string();
  diff.b_dir = b_dir.string();
  diff.a_run = read_run_json(a_dir);
  diff.b_run = read_run_json(b_dir);
  const auto a_refs = run_records(a_dir, diff.a_run), b_refs = run_records(b_dir, diff.b_run);
  diff.a_run.erase("nodes");
  diff.b_run.erase("nodes");
  if (a_refs.empty()) throw InputError(a_dir.string() + ": the run has no result records (no node wrote \"records\")");
  if (b_refs.empty()) throw InputError(b_dir.string() + ": the run has no result records (no node wrote \"records\")");

  const auto a_keyed = keyed(a_refs), b_keyed = keyed(b_refs);
  std::map<std::string, const json*> b_by_key(b_keyed.begin(), b_keyed.end());
  std::map<std::string, const json*> a_by_key(a_keyed.begin(), a_keyed.end());
  std::size_t paired = 0;
  for (const auto& [key, a] : a_keyed) {
    auto b = b_by_key.find(key);
    paired += b != b_by_key.end();
    diff.rows.push_back(compare_pair(key, a, b == b_by_key.end() ? nullptr : b->second, *metric, options.tolerance));
  }
  for (const auto& [key, b] : b_keyed)
    if (!a_by_key.count(key)) diff.rows.push_back(compare_pair(key, nullptr, b, *metric, options.tolerance));
  if (paired == 0)
    throw InputError("no record of " + a_dir.string() + " pairs with one of " + b_dir.string() +
                     " (records pair on provider, shape, dtype, layout and epilogue)");
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    const int rx = verdict_rank(x.verdict), ry = verdict_rank(y.verdict);
    if (rx != ry) return rx < ry;
    return x.speedup.value_or(1.0) < y.speedup.value_or(1.0);   // worst first within a verdict
  });
  return diff;
}

std::string diff_markdown(const RunDiff& d, const bool all) {
  const records::MetricInfo* metric = records::find_metric(d.options.metric);
  std::string out = "# aispflow: " + d.b_dir + " (B) against " + d.a_dir + " (A)\n\n";
  out += "Metric `" + d.options.metric + "` (" + d.unit + ", " +
         (metric && metric->better == records::Better::lower ? "lower" : "higher") + " is better); speedup = " +
         (metric && metric->better == records::Better::lower ? "A / B" : "B / A") + "; tolerance " +
         records::format_number(d.options.tolerance * 100) + " %.\n\n";
  const std::size_t compared = d.count("regression") + d.count("improvement") + d.count("same");
  out += "**" + std::to_string(d.count("regression")) + " regression(s)**, " + std::to_string(d.count("improvement")) +
         " improvement(s), " + std::to_string(d.count("same")) + " within tolerance (" + std::to_string(compared) +
         " compared); " + std::to_string(d.count("missing")) + " missing in B, " + std::to_string(d.count("new")) +
         " new in B, " + std::to_string(d.count("fixed")) + " fixed, " + std::to_string(d.count("failed")) +
         " failed in both, " + std::to_string(d.count("not compared")) + " not compared.\n\n";
  out += "| verdict | provider | shape | dtype | A | B | speedup | note |\n| --- | --- | --- | --- | ---: | ---: | ---: | --- |\n";
  for (const auto& r : d.rows) {
    if (!all && r.verdict == "same") continue;
    out += "| " + r.verdict + " | " + markdown_cell(r.provider) + " | " + markdown_cell(r.shape) + " | " +
           markdown_cell(r.dtype) + " | " + (r.a ? number_text(r.a) : r.a_status.empty() ? "-" : r.a_status) + " | " +
           (r.b ? number_text(r.b) : r.b_status.empty() ? "-" : r.b_status) + " | " +
           (r.speedup ? records::format_number(*r.speedup) + "x" : "-") + " | " + markdown_cell(r.note) + " |\n";
  }
  return out;
}

json diff_document(const RunDiff& d) {
  json rows = json::array();
  for (const auto& r : d.rows) {
    json row = {{"verdict", r.verdict}, {"identity", r.identity}, {"provider", r.provider}, {"shape", r.shape},
                {"dtype", r.dtype},     {"a_status", r.a_status}, {"b_status", r.b_status}, {"note", r.note}};
    if (r.a) row["a"] = *r.a;
    if (r.b) row["b"] = *r.b;
    if (r.speedup) row["speedup"] = *r.speedup;
    rows.push_back(row);
  }
  json summary = json::object();
  for (const char* v : {"regression", "improvement", "same", "missing", "new", "fixed", "failed", "not compared"})
    summary[v] = d.count(v);
  const records::MetricInfo* metric = records::find_metric(d.options.metric);
  return {{"kind", "diff"},
          {"generator", std::string("aispflow ") + AISPFLOW_VERSION + "+" + build_id()},
          {"generated", iso8601_utc(std::chrono::system_clock::now())},
          {"a", run_side(d.a_dir, d.a_run)},
          {"b", run_side(d.b_dir, d.b_run)},
          {"metric", d.options.metric},
          {"unit", d.unit},
          {"better", metric && metric->better == records::Better::lower ? "lower" : "higher"},
          {"tolerance_pct", d.options.tolerance * 100},
          {"exit_code", d.exit_code()},
          {"summary", summary},
          {"rows", rows}};
}

}  // namespace aispflow::reports
