// Node type `expect`: checks result records against thresholds kept in a YAML file (expectations/*.yaml)
// and turns the outcome into the run's exit code: any regressed or missing expectation -> exit 3.
//
// Expectations file:
//   expectations:
//     - match: {provider: cpu.blocked, shape: "decode_*", dtype: fp32}   # globs; a missing key matches all
//       metric: tflops                  # see records::known_metrics()
//       min: 0.5                        # hard bounds (either or both)
//       max: 100
//       baseline: 1.8                   # and/or a baseline with a tolerance band
//       tolerance_pct: 10
//     - match: {provider: "*"}
//       metric: status                  # status / verified / converged compare with `equals`
//
// Each expectation is checked against every matching record: an ok record passes, regresses (outside a
// bound, or worse than baseline by more than the tolerance) or improves (better than baseline by more
// than the tolerance); a failed record regresses with its reason; skipped records are not results and
// are left out; an expectation no ok or failed record matches is missing.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/record_match.hpp"
#include "pipeline/registry.hpp"

namespace aispflow {
namespace {

using records::Better;

constexpr double kDefaultTolerancePct = 5.0;
const std::vector<std::string> kEntryKeys = {"match", "metric", "min", "max", "baseline", "tolerance_pct", "equals",
                                             "note"};
const std::vector<std::string> kMatchKeys = {"provider", "shape", "dtype"};

struct Expectation {
  int index = 0;                          // 1-based position in the file
  SourceLoc where;                        // the entry's place, for messages and the results table
  std::map<std::string, std::string> match;   // field -> glob
  std::string metric;
  Better better = Better::higher;
  std::optional<double> min, max, baseline;
  std::optional<double> tolerance_pct;
  json equals;                            // for Better::equal metrics
  std::string note;
  YAML::Node source;                      // the entry as written, kept when the file is rewritten

  std::string describe() const {          // "tflops of cpu.blocked decode_* fp32"
    std::string who;
    for (const auto& key : kMatchKeys) {
      auto it = match.find(key);
      who += " " + (it == match.end() ? std::string("*") : it->second);
    }
    return metric + " of" + who;
  }
  std::string bound_text() const {
    std::vector<std::string> parts;
    if (better == Better::equal) parts.push_back("== " + (equals.is_string() ? equals.get<std::string>() : equals.dump()));
    if (min && max)
      parts.push_back("in [" + records::format_number(*min) + ", " + records::format_number(*max) + "]");
    else if (min)
      parts.push_back(">= " + records::format_number(*min));
    else if (max)
      parts.push_back("<= " + records::format_number(*max));
    if (baseline)
      parts.push_back("baseline " + records::format_number(*baseline) + " ±" +
                      records::format_number(tolerance_pct.value_or(kDefaultTolerancePct)) + "%");
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
    return s;
  }
};

// ---- reading the expectations file -------------------------------------------------------------------

class FileReader {
 public:
  explicit FileReader(std::string display_name) : file_(std::move(display_name)) {}

