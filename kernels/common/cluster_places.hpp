#pragma once
// The places of a persistent launch's clusters in ours.cluster's work order, by GPC (NOTES.md step 126).
//
// Work item w goes to the cluster whose place is w mod clusters. By launch index, the clusters that share a GPC
// are scattered over the order (the hardware fills the TPCs in SM order, and consecutive SMs belong to different
// GPCs), so the clusters that run side by side in one GPC work on tiles far apart. In GPC order, the clusters of
// one GPC take consecutive places, hence neighbouring tiles, and their loads of the operand those tiles share reach
// the L2 together. (cuBLASLt's nvjet kernels get such a table from the host: a permutation of the launch's
// clusters that groups them by GPC, NOTES.md step 126.) The order only moves work between clusters: any
// permutation computes the same product, so a placement that differs from the calibration's costs speed, never
// correctness.
#include <string>
#include <vector>

namespace aispflow::kernels {

// cluster_sm[i]: the SM that cluster i's first CTA ran on in a calibration launch shaped like the GEMM's.
// sm_group[s]: the GPC of SM s as far as known, or -1 (the calibration learns GPCs from clusters of 16 or 8 CTAs,
// which the hardware keeps inside one GPC; an SM that none of them used stays unknown).
// Returns place[i], a permutation of 0..clusters-1: groups in the order of their first cluster, the clusters of a
// group in launch order, the clusters on SMs of unknown GPC last. Throws std::invalid_argument for an SM id
// outside sm_group.
std::vector<int> gpc_cluster_places(const std::vector<int>& cluster_sm, const std::vector<int>& sm_group);

// Empty if `place` is a permutation of 0..size-1; else what is wrong with it (a place out of range or taken
// twice), for bind()'s check before a table reaches the kernel.
std::string place_table_error(const std::vector<int>& place);

}  // namespace aispflow::kernels
