#pragma once
// A heatmap as SVG: a value per (row, column) cell, coloured on a scale with its legend, the value printed in
// the cell, axis titles and tick labels that never overlap (long column labels are rotated). Used by the
// `alltoall` node (p99 latency and bus bandwidth over skew x message size).
#include <limits>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace aispflow {

struct HeatmapSpec {
  std::string title, subtitle;                  // subtitle: device, date, variant
  std::string x_label, y_label;                 // axis titles, with units
  std::vector<std::string> x_ticks, y_ticks;    // column and row labels
  std::vector<std::vector<double>> values;      // [row][column]; NaN = no data (hatched, "n/a")
  std::string unit;                             // "ms", "GB/s"
  bool higher_is_better = true;                 // which end of the scale is green
  // The colour scale's low end when it should not be the smallest value (a bandwidth matrix starts at 0, so
  // 1399 and 1400 GB/s look alike); NaN: the smallest value.
  double scale_min = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<std::string>> notes;  // optional per-cell text: under the value (e.g. "FAIL"), or in
                                                // place of a missing value, saying why (e.g. "no peer")
};

std::string render_heatmap_svg(const HeatmapSpec& spec);

// A heatmap described in an artifact ({title, subtitle?, x_label, y_label, x_ticks, y_ticks, values (null = n/a),
// cell_notes?, unit, higher_is_better, scale_min?}: what the alltoall and p2p nodes store beside their SVGs) as a spec.
HeatmapSpec heatmap_spec_of(const nlohmann::json& h);

}  // namespace aispflow
