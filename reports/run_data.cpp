#include "reports/run_data.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "nodes/record_match.hpp"
#include "pipeline/build_id.hpp"
#include "pipeline/errors.hpp"
#include "pipeline/report.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow::reports {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json parse_file(const fs::path& file, const std::string& what) {
  try {
    return json::parse(read_text(file));
  } catch (const json::exception& e) {
    throw InputError(file.string() + ": not " + what + " (" + e.what() + ")");
  }
}

// Six significant digits: the tables show four, and a 5,000-record page stays small.
json rounded(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return json(std::strtod(buffer, nullptr));
}

void copy_number(const json& from, const std::string& path, json& to, const std::string& key) {
  if (auto v = records::number_at(from, path)) to[key] = rounded(*v);
}

fs::path node_dir(const fs::path& run_dir, const std::string& node) {
  return run_dir / "nodes" / filesystem_name(node);
}

// The order analysis nodes read failures in: what needs a look first.
int expect_rank(const json& row) {
  const std::string s = row.value("status", std::string());
  return s == "regressed" ? 0 : s == "missing" ? 1 : s == "improved" ? 2 : 3;
}

// The id `roofline` gives the point of a record (nodes/roofline.cpp): provider/shape/dtype, "#2" on repeats.
// Walking the roofline's inputs in its order gives every record the id its point carries.
void join_roofline(const json& roofline_node, const json& roofline_data, const std::vector<RecordRef>& refs,
                   json& rows) {
  if (!roofline_data.contains("points") || !roofline_data["points"].is_array()) return;
  std::map<std::string, const json*> points;   // into roofline_data, which outlives this function
  for (const auto& p : roofline_data["points"])
    if (p.is_object() && p.contains("record") && p["record"].is_string()) points[p["record"].get<std::string>()] = &p;
  std::vector<std::string> inputs = roofline_node.value("inputs", std::vector<std::string>());
  std::map<std::string, int> id_count;
  auto visit = [&](const std::string& node) {
    for (std::size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].node != node) continue;
      const json& rec = refs[i].record;
      const auto tflops = records::number_at(rec, "tflops");
      const auto intensity = records::number_at(rec, "intensity");
      if (!records::is_ok(rec) || !tflops || !intensity || !(*tflops > 0) || !(*intensity > 0)) continue;
      std::string id = records::provider_of(rec) + "/" + records::shape_name_of(rec) + "/" + records::dtype_of(rec);
      if (int n = ++id_count[id]; n > 1) id += "#" + std::to_string(n);
      auto p = points.find(id);
      if (p == points.end()) continue;
      if (auto pct = records::number_at(*p->second, "pct_of_roof")) rows[i]["pct_roof"] = rounded(*pct);
      if (p->second->contains("binding")) rows[i]["binding"] = (*p->second)["binding"];
      rows[i]["roofline"] = roofline_node["name"];
    }
  };
  if (inputs.empty()) {   // run.json written before `inputs` existed: every record node, in order
    for (const auto& r : refs)
      if (std::find(inputs.begin(), inputs.end(), r.node) == inputs.end()) inputs.push_back(r.node);
  }
  for (const auto& in : inputs) visit(in);
}

json alltoall_point(const json& p) {
  json out = json::object();
  for (const char* k : {"result", "status", "reason", "dtype", "size_label", "transport", "ranks"})
    if (p.contains(k)) out[k] = p[k];
  for (const char* k : {"size_bytes", "skew", "p50_ms", "p99_ms", "busbw_gbps", "algbw_gbps", "wrong",
                        "hot_rank_recv_gbps"})
    copy_number(p, k, out, k);
  return out;
}

void append_records(const std::string& node, const json& data, std::vector<RecordRef>& out) {
  if (!data.is_object() || !data.contains("records") || !data["records"].is_array()) return;
  for (const auto& r : data["records"])
    if (r.is_object()) out.push_back({node, r});
}

// The tables of the analysis nodes the page knows: compare, expect (failures first), alltoall (FAIL first).
struct Sections {
  json compare = json::array(), expect = json::array(), alltoall = json::array();
};

