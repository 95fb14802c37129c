#include "nodes/alltoall_output.hpp"

#include <algorithm>
#include <sstream>
#include <tuple>
#include <vector>

#include "nodes/heatmap_plot.hpp"
#include "nodes/inputs.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

std::string alltoall_size_label(std::int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

namespace {

std::string cell(const json& r, const char* k) {
  if (!r.contains(k)) return "";
  if (r[k].is_number_float()) { std::ostringstream s; s.precision(4); s << r[k].get<double>(); return s.str(); }
  return r[k].is_string() ? r[k].get<std::string>() : r[k].dump();
}
const std::vector<const char*> kColumns = {"transport", "ranks", "dtype", "size_bytes", "skew", "p50_ms", "p99_ms",
                                           "mean_ms", "min_ms", "max_ms", "algbw_gbps", "busbw_gbps", "b2b_time_ms",
                                           "b2b_algbw_gbps", "b2b_busbw_gbps", "link_bound_ms", "link_bound_efficiency",
                                           "b2b_link_bound_efficiency", "bytes_moved",
                                           "hot_rank_recv_bytes", "split_gini", "split_max_over_mean", "wrong",
                                           "status", "result"};

}  // namespace

std::string alltoall_csv(const json& points) {
  std::string s = join(std::vector<std::string>(kColumns.begin(), kColumns.end()), ",") + "\n";
  for (const auto& r : points) {
    std::vector<std::string> row;
    for (auto k : kColumns) row.push_back(cell(r, k));
    s += join(row, ",") + "\n";
  }
  return s;
}
std::string alltoall_markdown(const json& points) {
  std::string s = "| " + join(std::vector<std::string>(kColumns.begin(), kColumns.end()), " | ") + " |\n|";
  for (std::size_t i = 0; i < kColumns.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& r : points) {
    std::vector<std::string> row;
    for (auto k : kColumns) row.push_back(cell(r, k));
    s += "| " + join(row, " | ") + " |\n";
  }
  return s;
}

// Draws every heatmap of heatmap_data() into its SVG file (nodes/heatmap_plot.hpp).
void write_alltoall_heatmaps(const NodeContext& ctx, const json& heatmaps) {
  for (const auto& h : heatmaps)
    write_output_file(ctx, h["file"].get<std::string>(), render_heatmap_svg(heatmap_spec_of(h)));
}

// The data of the p99 and busbw heatmaps (skew rows x size columns, one pair per dtype), in the fields of
// nodes/heatmap_plot.hpp's HeatmapSpec so the renderer draws them as they are; null = no data (n/a).
json alltoall_heatmap_data(const json& points, const std::string& transport, int ranks) {
  json out = json::array();
  std::vector<std::string> dtypes;
  for (const auto& p : points)
    if (std::find(dtypes.begin(), dtypes.end(), p["dtype"].get<std::string>()) == dtypes.end()) dtypes.push_back(p["dtype"]);
  for (const auto& dtype : dtypes) {
    std::vector<std::int64_t> sizes;
    std::vector<double> skews;
    for (const auto& p : points) {
      if (p["dtype"] != dtype) continue;
      if (std::find(sizes.begin(), sizes.end(), p["size_bytes"].get<std::int64_t>()) == sizes.end()) sizes.push_back(p["size_bytes"]);
      if (std::find(skews.begin(), skews.end(), p["skew"].get<double>()) == skews.end()) skews.push_back(p["skew"]);
    }
    std::sort(sizes.begin(), sizes.end());
    // Per-exchange p99 and busbw (over p50), and the back-to-back busbw (nccl-tests' measure).
    for (const auto& [metric, unit, higher, file, what] :
         {std::tuple{"p99_ms", "ms", false, "p99", "all-to-all p99 latency"},
          std::tuple{"busbw_gbps", "GB/s", true, "busbw", "all-to-all bus bandwidth per exchange (p50)"},
          std::tuple{"b2b_busbw_gbps", "GB/s", true, "b2b_busbw", "all-to-all bus bandwidth back to back"}}) {
      json values = json::array(), notes = json::array(), x_ticks = json::array(), y_ticks = json::array();
      for (auto b : sizes) x_ticks.push_back(alltoall_size_label(b));
      for (double a : skews) {
        std::ostringstream t;
        t << a;
        y_ticks.push_back(t.str());
        json row = json::array(), note_row = json::array();
        for (auto b : sizes) {
          json v, note = "";
          for (const auto& p : points)
            if (p["dtype"] == dtype && p["size_bytes"] == b && p["skew"] == a) {
              if (p.contains(metric)) v = p[metric];
              note = p["result"] == "FAIL" ? "FAIL" : "";
            }
          row.push_back(v);
          note_row.push_back(note);
        }
        values.push_back(row);
        notes.push_back(note_row);
      }
      bool any = false;
      for (const auto& row : values)
        for (const auto& v : row) any = any || !v.is_null();
      if (!any && std::string(metric) == "b2b_busbw_gbps") continue;   // results without the back-to-back measure
      out.push_back({{"file", std::string("alltoall_") + file + "_" + dtype + ".svg"},
                     {"title", std::string(what) + " — " +
                                   transport + ", " + std::to_string(ranks) + " ranks, " + dtype},
                     {"x_label", "message size per rank"}, {"y_label", "Zipf skew (alpha)"},
                     {"x_ticks", x_ticks}, {"y_ticks", y_ticks}, {"values", values}, {"unit", unit},
                     {"higher_is_better", higher}, {"cell_notes", notes}});
    }
  }
  return out;
}

}  // namespace aispflow
