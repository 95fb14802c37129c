#include "kernels/common/alltoall.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace aispflow::kernels::comm {

std::vector<std::int64_t> zipf_split(std::int64_t payload_elements, int ranks, double alpha) {
  if (ranks < 1) throw std::invalid_argument("zipf_split: ranks must be >= 1");
  if (payload_elements < 0) throw std::invalid_argument("zipf_split: negative payload");
  if (!(alpha >= 0) || !std::isfinite(alpha)) throw std::invalid_argument("zipf_split: skew must be a finite alpha >= 0");
  std::vector<double> weight(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) weight[std::size_t(d)] = 1.0 / std::pow(double(d + 1), alpha);
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(ranks));
  std::vector<std::pair<double, int>> fractions;
  std::int64_t assigned = 0;
  for (int d = 0; d < ranks; ++d) {
    const double exact = double(payload_elements) * weight[std::size_t(d)] / total;
    counts[std::size_t(d)] = std::int64_t(std::floor(exact));
    assigned += counts[std::size_t(d)];
    fractions.push_back({exact - std::floor(exact), d});
  }
  // The remainder, one element each, to the largest fractional parts (ties: lower rank first).
  std::stable_sort(fractions.begin(), fractions.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::int64_t i = 0; i < payload_elements - assigned; ++i) ++counts[std::size_t(fractions[std::size_t(i)].second)];
  return counts;
}

double gini(const std::vector<std::int64_t>& counts) {
  if (counts.empty()) return 0;
  double sum = 0, diff = 0;
  for (auto a : counts) {
    sum += double(a);
    for (auto b : counts) diff += std::fabs(double(a) - double(b));
  }
  return sum > 0 ? diff / (2.0 * double(counts.size()) * sum) : 0.0;
}

double max_over_mean(const std::vector<std::int64_t>& counts) {
  if (counts.empty()) return 0;
  const double mean = double(std::accumulate(counts.begin(), counts.end(), std::int64_t(0))) / double(counts.size());
  return mean > 0 ? double(*std::max_element(counts.begin(), counts.end())) / mean : 0.0;
}

std::uint8_t pattern_byte(int source, int destination, std::int64_t index) {
  std::uint64_t z = (std::uint64_t(std::uint32_t(source)) << 40) ^ (std::uint64_t(std::uint32_t(destination)) << 20) ^
                    std::uint64_t(index) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return std::uint8_t(z ^ (z >> 31));
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("percentile of no values");
  std::sort(values.begin(), values.end());
  const double pos = q * double(values.size() - 1);
  const auto lo = std::size_t(std::floor(pos)), hi = std::size_t(std::ceil(pos));
  return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
}

double bus_bandwidth_factor(int ranks) { return ranks > 0 ? double(ranks - 1) / double(ranks) : 0.0; }

nlohmann::json AlltoallPoint::to_json() const {
  nlohmann::json j = {{"transport", transport}, {"ranks", ranks},   {"dtype", dtype},
                      {"payload_bytes", payload_bytes}, {"skew", skew}, {"iterations", times_ms.size()},
                      {"wrong", wrong}};
  // Bytes that crossed between ranks in one iteration: every sender's split minus what it kept for itself.
  std::int64_t moved = 0, hot_recv = 0;
  for (int r = 0; r < ranks && r < int(split_elements.size()); ++r) {
    const std::int64_t recv_bytes = split_elements[std::size_t(r)] * element_bytes * ranks;   // from every sender
    hot_recv = std::max(hot_recv, recv_bytes);
    moved += recv_bytes - split_elements[std::size_t(r)] * element_bytes;                   // less its own block
  }
  j["moved_bytes"] = moved;
  j["hot_rank_recv_bytes"] = hot_recv;
  j["split_gini"] = gini(split_elements);
  j["split_max_over_mean"] = max_over_mean(split_elements);
  if (times_ms.empty()) {
    j["status"] = "failed";
    return j;
  }
  const double p50 = percentile(times_ms, 0.5);
  j["p50_ms"] = p50;
  j["p99_ms"] = percentile(times_ms, 0.99);
  j["min_ms"] = *std::min_element(times_ms.begin(), times_ms.end());
  j["max_ms"] = *std::max_element(times_ms.begin(), times_ms.end());
  j["mean_ms"] = std::accumulate(times_ms.begin(), times_ms.end(), 0.0) / double(times_ms.size());
  const double seconds = p50 * 1e-3;
  const double algbw = seconds > 0 ? double(payload_bytes) / seconds / 1e9 : 0.0;
  j["algbw_gbps"] = algbw;
  j["busbw_gbps"] = algbw * bus_bandwidth_factor(ranks);
  j["moved_gbps"] = seconds > 0 ? double(moved) / seconds / 1e9 : 0.0;
  j["hot_rank_recv_gbps"] = seconds > 0 ? double(hot_recv) / seconds / 1e9 : 0.0;
  j["status"] = wrong == 0 ? "ok" : "failed";
  if (wrong != 0) j["reason"] = std::to_string(wrong) + " received bytes did not match what their senders sent";
  return j;
}

}  // namespace aispflow::kernels::comm