void add_analysis(const std::string& type, const std::string& name, const json& data, Sections& out) {
  if (type == "compare" && data.contains("rows")) {
    json c = data;
    c["node"] = name;
    c.erase("sources");
    out.compare.push_back(c);
  } else if (type == "expect" && data.contains("results") && data["results"].is_array()) {
    json rows = data["results"];
    std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return expect_rank(a) < expect_rank(b); });
    out.expect.push_back({{"node", name}, {"file", data.value("file", json())}, {"summary", data.value("summary", json())},
                          {"verdict", data.value("verdict", json())}, {"results", rows}});
  } else if (type == "alltoall" && data.contains("points") && data["points"].is_array()) {
    json points = json::array();
    for (const auto& p : data["points"]) points.push_back(alltoall_point(p));
    std::stable_sort(points.begin(), points.end(), [](const json& a, const json& b) {
      return (a.value("result", "") == "FAIL") > (b.value("result", "") == "FAIL");
    });
    out.alltoall.push_back({{"node", name}, {"transport", data.value("transport", json())},
                            {"ranks", data.value("ranks", json())}, {"summary", data.value("summary", json())},
                            {"points", points}});
  }
}

// The files in a node's folder (name, bytes), sorted; the SVGs among them are added to `svgs`.
json node_files(const fs::path& dir, std::vector<fs::path>& svgs) {
  json files = json::array();
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& f : fs::directory_iterator(dir, ec)) {
      if (!f.is_regular_file(ec)) continue;
      files.push_back({{"name", f.path().filename().string()}, {"bytes", f.file_size(ec)}});
      if (f.path().extension() == ".svg") svgs.push_back(f.path());
    }
  std::sort(files.begin(), files.end(), [](const json& a, const json& b) { return a["name"] < b["name"]; });
  std::sort(svgs.begin(), svgs.end());
  return files;
}

}  // namespace

fs::path run_dir_of(const fs::path& given) {
  std::error_code ec;
  if (fs::is_regular_file(given, ec) && given.filename() == "run.json")
    return given.has_parent_path() ? given.parent_path() : fs::path(".");
  if (fs::is_regular_file(given / "run.json", ec)) return given;
  throw InputError(given.string() + ": no run.json there (give the --out directory of a run, or its run.json)");
}

fs::path latest_run_dir(const fs::path& runs_root) {
  std::error_code ec;
  fs::path best;
  fs::file_time_type newest{};
  if (fs::is_directory(runs_root, ec))
    for (const auto& entry : fs::directory_iterator(runs_root, ec)) {
      const fs::path file = entry.path() / "run.json";
      if (!fs::is_regular_file(file, ec)) continue;
      const auto t = fs::last_write_time(file, ec);
      if (!ec && (best.empty() || t > newest)) {
        best = entry.path();
        newest = t;
      }
    }
  if (best.empty())
    throw InputError("no run found under " + runs_root.string() +
                     "/ (`aispflow run WF` writes one there; or give RUN_DIR, the --out directory of a run)");
  return best;
}

json read_run_json(const fs::path& run_dir) {
  json run = parse_file(run_dir / "run.json", "a run report (run.json)");
  if (!run.is_object() || !run.contains("nodes") || !run["nodes"].is_array())
    throw InputError((run_dir / "run.json").string() + ": not a run report: no \"nodes\" array");
  return run;
}

json node_data(const fs::path& run_dir, const std::string& node_name) {
  const fs::path file = node_dir(run_dir, node_name) / "artifact.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return nullptr;
  json doc = parse_file(file, "an artifact record");
  return doc.is_object() && doc.contains("data") ? doc["data"] : json();
}

std::vector<RecordRef> run_records(const fs::path& run_dir, const json& run) {
  std::vector<RecordRef> out;
  for (const auto& n : run["nodes"]) {
    const std::string name = n.value("name", std::string());
    append_records(name, node_data(run_dir, name), out);
  }
  return out;
}

