#include "nodes/moe_routing.hpp"

#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace aispflow {

std::vector<std::int64_t> routed_tokens_per_expert(std::int64_t tokens, std::int64_t experts, std::int64_t top_k,
                                                   double skew, std::uint64_t seed) {
  if (experts < 1) throw std::invalid_argument("routing: experts must be >= 1");
  if (top_k < 1 || top_k > experts)
    throw std::invalid_argument("routing: top_k = " + std::to_string(top_k) + " must be in [1, experts = " +
                                std::to_string(experts) + "]");
  if (tokens < 1) throw std::invalid_argument("routing: tokens must be >= 1");
  if (!(skew >= 0) || !std::isfinite(skew)) throw std::invalid_argument("routing: skew must be a number >= 0");
  std::mt19937_64 rng(seed);
  auto uniform = [&rng] { return double(rng() >> 11) * 0x1p-53; };   // [0, 1)
  // Popularity ranks assigned to experts by a Fisher-Yates shuffle (no std::shuffle: its algorithm is unspecified).
  std::vector<std::int64_t> rank(static_cast<std::size_t>(experts));
  std::iota(rank.begin(), rank.end(), 1);
  for (std::size_t i = rank.size() - 1; i > 0; --i) std::swap(rank[i], rank[std::size_t(rng() % (i + 1))]);
  std::vector<double> weight(static_cast<std::size_t>(experts));
  for (std::size_t e = 0; e < weight.size(); ++e) weight[e] = 1.0 / std::pow(double(rank[e]), skew);

  std::vector<std::int64_t> counts(static_cast<std::size_t>(experts), 0);
  std::vector<char> taken(static_cast<std::size_t>(experts));
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::fill(taken.begin(), taken.end(), 0);
    double left = std::accumulate(weight.begin(), weight.end(), 0.0);
    for (std::int64_t j = 0; j < top_k; ++j) {   // top_k distinct experts: sampling without replacement
      double x = uniform() * left;
      std::size_t pick = weight.size();
      for (std::size_t e = 0; e < weight.size(); ++e) {
        if (taken[e]) continue;
        pick = e;   // the last free expert absorbs rounding at the end of the range
        if ((x -= weight[e]) < 0) break;
      }
      taken[pick] = 1;
      left -= weight[pick];
      ++counts[pick];
    }
  }
  return counts;
}

}  // namespace aispflow