  SourceLoc loc(const YAML::Node& node) const {
    const YAML::Mark m = node.Mark();
    return SourceLoc{file_, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& what, const std::string& field,
                         const std::string& message) const {
    std::string s = loc(node).str() + ": ";
    if (!what.empty()) s += what + ": ";
    if (!field.empty()) s += "field '" + field + "': ";
    throw NodeError(s + message);
  }

  double number(const YAML::Node& node, const std::string& what, const std::string& field) const {
    if (node.IsScalar()) {
      try {
        const double v = node.as<double>();
        if (std::isfinite(v)) return v;
      } catch (const YAML::Exception&) {
      }
    }
    fail(node, what, field, "expected a number, got " + shown(node));
  }

  std::string text(const YAML::Node& node, const std::string& what, const std::string& field) const {
    if (!node.IsScalar()) fail(node, what, field, "expected a string, got " + shown(node));
    return node.Scalar();
  }

  static std::string shown(const YAML::Node& node) {
    if (node.IsScalar()) return "'" + node.Scalar() + "'";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a map";
    return "nothing";
  }

  std::vector<Expectation> read(const std::string& content) const {
    YAML::Node root;
    try {
      root = YAML::Load(content);
    } catch (const YAML::ParserException& e) {
      throw NodeError(SourceLoc{file_, e.mark.line + 1, e.mark.column + 1}.str() + ": YAML syntax error: " + e.msg);
    }
    if (!root.IsMap() || !root["expectations"])
      fail(root, "", "expectations",
           "expected a map with key 'expectations: [ {match: {...}, metric: ..., min/max/baseline: ...}, ... ]'");
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key != "expectations" && key != "description")
        fail(kv.first, "", key, "unknown top-level key; expected 'expectations' (and optionally 'description')");
    }
    const YAML::Node list = root["expectations"];
    if (!list.IsSequence()) fail(list, "", "expectations", "expected a list of expectations, got " + shown(list));

    std::vector<Expectation> out;
    int index = 0;
    for (const auto& entry : list) out.push_back(read_entry(entry, ++index));
    return out;
  }

 private:
  Expectation read_entry(const YAML::Node& entry, int index) const {
    const std::string what = "expectation " + std::to_string(index);
    if (!entry.IsMap()) fail(entry, what, "", "expected a map {match, metric, min/max/baseline}, got " + shown(entry));
    Expectation e;
    e.index = index;
    e.where = loc(entry);
    e.source = entry;
    for (const auto& kv : entry) {
      const std::string key = kv.first.Scalar();
      if (std::find(kEntryKeys.begin(), kEntryKeys.end(), key) == kEntryKeys.end()) {
        const std::string hint = closest_match(key, kEntryKeys);
        fail(kv.first, what, key,
             "unknown field" + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)") +
                 "; expected one of: match, metric, min, max, baseline, tolerance_pct, equals, note");
      }
    }

    if (const YAML::Node match = entry["match"]) {
      if (!match.IsMap()) fail(match, what, "match", "expected a map {provider, shape, dtype}, got " + shown(match));
      for (const auto& kv : match) {
        const std::string key = kv.first.Scalar();
        if (std::find(kMatchKeys.begin(), kMatchKeys.end(), key) == kMatchKeys.end())
          fail(kv.first, what, "match." + key, "unknown field; expected provider, shape or dtype (glob patterns)");
        e.match[key] = text(kv.second, what, "match." + key);
      }
    }

    const YAML::Node metric = entry["metric"];
    if (!metric) fail(entry, what, "metric", "missing; expected one of: " + records::known_metric_names());
    e.metric = text(metric, what, "metric");
    const records::MetricInfo* info = records::find_metric(e.metric);
    if (!info)
      fail(metric, what, "metric", "unknown metric '" + e.metric + "'; expected one of: " + records::known_metric_names());
    e.better = info->better;

    if (entry["note"]) e.note = text(entry["note"], what, "note");

    if (e.better == Better::equal) {
      for (const char* numeric : {"min", "max", "baseline", "tolerance_pct"})
        if (entry[numeric])
          fail(entry[numeric], what, numeric, "metric '" + e.metric + "' is compared with 'equals', not with bounds");
      if (const YAML::Node eq = entry["equals"]) {
        const std::string v = text(eq, what, "equals");
        if (e.metric == "status") {
          if (v != "ok" && v != "failed" && v != "skipped")
            fail(eq, what, "equals", "expected ok, failed or skipped, got '" + v + "'");
          e.equals = v;
        } else {
          if (v != "true" && v != "false") fail(eq, what, "equals", "expected true or false, got '" + v + "'");
          e.equals = (v == "true");
        }
      } else {
        e.equals = e.metric == "status" ? json("ok") : json(true);
      }
      return e;
    }

