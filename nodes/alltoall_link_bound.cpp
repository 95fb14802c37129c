#include "nodes/alltoall_link_bound.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/common/alltoall_traffic.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

json PairBandwidth::to_json() const {
  if (!unavailable.empty()) return {{"unavailable", unavailable}};
  return {{"source", source}, {"gbps", gbps}};
}

void check_pair_gbps(const json& params) {
  if (!has_value(params, "pair_gbps")) return;
  const json& v = params["pair_gbps"];
  if (v.is_number()) {
    if (!(v.get<double>() > 0)) throw std::invalid_argument("pair_gbps: expected a number > 0 (GB/s per direction)");
    return;
  }
  if (!v.is_array() || v.empty()) throw std::invalid_argument("pair_gbps: expected a number or an n x n matrix of GB/s");
  for (const auto& row : v) {
    if (!row.is_array() || row.size() != v.size())
      throw std::invalid_argument("pair_gbps: expected a square matrix (" + std::to_string(v.size()) + " rows of " +
                                  std::to_string(v.size()) + "), found the row " + row.dump());
    for (const auto& x : row)
      if (!x.is_number() || x.get<double>() < 0)
        throw std::invalid_argument("pair_gbps: expected numbers >= 0, found " + x.dump());
  }
}

namespace {

// The matrix of an upstream p2p node: per directed pair the faster of its two methods (NCCL moves the bytes with
// SM copies over the link; whichever method the link serves better is the closer bound). Null cells stay 0.
std::vector<std::vector<double>> best_of_p2p(const json& matrices) {
  std::vector<std::vector<double>> out;
  for (const char* method : {"copy_engine", "kernel_read"}) {
    if (!matrices.contains(method)) continue;
    const json& values = matrices[method]["values"];
    if (out.empty()) out.assign(values.size(), std::vector<double>(values.size(), 0.0));
    for (std::size_t i = 0; i < values.size() && i < out.size(); ++i)
      for (std::size_t j = 0; j < values[i].size() && j < out.size(); ++j)
        if (values[i][j].is_number()) out[i][j] = std::max(out[i][j], values[i][j].get<double>());
  }
  return out;
}

}  // namespace

PairBandwidth pair_bandwidth_for(const NodeContext& ctx, int ranks, bool spans_hosts) {
  PairBandwidth bw;
  for (const auto& input : ctx.inputs) {
    if (!input.artifact) continue;
    const json& data = input.artifact->data();
    if (!data.is_object() || !data.contains("matrices")) continue;
    if (spans_hosts) {
      bw.unavailable = "the ranks span several hosts: p2p node '" + input.node +
                       "' measured one machine's GPU pairs, not the links between hosts (set pair_gbps)";
      return bw;
    }
    bw.gbps = best_of_p2p(data["matrices"]);
    bw.source = "p2p node '" + input.node + "' (" + std::to_string(data.value("bytes", 0LL) >> 20) +
                " MiB per copy): per pair the faster of its copy_engine and kernel_read bandwidths";
    break;
  }
  if (bw.source.empty() && has_value(ctx.params, "pair_gbps")) {
    const json& v = ctx.params["pair_gbps"];
    if (v.is_number()) {
      bw.gbps.assign(std::size_t(ranks), std::vector<double>(std::size_t(ranks), v.get<double>()));
      bw.source = "param pair_gbps: " + v.dump() + " GB/s for every pair";
    } else {
      bw.gbps = v.get<std::vector<std::vector<double>>>();
      bw.source = "param pair_gbps (a matrix)";
    }
  }
  if (bw.source.empty()) {
    bw.unavailable = "no pair bandwidth: wire a p2p node as an input, or set pair_gbps (e.g. 450: NVLink 4's 18 links "
                     "x 25 GB/s per direction, from the datasheet)";
    return bw;
  }
  if (int(bw.gbps.size()) < ranks) {
    bw.unavailable = bw.source + " covers " + std::to_string(bw.gbps.size()) + " GPU(s); the exchange has " +
                     std::to_string(ranks) + " ranks";
    bw.gbps.clear();
  }
  return bw;
}

void add_link_bound(json& r, const PairBandwidth& bw, int ranks, int elem_bytes) {
  if (bw.gbps.empty() || ranks < 2 || !r.contains("elements")) return;
  double seconds = 0;
  try {
    seconds = comm::link_bound_seconds(
        comm::traffic_matrix(r["elements"].get<std::int64_t>(), ranks, r["skew"].get<double>()), elem_bytes, bw.gbps);
  } catch (const std::invalid_argument& e) {
    r["link_bound_unavailable"] = e.what();
    return;
  }
  if (seconds <= 0) return;
  r["link_bound_ms"] = seconds * 1e3;
  if (r.contains("p50_ms") && r["p50_ms"].get<double>() > 0)
    r["link_bound_efficiency"] = seconds * 1e3 / r["p50_ms"].get<double>();
  if (r.contains("b2b_time_ms") && r["b2b_time_ms"].get<double>() > 0)
    r["b2b_link_bound_efficiency"] = seconds * 1e3 / r["b2b_time_ms"].get<double>();
}

}  // namespace aispflow
