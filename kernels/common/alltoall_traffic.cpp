#include "kernels/common/alltoall_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace aispflow::comm {

std::vector<std::int64_t> zipf_split(std::int64_t elements_per_rank, int ranks, double alpha) {
  if (ranks <= 0) throw std::invalid_argument("zipf_split: ranks must be > 0");
  if (elements_per_rank < 0) throw std::invalid_argument("zipf_split: elements_per_rank must be >= 0");
  if (!(alpha >= 0) || !std::isfinite(alpha)) throw std::invalid_argument("zipf_split: alpha must be >= 0");
  std::vector<double> weight(ranks);
  for (int d = 0; d < ranks; ++d) weight[d] = 1.0 / std::pow(double(d + 1), alpha);
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<std::int64_t> out(ranks);
  std::vector<double> fraction(ranks);
  std::int64_t assigned = 0;
  for (int d = 0; d < ranks; ++d) {
    const double share = double(elements_per_rank) * weight[d] / total;
    out[d] = std::int64_t(std::floor(share));
    fraction[d] = share - double(out[d]);
    assigned += out[d];
  }
  // Remainder: one element each to the largest fractional parts; ties go to the lower (hotter) rank.
  std::vector<int> order(ranks);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return fraction[a] > fraction[b]; });
  for (std::int64_t left = elements_per_rank - assigned, i = 0; left > 0; --left, ++i) ++out[order[i % ranks]];
  return out;
}

TrafficMatrix traffic_matrix(std::int64_t elements_per_rank, int ranks, double alpha) {
  return TrafficMatrix(ranks, zipf_split(elements_per_rank, ranks, alpha));
}

std::vector<std::int64_t> receive_counts(const TrafficMatrix& m) {
  std::vector<std::int64_t> out(m.empty() ? 0 : m[0].size(), 0);
  for (const auto& row : m)
    for (std::size_t d = 0; d < row.size(); ++d) out[d] += row[d];
  return out;
}

double gini(const std::vector<std::int64_t>& values) {
  if (values.empty()) return 0;
  double sum = 0, diff = 0;
  for (auto a : values) {
    sum += double(a);
    for (auto b : values) diff += std::abs(double(a) - double(b));
  }
  if (sum <= 0) return 0;
  const double n = double(values.size());
  return diff / (2.0 * n * sum);   // sum |xi-xj| / (2 n^2 mean)
}

double max_over_mean(const std::vector<std::int64_t>& values) {
  if (values.empty()) return 0;
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  if (sum <= 0) return 0;
  return double(*std::max_element(values.begin(), values.end())) / (sum / double(values.size()));
}

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) throw std::invalid_argument("percentile of no samples");
  std::sort(samples.begin(), samples.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(samples.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, samples.size() - 1);
  return samples[lo] + (samples[hi] - samples[lo]) * (pos - double(lo));
}

double link_bound_seconds(const TrafficMatrix& m, int elem_bytes, const std::vector<std::vector<double>>& gbps) {
  const std::size_t n = m.size();
  if (gbps.size() < n) throw std::invalid_argument("pair bandwidth for " + std::to_string(gbps.size()) + " GPU(s), " +
                                                   std::to_string(n) + " ranks");
  auto seconds = [&](std::size_t s, std::size_t d) {
    if (m[s][d] == 0) return 0.0;
    const double b = d < gbps[s].size() ? gbps[s][d] : 0.0;
    if (!(b > 0))
      throw std::invalid_argument("no measured bandwidth from GPU " + std::to_string(s) + " to GPU " + std::to_string(d));
    return double(m[s][d]) * elem_bytes / (b * 1e9);
  };
  double worst = 0;
  for (std::size_t g = 0; g < n; ++g) {
    double out = 0, in = 0;
    for (std::size_t p = 0; p < n; ++p)
      if (p != g) {
        out += seconds(g, p);
        in += seconds(p, g);
      }
    worst = std::max({worst, out, in});
  }
  return worst;
}

double busbw_from_algbw(double algbw, int ranks) {
  // nccl-tests (doc/PERFORMANCE.md), all-to-all: busbw = algbw * (n-1)/n.
  return ranks <= 1 ? 0.0 : algbw * double(ranks - 1) / double(ranks);
}

}  // namespace aispflow::comm