json record_row(const RecordRef& ref) {
  const json& rec = ref.record;
  json row = {{"node", ref.node},
              {"provider", records::provider_of(rec)},
              {"shape", records::shape_name_of(rec)},
              {"dtype", records::dtype_of(rec)},
              {"layout", rec.value("layout", std::string("nn"))},
              {"epilogue", rec.value("epilogue", std::string("none"))},
              {"status", records::status_of(rec)}};
  if (rec.contains("kernel") && rec["kernel"].is_string()) row["kernel"] = rec["kernel"];
  if (rec.contains("shape") && rec["shape"].is_object())
    for (const char* d : {"m", "n", "k", "batch"})
      if (rec["shape"].contains(d) && rec["shape"][d].is_number()) row[d] = rec["shape"][d];
  if (rec.contains("reason") && rec["reason"].is_string()) row["reason"] = rec["reason"];
  if (rec.contains("verified") && rec["verified"].is_boolean()) row["verified"] = rec["verified"];
  if (rec.contains("converged") && rec["converged"].is_boolean()) row["converged"] = rec["converged"];
  copy_number(rec, "tflops", row, "tflops");
  copy_number(rec, "gbytes_per_s", row, "gbytes_per_s");
  copy_number(rec, "intensity", row, "intensity");
  copy_number(rec, "time_ms.median", row, "time_ms");
  copy_number(rec, "time_ms.stdrel", row, "stdrel");
  copy_number(rec, "samples", row, "samples");
  copy_number(rec, "max_rel_err", row, "max_rel_err");
  copy_number(rec, "tolerance", row, "tolerance");
  if (rec.contains("warnings") && rec["warnings"].is_array() && !rec["warnings"].empty())
    row["warnings"] = rec["warnings"];
  return row;
}

json report_document(const fs::path& run_dir) {
  const json run = read_run_json(run_dir);
  json doc = {{"kind", "run"},
              {"generator", std::string("aispflow ") + AISPFLOW_VERSION + "+" + build_id()},
              {"generated", iso8601_utc(std::chrono::system_clock::now())},
              {"run_dir", fs::absolute(run_dir).lexically_normal().string()}};
  json summary = run;
  summary.erase("nodes");
  summary.erase("fingerprint");
  summary.erase("warnings");
  doc["run"] = summary;

  json warnings = json::array();
  for (const auto& w : run.value("warnings", json::array())) warnings.push_back({{"source", "run"}, {"message", w}});
  json device = run.contains("fingerprint") && run["fingerprint"].is_object()
                    ? json{{"source", "run.json"}, {"fingerprint", run["fingerprint"]}}
                    : json();

  json nodes = json::array(), plots = json::array();
  Sections sections;
  std::map<std::string, json> data_of;
  for (const auto& n : run["nodes"]) {
    const std::string name = n.value("name", std::string());
    const std::string type = n.value("type", std::string());
    json node = n;
    std::vector<fs::path> svgs;
    node["files"] = node_files(node_dir(run_dir, name), svgs);
    node["dir"] = "nodes/" + filesystem_name(name);
    nodes.push_back(node);
    for (const auto& svg : svgs)
      plots.push_back({{"node", name}, {"file", svg.filename().string()}, {"svg", read_text(svg)}});

    const json data = node_data(run_dir, name);
    data_of[name] = data;
    if (!data.is_object()) continue;
    if (device.is_null() && data.contains("env") && data["env"].is_object() && !data["env"].empty())
      device = {{"source", "node " + name}, {"fingerprint", data["env"]}};
    for (const auto& w : data.value("warnings", json::array()))
      warnings.push_back({{"source", name}, {"message", w.is_string() ? w.get<std::string>() : w.dump()}});
    add_analysis(type, name, data, sections);
  }

  // Records: one row each, joined with the roofline point that plotted it (percent of the roof, binding).
  std::vector<RecordRef> refs;
  for (const auto& n : run["nodes"]) append_records(n.value("name", std::string()), data_of[n.value("name", std::string())], refs);
  json rows = json::array();
  std::size_t record_warnings = 0;
  for (const auto& ref : refs) {
    rows.push_back(record_row(ref));
    if (ref.record.contains("warnings") && ref.record["warnings"].is_array())
      for (const auto& w : ref.record["warnings"]) {
        if (++record_warnings > 50) continue;   // the rows keep them all; the summary shows the first ones
        warnings.push_back({{"source", ref.node + ": " + records::identity_text(ref.record)},
                            {"message", w.is_string() ? w.get<std::string>() : w.dump()}});
      }
  }
  if (record_warnings > 50)
    warnings.push_back({{"source", "records"},
                        {"message", std::to_string(record_warnings - 50) + " more record warnings (see the records table)"}});
  for (const auto& n : run["nodes"])
    if (n.value("type", std::string()) == "roofline" && data_of[n.value("name", std::string())].is_object())
      join_roofline(n, data_of[n["name"].get<std::string>()], refs, rows);

  doc["device"] = device;
  doc["warnings"] = warnings;
  doc["nodes"] = nodes;
  doc["plots"] = plots;
  doc["records"] = rows;
  doc["compare"] = sections.compare;
  doc["expect"] = sections.expect;
  doc["alltoall"] = sections.alltoall;
  return doc;
}

}  // namespace aispflow::reports