    if (entry["equals"])
      fail(entry["equals"], what, "equals", "only status, verified and converged take 'equals'; use min/max/baseline");
    if (entry["min"]) e.min = number(entry["min"], what, "min");
    if (entry["max"]) e.max = number(entry["max"], what, "max");
    if (entry["baseline"]) e.baseline = number(entry["baseline"], what, "baseline");
    if (entry["tolerance_pct"]) {
      e.tolerance_pct = number(entry["tolerance_pct"], what, "tolerance_pct");
      if (*e.tolerance_pct < 0) fail(entry["tolerance_pct"], what, "tolerance_pct", "must be >= 0");
      if (!e.baseline) fail(entry["tolerance_pct"], what, "tolerance_pct", "needs a 'baseline' to be a tolerance of");
    }
    if (!e.min && !e.max && !e.baseline)
      fail(entry, what, "", "metric '" + e.metric + "' needs at least one of: min, max, baseline");
    if (e.min && e.max && *e.min > *e.max)
      fail(entry["min"], what, "min", "min " + records::format_number(*e.min) + " is above max " +
                                          records::format_number(*e.max));
    return e;
  }

  std::string file_;
};

// ---- checking ------------------------------------------------------------------------------------------

bool matches(const Expectation& e, const json& record) {
  for (const auto& [field, pattern] : e.match) {
    const std::string value = field == "provider" ? records::provider_of(record)
                              : field == "shape"  ? records::shape_name_of(record)
                                                  : records::dtype_of(record);
    if (!records::glob_match(pattern, value)) return false;
  }
  return true;
}

struct Judgement {
  std::string status;   // pass | regressed | improved
  std::string reason;
};

Judgement judge_number(const Expectation& e, double v) {
  std::vector<std::string> broken;
  if (e.min && v < *e.min) broken.push_back("below min " + records::format_number(*e.min));
  if (e.max && v > *e.max) broken.push_back("above max " + records::format_number(*e.max));
  std::string change;
  double good_pct = 0;   // how much better than baseline, in percent (negative: worse)
  if (e.baseline) {
    const double b = *e.baseline;
    const double pct = b != 0 ? (v - b) / std::fabs(b) * 100.0 : (v == 0 ? 0.0 : std::copysign(INFINITY, v));
    good_pct = e.better == Better::higher ? pct : -pct;
    change = (pct >= 0 ? "+" : "") + records::format_number(pct) + "% vs baseline " + records::format_number(b);
  }
  const double tol = e.tolerance_pct.value_or(kDefaultTolerancePct);
  if (e.baseline && good_pct < -tol) broken.push_back(change + " (worse than the " + records::format_number(tol) + "% tolerance)");
  if (!broken.empty()) {
    std::string r;
    for (const auto& b : broken) r += (r.empty() ? "" : "; ") + b;
    return {"regressed", r};
  }
  if (e.baseline && good_pct > tol)
    return {"improved", change + " (better than the " + records::format_number(tol) + "% tolerance: consider update)"};
  return {"pass", change};
}

json row(const Expectation& e, const json* record, const json& value, const std::string& status,
         const std::string& reason) {
  json r = {{"expectation", e.index},
            {"line", e.where.line},
            {"metric", e.metric},
            {"match", e.match.empty() ? json::object() : json(e.match)},
            {"record", record ? records::identity(*record) : json()},
            {"value", value},
            {"bound", e.bound_text()},
            {"status", status}};
  if (!reason.empty()) r["reason"] = reason;
  if (!e.note.empty()) r["note"] = e.note;
  return r;
}

