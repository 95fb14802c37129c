#pragma once
// The all-to-all traffic model of the `alltoall` node (MoE expert dispatch), pure C++ so it is unit-tested
// without MPI or a GPU, and shared by the node and the MPI rank worker (kernels/comm/rank_worker.cpp).
//
// Every sender holds `elements_per_rank` elements and splits them over the destination ranks with Zipf
// weight 1/(d+1)^alpha for destination d (rank 0 hottest). The shares are floored and the remainder goes,
// one element each, to the destinations with the largest fractional parts (ties: lower rank), so every
// sender sends exactly its payload. The same destinations are hot for every sender, as popular experts
// are; alpha 0 is uniform. What a rank receives follows from what the senders send it.
#include <cstdint>
#include <vector>

#include "kernels/common/host_device.hpp"

namespace aispflow::comm {

// Elements sender `any` sends to each destination (identical for every sender).
std::vector<std::int64_t> zipf_split(std::int64_t elements_per_rank, int ranks, double alpha);

// counts[src][dst]: elements src sends to dst.
using TrafficMatrix = std::vector<std::vector<std::int64_t>>;
TrafficMatrix traffic_matrix(std::int64_t elements_per_rank, int ranks, double alpha);
// Elements each rank receives (column sums of the matrix).
std::vector<std::int64_t> receive_counts(const TrafficMatrix& m);

// The link-bound ideal time of one exchange, in seconds, from its traffic and the measured bandwidth of each
// directed GPU pair (gbps[s][d], GB/s = 1e9 B/s). A GPU's sends to its peers share its links (on an NVSwitch
// system one GPU's NVLinks serve every peer; with two GPUs that is the pair's link), and so do its receives, so
// the exchange cannot end before the busiest port has moved its bytes:
//   max over GPUs g of max( sum_{d != g} bytes[g][d] / B[g][d],  sum_{s != g} bytes[s][g] / B[s][g] ).
// The share a rank keeps (m[g][g]) crosses no link and is not counted. 0 when nothing crosses a link (one
// rank). Throws std::invalid_argument when a pair that carries bytes has no positive bandwidth, or when gbps is
// smaller than the matrix.
double link_bound_seconds(const TrafficMatrix& m, int elem_bytes, const std::vector<std::vector<double>>& gbps);

// Gini coefficient of non-negative values (0 = equal shares, -> 1 = all in one); 0 for an empty or all-zero list.
double gini(const std::vector<std::int64_t>& values);
// max / mean of the values; 0 when the mean is 0.
double max_over_mean(const std::vector<std::int64_t>& values);

// The value of element `index` that `src` sends to `dst`: the receiver recomputes it to verify every
// element. Truncated to the element width; never constant along the index, so zeros never pass. Inline and
// host/device so the NCCL transport writes and checks the same pattern on the GPU.
AISPFLOW_HOST_DEVICE inline std::uint32_t pattern_value(int src, int dst, std::int64_t index) {
  // A cheap mix of the three coordinates; the +1s keep (0,0,0) from being zero.
  std::uint64_t x = (std::uint64_t(src + 1) * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t(dst + 1) * 0xC2B2AE3D27D4EB4Full) ^
                    (std::uint64_t(index + 1) * 0x165667B19E3779F9ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return std::uint32_t(x);
}

// Linear-interpolation percentile (q in [0, 1]) of unsorted samples: position q*(n-1) between the sorted
// neighbours (numpy's default). Throws std::invalid_argument for an empty list.
double percentile(std::vector<double> samples, double q);

// Bus bandwidth from algorithm bandwidth, nccl-tests' definition for all-to-all: each rank's payload has
// (n-1)/n of it leaving the rank, so busbw = algbw * (n-1)/n. With one rank nothing crosses a link: 0.
double busbw_from_algbw(double algbw, int ranks);

}  // namespace aispflow::comm
