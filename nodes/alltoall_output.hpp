#pragma once
// The `alltoall` node's output files and heatmap data, from its point records (docs/nodes-comm.md, Output):
// alltoall.csv, alltoall.md, and per dtype the p99, per-exchange busbw and back-to-back busbw heatmaps.
#include <cstdint>
#include <string>

#include "pipeline/node_type.hpp"

namespace aispflow {

// "32 KiB", "2 MiB", "1000 B": a size as the tables and heatmap axes label it.
std::string alltoall_size_label(std::int64_t bytes);
std::string alltoall_csv(const json& points);
std::string alltoall_markdown(const json& points);
// Skew rows x size columns per dtype and metric, in the fields of nodes/heatmap_plot.hpp's HeatmapSpec.
json alltoall_heatmap_data(const json& points, const std::string& transport, int ranks);
// Draws every heatmap of alltoall_heatmap_data() into its SVG file.
void write_alltoall_heatmaps(const NodeContext& ctx, const json& heatmaps);

}  // namespace aispflow