// Every row for one expectation: one per matching ok or failed record, or one "missing" row.
std::vector<json> check(const Expectation& e, const json& all_records) {
  std::vector<json> rows;
  std::vector<std::string> skipped;
  for (const json& rec : all_records) {
    if (!matches(e, rec)) continue;
    const std::string status = records::status_of(rec);
    if (status == "skipped") {
      skipped.push_back(records::identity_text(rec) + ": " + rec.value("reason", std::string("no reason given")));
      continue;
    }
    if (status != "ok") {
      rows.push_back(row(e, &rec, json(status), "regressed",
                         "record " + (status.empty() ? std::string("has no status") : status) +
                             (rec.contains("reason") ? ": " + rec["reason"].get<std::string>() : std::string())));
      continue;
    }
    const auto value = records::value_at(rec, e.metric);
    if (e.better == Better::equal) {
      if (value && *value == e.equals)
        rows.push_back(row(e, &rec, *value, "pass", ""));
      else
        rows.push_back(row(e, &rec, value.value_or(json()), "regressed",
                           value ? "is " + value->dump() : "record has no '" + e.metric + "'"));
      continue;
    }
    if (!value || !value->is_number()) {
      rows.push_back(row(e, &rec, json(), "regressed", "ok record has no numeric '" + e.metric + "'"));
      continue;
    }
    const Judgement v = judge_number(e, value->get<double>());
    rows.push_back(row(e, &rec, *value, v.status, v.reason));
  }
  if (rows.empty()) {
    std::string reason = "no ok record matches";
    if (!skipped.empty()) {
      reason += "; " + std::to_string(skipped.size()) + " matching record(s) skipped (" + skipped.front() +
                (skipped.size() > 1 ? ", ..." : "") + ")";
    }
    rows.push_back(row(e, nullptr, json(), "missing", reason));
  }
  return rows;
}

// ---- outputs -------------------------------------------------------------------------------------------

