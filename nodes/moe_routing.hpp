#pragma once
// Skewed MoE routing for gemm_shapes' `routing:` parameter (docs/nodes.md): how many of a batch's tokens each
// expert receives when expert popularity follows a Zipf law, the way real routers are skewed (the study's MoE
// probes use alpha 1.0, 1.15 and 1.35).
#include <cstdint>
#include <vector>

namespace aispflow {

// Each of `tokens` tokens picks `top_k` distinct experts out of `experts`, expert of popularity rank r (1-based)
// with weight 1 / r^skew; which expert holds which rank is a random permutation. Deterministic for a seed
// (own sampling on std::mt19937_64, no implementation-defined distributions). The counts sum to
// tokens * top_k and none exceeds tokens. skew 0: uniform random routing. Throws std::invalid_argument on
// experts < 1, top_k outside [1, experts], tokens < 1 or skew < 0.
std::vector<std::int64_t> routed_tokens_per_expert(std::int64_t tokens, std::int64_t experts, std::int64_t top_k,
                                                   double skew, std::uint64_t seed);

}  // namespace aispflow
