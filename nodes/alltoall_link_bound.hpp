#pragma once
// The `alltoall` node's link-bound ideal (issue 18, "skew explained"): for each point, the time its traffic matrix
// needs at the measured bandwidth of each GPU pair (comm::link_bound_seconds), and the point's efficiency against
// it, so a skewed exchange that is slower than its links explain is told apart from one the links bound.
//
// Where the pair bandwidth comes from, in order: an upstream `p2p` node wired as an input (per pair the faster of
// its copy-engine and kernel-read copies), else the `pair_gbps` param (one number for every pair, e.g. a
// datasheet's 450 GB/s per direction for NVLink 4's 18 links, or an n x n matrix). The node's data says which
// (`pair_bandwidth.source`), or why there is none (`pair_bandwidth.unavailable`).
#include <string>
#include <vector>

#include "pipeline/node_type.hpp"

namespace aispflow {

struct PairBandwidth {
  std::vector<std::vector<double>> gbps;   // [from][to], GB/s; empty when unavailable
  std::string source;                      // where it came from (a sentence)
  std::string unavailable;                 // why there is none (empty when there is)
  json to_json() const;                    // {source, gbps} or {unavailable}
};

// Throws std::invalid_argument naming the field when `pair_gbps` is neither a positive number nor a square
// matrix of numbers >= 0.
void check_pair_gbps(const json& params);

// The pair bandwidth for `ranks` ranks placed one per GPU, GPU i = rank i (`spans_hosts`: the ranks are spread
// over several machines, where one machine's p2p matrix does not describe the links; only pair_gbps then).
PairBandwidth pair_bandwidth_for(const NodeContext& ctx, int ranks, bool spans_hosts);

// Adds to a measured point record (with elements, elem_bytes-derived size, skew): link_bound_ms, and against it
// link_bound_efficiency (link_bound_ms / p50_ms) and b2b_link_bound_efficiency (link_bound_ms / b2b_time_ms).
// Nothing is added without pair bandwidth or with one rank (nothing crosses a link).
void add_link_bound(json& record, const PairBandwidth& bw, int ranks, int elem_bytes);

}  // namespace aispflow