std::string cell(const json& v) {
  if (v.is_null()) return "—";
  if (v.is_number()) return records::format_number(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string markdown(const std::string& file, const std::vector<json>& rows, const json& summary, bool not_met,
                     const std::string& update_note) {
  std::ostringstream md;
  md << "# Expectations: " << file << "\n\n";
  md << "pass " << summary["pass"] << ", improved " << summary["improved"] << ", regressed " << summary["regressed"]
     << ", missing " << summary["missing"] << " — "
     << (not_met ? "**expectations not met** (the run exits 3)" : "**ok**") << "\n\n";
  if (!update_note.empty()) md << update_note << "\n\n";
  md << "| # | line | status | provider | shape | dtype | metric | value | bound | reason |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|\n";
  // Problems first, so a reader of a long table sees what failed without scrolling.
  std::vector<const json*> order;
  for (const auto& r : rows) order.push_back(&r);
  auto rank = [](const json* r) {
    const std::string s = (*r)["status"];
    return s == "regressed" ? 0 : s == "missing" ? 1 : s == "improved" ? 2 : 3;
  };
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return rank(a) < rank(b); });
  auto esc = [](std::string s) {   // a '|' would split a markdown cell
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  for (const json* r : order) {
    const json& rec = (*r)["record"];
    auto pick = [&](const char* f) {
      if (!rec.is_null()) return rec[f].get<std::string>();
      auto it = (*r)["match"].find(f);
      return it == (*r)["match"].end() ? std::string("*") : it->get<std::string>();
    };
    md << "| " << (*r)["expectation"] << " | " << (*r)["line"] << " | " << (*r)["status"].get<std::string>()
       << " | " << esc(pick("provider")) << " | " << esc(pick("shape")) << " | " << esc(pick("dtype")) << " | "
       << (*r)["metric"].get<std::string>() << " | " << esc(cell((*r)["value"])) << " | "
       << esc((*r)["bound"].get<std::string>()) << " | " << esc(r->value("reason", std::string())) << " |\n";
  }
  return md.str();
}

// Rewrites the expectations file from the current results: numeric expectations get baseline = the current
// value (one entry per record when a pattern matched several), tolerance and bounds are kept; the rest is
// kept as written. Atomic: written to a temporary file beside it, then renamed over it.
std::string rewrite_file(const std::filesystem::path& path, const std::string& content,
                         const std::vector<Expectation>& expectations, const std::vector<std::vector<json>>& rows,
                         int& baselines_set, int& kept) {
  YAML::Node original = YAML::Load(content);
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::Comment("rewritten by `aispflow` expect (update: true): baselines are the current results") << YAML::Newline;
  out << YAML::BeginMap;
  if (original["description"]) out << YAML::Key << "description" << YAML::Value << original["description"];
  out << YAML::Key << "expectations" << YAML::Value << YAML::BeginSeq;

  auto emit_entry = [&](const Expectation& e, const std::map<std::string, std::string>& match,
                        std::optional<double> baseline) {
    out << YAML::BeginMap;
    if (!match.empty()) {
      out << YAML::Key << "match" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& key : kMatchKeys)
        if (auto it = match.find(key); it != match.end()) out << YAML::Key << key << YAML::Value << it->second;
      out << YAML::EndMap;
    }
    out << YAML::Key << "metric" << YAML::Value << e.metric;
    if (e.min) out << YAML::Key << "min" << YAML::Value << *e.min;
    if (e.max) out << YAML::Key << "max" << YAML::Value << *e.max;
    if (baseline) {
      out << YAML::Key << "baseline" << YAML::Value << *baseline;
      out << YAML::Key << "tolerance_pct" << YAML::Value << e.tolerance_pct.value_or(kDefaultTolerancePct);
    }
    if (!e.note.empty()) out << YAML::Key << "note" << YAML::Value << e.note;
    out << YAML::EndMap;
  };

  for (std::size_t i = 0; i < expectations.size(); ++i) {
    const Expectation& e = expectations[i];
    std::vector<const json*> measured;   // ok records with a numeric value
    if (e.better != Better::equal)
      for (const json& r : rows[i])
        if (!r["record"].is_null() && r["value"].is_number() && r["status"] != "regressed") measured.push_back(&r);
    // A regressed value that is a number still becomes the new baseline: that is what "update" asks for.
    if (e.better != Better::equal && measured.empty())
      for (const json& r : rows[i])
        if (!r["record"].is_null() && r["value"].is_number()) measured.push_back(&r);
    if (measured.empty()) {   // status-like metric, or nothing measured: keep as written
      out << e.source;
      ++kept;
      continue;
    }
    if (measured.size() == 1) {
      emit_entry(e, e.match, (*measured.front())["value"].get<double>());
      ++baselines_set;
      continue;
    }
    for (const json* r : measured) {   // the pattern matched several records: pin each one
      std::map<std::string, std::string> exact;
      for (const auto& key : kMatchKeys) exact[key] = (*r)["record"][key].get<std::string>();
      emit_entry(e, exact, (*r)["value"].get<double>());
      ++baselines_set;
    }
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) throw NodeError("cannot rewrite " + path.string() + ": " + out.GetLastError());

  std::string text = std::string(out.c_str()) + "\n";
  const std::filesystem::path tmp = path.string() + ".tmp-aispflow";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) throw NodeError("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw NodeError("cannot replace " + path.string() + ": " + ec.message());
  }
  return text;
}

std::string display_path(const std::filesystem::path& p) {
  std::error_code ec;
  const auto rel = std::filesystem::proximate(p, ec);
  if (ec || rel.empty() || rel.string().rfind("../..", 0) == 0) return p.lexically_normal().string();
  return rel.string();
}

// ---- the node type -------------------------------------------------------------------------------------

