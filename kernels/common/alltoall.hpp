#pragma once
// All-to-all traffic for MoE readiness probes (the `alltoall` node): who sends how many bytes to whom, the data
// pattern every receiver verifies, and the statistics of the timed iterations. Pure C++: the transports (MPI in
// kernels/comm/, NCCL in the CUDA backend) move the bytes; this file says what they must move and how to read it.
//
// Traffic model. Every rank sends `payload_bytes` per iteration, split over the n destination ranks (itself
// included, as an all-to-all does) with Zipf weights w_d = 1 / (d + 1)^alpha by destination rank d: rank 0 is the
// hottest destination for every sender, as popular experts are for every token batch; alpha = 0 is uniform.
// Splits are in whole elements: each destination gets floor(exact share), and the elements left over go one each
// to the destinations with the largest fractional parts (ties to the lower rank). Because every sender uses the
// same split, rank r receives split[r] elements from every sender: receive counts follow from what is sent.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::kernels::comm {

// Elements each destination rank receives from one sender, summing exactly to payload_elements.
std::vector<std::int64_t> zipf_split(std::int64_t payload_elements, int ranks, double alpha);

// Inequality of a split: the Gini coefficient (0 = uniform, toward 1 = all to one) and max / mean.
double gini(const std::vector<std::int64_t>& counts);
double max_over_mean(const std::vector<std::int64_t>& counts);

// The byte a correct transport delivers at position `index` of the block `source` sent to `destination`: a hash of
// the three, so a block from the wrong sender, for the wrong receiver, shifted or truncated is caught.
std::uint8_t pattern_byte(int source, int destination, std::int64_t index);

// Percentile with linear interpolation between order statistics (position q * (n - 1) of the sorted values, as
// numpy's default): p50 and p99 of the per-iteration times.
double percentile(std::vector<double> values, double q);

// Bus bandwidth, nccl-tests' definition for all-to-all: each rank sends (n-1)/n of its payload over the fabric,
// so busbw = algbw * (n - 1) / n, where algbw = payload bytes per rank / time. It makes all-to-all numbers
// comparable with the link bandwidth whatever the number of ranks; with one rank nothing crosses a link and
// busbw is 0.
double bus_bandwidth_factor(int ranks);

// One measured point: per-iteration times (the slowest rank's, ms) and what moved.
struct AlltoallPoint {
  std::string transport, dtype;
  int ranks = 0;
  std::int64_t payload_bytes = 0;   // per rank per iteration
  double skew = 0;                  // Zipf alpha
  std::vector<double> times_ms;     // per timed iteration, slowest rank
  std::int64_t wrong = 0;           // received bytes that did not match the pattern, all ranks, all checked rounds
  std::vector<std::int64_t> split_elements;   // per destination, one sender's split
  int element_bytes = 1;
  // {"transport", "ranks", "dtype", "payload_bytes", "skew", "iterations", "p50_ms", "p99_ms", "mean_ms", "min_ms",
  //  "max_ms", "algbw_gbps", "busbw_gbps", "moved_bytes", "hot_rank_recv_bytes", "hot_rank_recv_gbps",
  //  "split_gini", "split_max_over_mean", "wrong", "status"}
  nlohmann::json to_json() const;
};

}  // namespace aispflow::kernels::comm
