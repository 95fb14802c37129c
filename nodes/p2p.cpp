// Node type `p2p`: the GPU pair bandwidth matrix. For every ordered pair (source i, destination j) of the GPUs
// this process sees, and for i = j (the GPU's own memory, so one GPU still gives an honest 1 x 1 matrix), the
// backend copies a buffer two ways: with the copy engines (cudaMemcpyPeerAsync) and with a copy kernel on j
// reading i's memory over the link (only where j has peer access to i). Every copy is checked against the
// source's contents before it is timed; a wrong copy is `failed`, never timed. Output: the matrices, every
// pair's record, and a heatmap per method (p2p_copy_engine.svg, p2p_kernel_read.svg), rows = source, columns =
// destination, GB/s. Needs the CUDA backend and at least one GPU (skipped with the reason elsewhere).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "nodes/heatmap_plot.hpp"
#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {
namespace {

struct Method {
  const char* key;     // the ceiling name's middle part: p2p.<key>.<i>-><j>
  const char* title;
  const char* detail;
};
constexpr Method kMethods[] = {
    {"copy_engine", "copy engines", "cudaMemcpyPeerAsync (the diagonal: device-to-device cudaMemcpyAsync)"},
    {"kernel_read", "kernel reads", "a copy kernel on the destination reading the source's memory"}};

// The matrix of one method: values[i][j] in GB/s (null: not measured), and why a cell is empty.
json matrix_of(const json& pairs, const std::string& method, int gpus) {
  json values = json::array(), notes = json::array();
  for (int i = 0; i < gpus; ++i) {
    json row = json::array(), note_row = json::array();
    for (int j = 0; j < gpus; ++j) {
      json value, note = i == j ? "local" : "";
      const std::string name = "p2p." + method + "." + std::to_string(i) + "->" + std::to_string(j);
      for (const auto& p : pairs)
        if (p.value("name", std::string()) == name) {
          if (p.contains("value")) value = p["value"];
          else note = p.value("status", std::string("not measured")) == "failed" ? "FAILED" : "no peer";
        }
      row.push_back(value);
      note_row.push_back(note);
    }
    values.push_back(row);
    notes.push_back(note_row);
  }
  return {{"values", values}, {"notes", notes}};
}

// NVLink links from `a` to `b` as NVML reported them (the backend's `links`), or -1 when it could not say.
int nvlinks(const json& links, int a, int b) {
  for (const auto& l : links)
    if (l.value("from", -1) == a && l.value("to", -1) == b && l.contains("nvlink_links")) return l["nvlink_links"].get<int>();
  return -1;
}

// The plausibility check of the matrix: where NVML reports a symmetric link (the same NVLink count both ways,
// PCIe-only pairs included as 0 and 0), the two directions of a method must agree within 10%. A pair that does
// not is measured wrong (a staged copy, a cold first copy) or a degraded link; either way the user must not
// read the matrix as it stands. Each such pair's two records get a warning; the warnings are returned too.
std::vector<std::string> flag_asymmetric_links(json& pairs, const json& links) {
  constexpr double kTolerance = 0.10;
  std::vector<std::string> warnings;
  auto find = [&](const std::string& method, int from, int to) -> json* {
    const std::string name = "p2p." + method + "." + std::to_string(from) + "->" + std::to_string(to);
    for (auto& p : pairs)
      if (p.value("name", std::string()) == name && p.contains("value")) return &p;
    return nullptr;
  };
  int gpus = 0;
  for (const auto& p : pairs) gpus = std::max({gpus, p.value("from", -1) + 1, p.value("to", -1) + 1});
  for (const Method& m : kMethods)
    for (int a = 0; a < gpus; ++a)
      for (int b = a + 1; b < gpus; ++b) {
        json* ab = find(m.key, a, b);
        json* ba = find(m.key, b, a);
        const int links_ab = nvlinks(links, a, b), links_ba = nvlinks(links, b, a);
        if (!ab || !ba || links_ab < 0 || links_ab != links_ba) continue;
        const double x = (*ab)["value"].get<double>(), y = (*ba)["value"].get<double>();
        if (std::max(x, y) <= (1 + kTolerance) * std::min(x, y)) continue;
        char text[400];
        std::snprintf(text, sizeof text,
                      "%s: GPU %d -> %d %.1f GB/s but GPU %d -> %d %.1f GB/s (%.2fx) on a link NVML reports as "
                      "symmetric (%d NVLink link(s) each way): more than %.0f%% apart, so one direction is measured "
                      "wrong or the link is degraded (see each record's path)",
                      m.title, a, b, x, b, a, y, std::max(x, y) / std::min(x, y), links_ab, 100 * kTolerance);
        warnings.push_back(text);
        for (json* r : {ab, ba}) (*r)["warnings"].push_back(text);
      }
  return warnings;
}

std::string markdown(const json& pairs) {
  std::string s = "| pair | method | path | GB/s | median ms | samples | status |\n|---|---|---|---:|---:|---:|---|\n";
  for (const auto& p : pairs) {
    char value[32] = "—", ms[32] = "—";
    if (p.contains("value")) std::snprintf(value, sizeof value, "%.1f", p["value"].get<double>());
    if (p.contains("time_ms")) std::snprintf(ms, sizeof ms, "%.4f", p["time_ms"].value("median", 0.0));
    s += "| " + std::to_string(p.value("from", -1)) + " → " + std::to_string(p.value("to", -1)) + " | " +
         p.value("method", std::string()) + " | " + p.value("path", std::string("—")) + " | " + value + " | " + ms + " | " +
         (p.contains("samples") ? p["samples"].dump() : std::string("—")) + " | " +
         (p.contains("value") ? std::string("ok, verified") : p.value("status", std::string()) + ": " + p.value("reason", std::string())) +
         " |\n";
  }
  return s;
}

class P2pNode final : public NodeType {
 public:
  std::string name() const override { return "p2p"; }
  std::string doc() const override {
    return "GPU pair bandwidth matrix: for every ordered pair of GPUs (and each GPU with itself), a verified copy "
           "timed with the copy engines and with a kernel reading over the link. Output {gpus, bytes, devices, "
           "links, pairs: [{name: p2p.<method>.<i>-><j>, from, to, peer_access, path, value GB/s, time_ms, verified | "
           "status, reason, warnings?}], matrices: {copy_engine, kernel_read: {values[i][j], notes}}, heatmaps, "
           "warnings?}: a warning where NVML reports a symmetric link and its two directions differ by > 10%; SVG heatmaps "
           "p2p_copy_engine.svg and p2p_kernel_read.svg (rows: source, columns: destination).";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"size_mib", ParamKind::integer, 256, false, "bytes copied per pair, MiB"},
        timing_param(),
    };
  }
  // Version 2: peer access enabled and every pair warmed before the first timing; path and symmetry warnings.
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 2}; }
  Requirements requirements(const json&) const override {
    Requirements req;
    req.gpus = 1;
    req.why = "GPU pair bandwidth";
    return req;
  }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};
    try {
      (void)positive_int(params, "size_mib", 256);
      (void)timing_policy(params);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  NodeOutput run(NodeContext& ctx) const override {
    if (auto e = check_params(ctx.params); !e.empty()) throw NodeError(e);
    const std::int64_t bytes = positive_int(ctx.params, "size_mib", 256) << 20;
    json result;
    try {
      result = backend_of(ctx).measure_p2p(bytes, timing_policy(ctx.params));
    } catch (const NodeError&) {
      throw;
    } catch (const std::exception& e) {
      throw NodeError(e.what());
    }
    const int gpus = result.value("gpus", 0);
    if (gpus < 1) throw NodeError("the backend reported no GPU");
    if (gpus == 1) ctx.info("one GPU: only its own memory (the diagonal) can be measured; no pair exists");
    const std::vector<std::string> warnings = flag_asymmetric_links(result["pairs"], result.value("links", json::array()));
    const json& pairs = result["pairs"];

    NodeOutput out;
    out.data = result;
    out.data["bytes"] = bytes;
    if (!warnings.empty()) out.data["warnings"] = warnings;
    for (const auto& w : warnings) ctx.info("warning: " + w);
    json heatmaps = json::array();
    int failed = 0;
    for (const auto& p : pairs) failed += p.value("status", std::string()) == "failed" ? 1 : 0;
    for (const Method& m : kMethods) {
      const json matrix = matrix_of(pairs, m.key, gpus);
      out.data["matrices"][m.key] = matrix;
      json ticks = json::array();
      for (int i = 0; i < gpus; ++i) ticks.push_back("GPU " + std::to_string(i));
      heatmaps.push_back({{"file", std::string("p2p_") + m.key + ".svg"},
                          {"title", std::string("GPU pair bandwidth: ") + m.title},
                          {"subtitle", std::string(m.detail) + "; " + std::to_string(gpus) + " GPU(s), " +
                                           std::to_string(bytes >> 20) + " MiB per copy, each verified before it was timed"},
                          {"x_label", "destination GPU"}, {"y_label", "source GPU"},
                          {"x_ticks", ticks}, {"y_ticks", ticks}, {"values", matrix["values"]},
                          {"cell_notes", matrix["notes"]}, {"unit", "GB/s"}, {"higher_is_better", true},
                          {"scale_min", 0}});
    }
    out.data["heatmaps"] = heatmaps;
    for (const auto& h : heatmaps) write_output_file(ctx, h["file"].get<std::string>(), render_heatmap_svg(heatmap_spec_of(h)));
    std::string md;
    for (const auto& w : warnings) md += "**Warning:** " + w + "\n\n";
    write_output_file(ctx, "p2p.md", md + markdown(pairs));
    ctx.info(std::to_string(pairs.size()) + " copies over " + std::to_string(gpus) + " GPU(s)" +
             (failed ? ", " + std::to_string(failed) + " FAILED verification" : std::string(", all verified")));
    if (failed) throw NodeError(std::to_string(failed) + " copies did not deliver the source's data (p2p.md says which)");
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_p2p_node() { return std::make_unique<P2pNode>(); }

}  // namespace aispflow