class ExpectNode : public NodeType {
 public:
  std::string name() const override { return "expect"; }
  std::string doc() const override {
    return "Checks result records from its inputs against thresholds in a YAML file (match on provider/shape/dtype "
           "globs, metric, min/max or baseline ± tolerance_pct). Each is pass, regressed, improved or missing; any "
           "regressed or missing makes the run exit 3. Writes expect.md. update: true rewrites the file's baselines "
           "from the current results.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"file", ParamKind::path, json(), true, "expectations YAML file, relative to the workflow"},
        {"update", ParamKind::boolean, false, false,
         "rewrite the file from the current results (baseline = current value, tolerance kept); verdict ok"},
        {"strict_missing", ParamKind::boolean, true, false,
         "an expectation that no record matches fails the run (false: reported only)"},
    };
  }
  NodeTraits traits() const override { return {.hardware_bound = false, .exclusive = false, .version = 1}; }

  NodeOutput run(NodeContext& ctx) const override {
    const std::string file_param = ctx.params.value("file", std::string());
    if (file_param.empty()) throw NodeError("param 'file': expected the path of an expectations YAML file");
    const bool update = ctx.params.value("update", false);
    const bool strict_missing = ctx.params.value("strict_missing", true);
    const std::filesystem::path path = ctx.resolve(file_param);
    const std::string shown = display_path(path);

    std::ifstream in(path, std::ios::binary);
    if (!in) throw NodeError(shown + ": cannot read the expectations file (param 'file': " + file_param + ")");
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string content = buffer.str();

    const std::vector<Expectation> expectations = FileReader(shown).read(content);
    const json all_records = collect_records(ctx);

    std::vector<std::vector<json>> rows_per;
    std::vector<json> rows;
    json summary = {{"pass", 0}, {"regressed", 0}, {"improved", 0}, {"missing", 0}};
    for (const auto& e : expectations) {
      rows_per.push_back(check(e, all_records));
      for (const auto& r : rows_per.back()) {
        summary[r["status"].get<std::string>()] = summary[r["status"].get<std::string>()].get<int>() + 1;
        rows.push_back(r);
      }
    }
    summary["expectations"] = expectations.size();
    summary["records"] = all_records.size();

    const bool not_met =
        summary["regressed"].get<int>() > 0 || (strict_missing && summary["missing"].get<int>() > 0);

    NodeOutput out;
    out.data["file"] = file_param;
    out.data["results"] = rows;
    out.data["summary"] = summary;
    out.data["strict_missing"] = strict_missing;

    std::string update_note;
    if (update) {
      int set = 0, kept = 0;
      rewrite_file(path, content, expectations, rows_per, set, kept);
      update_note = "update: true — rewrote " + shown + ": " + std::to_string(set) + " baseline(s) set from current "
                    "results, " + std::to_string(kept) + " expectation(s) kept as written; verdict ok";
      out.data["updated"] = {{"baselines_set", set}, {"kept", kept}};
      ctx.info(update_note);
    }
    out.verdict = (not_met && !update) ? Verdict::expectations_not_met : Verdict::ok;
    out.data["verdict"] = to_string(out.verdict);

    write_output_file(ctx, "expect.md", markdown(shown, rows, summary, not_met && !update, update_note));

    std::ostringstream line;
    line << summary["pass"] << " pass, " << summary["improved"] << " improved, " << summary["regressed"]
         << " regressed, " << summary["missing"] << " missing";
    if (not_met && !update) {
      line << " — expectations not met:";
      int shown_rows = 0;
      for (const auto& r : rows) {
        const std::string s = r["status"];
        if (s != "regressed" && !(s == "missing" && strict_missing)) continue;
        if (++shown_rows > 8) {
          line << "\n  ... see expect.md";
          break;
        }
        line << "\n  " << s << ": expectation " << r["expectation"] << " (" << shown << ":" << r["line"] << ") "
             << r["metric"].get<std::string>();
        if (!r["record"].is_null()) line << " of " << records::identity_text(r["record"]);
        line << " = " << cell(r["value"]) << ", bound " << r["bound"].get<std::string>();
        if (r.contains("reason")) line << " — " << r["reason"].get<std::string>();
      }
    }
    ctx.info(line.str());
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_expect_node() { return std::make_unique<ExpectNode>(); }

}  // namespace aispflow
