// Node type `alltoall_compare`: side-by-side table of two or more `alltoall` results (e.g. a baseline and
// a variant tuned with nccl_env): for every (dtype, size, skew) point present in the first input, each
// input's p50, p99, busbw and PASS/FAIL, and each later input's p99 and busbw relative to the first.
// Writes alltoall_compare.md; the data has the same rows.
#include <sstream>

#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {
namespace {

std::string num(const json& v) {
  if (!v.is_number()) return "n/a";
  std::ostringstream s;
  s.precision(4);
  s << v.get<double>();
  return s.str();
}

json find_point(const json& points, const json& like) {
  for (const auto& p : points)
    if (p["dtype"] == like["dtype"] && p["size_bytes"] == like["size_bytes"] && p["skew"] == like["skew"]) return p;
  return nullptr;
}

class AlltoallCompareNode : public NodeType {
 public:
  std::string name() const override { return "alltoall_compare"; }
  std::string doc() const override {
    return "Side-by-side table of alltoall results (inputs: the first is the baseline): p50, p99, busbw, PASS/FAIL per "
           "point and the later inputs' p99 and busbw relative to the first. Writes alltoall_compare.md.";
  }
  std::vector<ParamSpec> params() const override { return {}; }
  NodeOutput run(NodeContext& ctx) const override {
    std::vector<std::pair<std::string, json>> runs;
    for (const auto& in : ctx.inputs)
      if (in.artifact && in.artifact->data().contains("points")) runs.emplace_back(in.alias, in.artifact->data());
    if (runs.size() < 2) throw NodeError("alltoall_compare: needs at least two alltoall inputs that ran (got " +
                                         std::to_string(runs.size()) + ")");
    json rows = json::array();
    std::string md = "| dtype | size | skew |";
    std::string rule = "|---|---|---|";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      md += " " + runs[i].first + " p50 ms | p99 ms | busbw GB/s | b2b busbw GB/s | result |";
      rule += "---|---|---|---|---|";
      if (i > 0) { md += " p99 / base | busbw / base | b2b busbw / base |"; rule += "---|---|---|"; }
    }
    md += "\n" + rule + "\n";
    for (const auto& base : runs[0].second["points"]) {
      json row = {{"dtype", base["dtype"]}, {"size_bytes", base["size_bytes"]}, {"skew", base["skew"]}};
      md += "| " + base["dtype"].get<std::string>() + " | " + base.value("size_label", std::string()) + " | " + num(base["skew"]) + " |";
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const json p = i == 0 ? base : find_point(runs[i].second["points"], base);
        json cell = {{"input", runs[i].first}};
        if (p.is_null()) {
          md += " n/a | n/a | n/a | n/a | n/a |";
        } else {
          for (const char* k : {"p50_ms", "p99_ms", "busbw_gbps", "b2b_busbw_gbps", "result"}) cell[k] = p.value(k, json());
          md += " " + num(cell["p50_ms"]) + " | " + num(cell["p99_ms"]) + " | " + num(cell["busbw_gbps"]) + " | " +
                num(cell["b2b_busbw_gbps"]) + " | " + cell.value("result", std::string("n/a")) + " |";
        }
        if (i > 0) {
          auto ratio = [&](const char* k) -> json {
            if (p.is_null() || !p.contains(k) || !base.contains(k) || base[k].get<double>() == 0) return nullptr;
            return p[k].get<double>() / base[k].get<double>();
          };
          cell["p99_over_base"] = ratio("p99_ms");
          cell["busbw_over_base"] = ratio("busbw_gbps");
          cell["b2b_busbw_over_base"] = ratio("b2b_busbw_gbps");
          md += " " + num(cell["p99_over_base"]) + " | " + num(cell["busbw_over_base"]) + " | " +
                num(cell["b2b_busbw_over_base"]) + " |";
        }
        row["runs"].push_back(cell);
      }
      md += "\n";
      rows.push_back(row);
    }
    write_output_file(ctx, "alltoall_compare.md", md);
    NodeOutput out;
    out.data = {{"baseline", runs[0].first}, {"rows", rows}};
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_alltoall_compare_node() { return std::make_unique<AlltoallCompareNode>(); }

}  // namespace aispflow
