// Skewed MoE routing (nodes/moe_routing.hpp), grouped shapes (GemmShape::groups) and gemm_shapes' routing:
// and preset: parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "kernels/common/gemm.hpp"
#include "nodes/moe_routing.hpp"
#include "nodes/node_factories.hpp"

namespace aispflow {
namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t(0)); }

TEST(MoeRouting, CountsSumToTokensTimesTopKAndNoExpertExceedsTokens) {
  for (double skew : {0.0, 1.0, 1.15, 1.35, 3.0}) {
    SCOPED_TRACE(skew);
    const auto c = routed_tokens_per_expert(4096, 32, 4, skew, 7);
    ASSERT_EQ(c.size(), 32u);
    EXPECT_EQ(sum(c), 4096 * 4);
    for (auto x : c) EXPECT_LE(x, 4096);
  }
  // Every expert taken by every token: exactly `tokens` each.
  for (auto x : routed_tokens_per_expert(100, 4, 4, 1.35, 1)) EXPECT_EQ(x, 100);
}

TEST(MoeRouting, HigherSkewConcentratesTokens) {
  auto largest = [](double skew) {
    const auto c = routed_tokens_per_expert(4096, 32, 4, skew, 11);
    return *std::max_element(c.begin(), c.end());
  };
  const auto uniform = largest(0.0), a1 = largest(1.0), a135 = largest(1.35);
  EXPECT_LT(uniform, 4096 * 4 / 32 * 3 / 2);   // balanced-ish: within 1.5x of the mean (512)
  EXPECT_LT(uniform, a1);
  EXPECT_LT(a1, a135);
}

TEST(MoeRouting, DeterministicPerSeedAndSeedMatters) {
  EXPECT_EQ(routed_tokens_per_expert(512, 32, 4, 1.15, 3), routed_tokens_per_expert(512, 32, 4, 1.15, 3));
  EXPECT_NE(routed_tokens_per_expert(512, 32, 4, 1.15, 3), routed_tokens_per_expert(512, 32, 4, 1.15, 4));
}

TEST(MoeRouting, RejectsBadArguments) {
  EXPECT_THROW(routed_tokens_per_expert(10, 4, 5, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(routed_tokens_per_expert(10, 4, 2, -1.0, 1), std::invalid_argument);
  EXPECT_THROW(routed_tokens_per_expert(0, 4, 2, 1.0, 1), std::invalid_argument);
}

TEST(GroupedShape, FlopsAndBytesCountRealRowsOnly) {
  const auto s = kernels::GemmShape::from_json({{"name", "g"}, {"m", 7}, {"n", 8}, {"k", 16}, {"groups", {7, 0, 3}}});
  EXPECT_EQ(s.batch, 3);
  EXPECT_EQ(s.real_rows(), 10);
  EXPECT_DOUBLE_EQ(s.flops(), 2.0 * 10 * 8 * 16);   // not 2 * 7 * 3 * 8 * 16 (padded)
  // bf16: A and C over the 10 real rows, one 16 x 8 B per expert.
  EXPECT_DOUBLE_EQ(kernels::compulsory_bytes(s, "bf16"), (10.0 * 16 + 3 * 16 * 8) * 2 + 10.0 * 8 * 2);
  EXPECT_EQ(kernels::GemmShape::from_json(s.to_json()).groups, s.groups);
  EXPECT_THROW(kernels::GemmShape::from_json({{"m", 6}, {"n", 8}, {"k", 16}, {"groups", {7, 3}}}), std::invalid_argument);
  EXPECT_THROW(kernels::GemmShape::from_json({{"m", 7}, {"n", 8}, {"k", 16}, {"batch", 3}, {"groups", {7, 3}}}),
               std::invalid_argument);
  EXPECT_THROW(kernels::GemmShape::from_json({{"m", 7}, {"n", 8}, {"k", 16}, {"groups", json::array()}}),
               std::invalid_argument);
}

NodeOutput run_shapes(const json& params) {
  auto node = make_gemm_shapes_node();
  NodeContext ctx;
  ctx.node_name = "shapes";
  ctx.params = params;
  return node->run(ctx);
}

TEST(GemmShapesRouting, GptOssExpertShapesPerSkewWithGroups) {
  const auto out = run_shapes({{"model", "gpt-oss-20b"}, {"phases", {"prefill"}}, {"prefill_tokens", {4096}},
                               {"include", {"moe_up_gate", "moe_down"}},
                               {"routing", {{"skew", {1.0, 1.15, 1.35}}, {"seed", 5}}}});
  const auto& shapes = out.data.at("shapes");
  ASSERT_EQ(shapes.size(), 6u);   // 3 skews x 2 kinds; the balanced shapes are replaced
  for (const auto& s : shapes) {
    SCOPED_TRACE(s.dump());
    const auto groups = s.at("groups").get<std::vector<std::int64_t>>();
    ASSERT_EQ(groups.size(), 32u);
    EXPECT_EQ(sum(groups), 4096 * 4);
    EXPECT_EQ(s.at("m").get<std::int64_t>(), *std::max_element(groups.begin(), groups.end()));
    EXPECT_EQ(s.at("batch").get<std::int64_t>(), 32);
    EXPECT_DOUBLE_EQ(s.at("flops").get<double>(),
                     2.0 * 4096 * 4 * s.at("n").get<double>() * s.at("k").get<double>());
  }
  EXPECT_EQ(shapes[4].at("name"), "prefill_t4096_moe_up_gate_zipf1.35");
  EXPECT_EQ(shapes[0].at("routing").at("skew"), 1.0);
}

TEST(GemmShapesRouting, BadRoutingIsRejectedWithTheField) {
  auto error = [](const json& p) {
    try {
      run_shapes(p);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error({{"model", "gpt-oss-20b"}, {"routing", {{"skew", -1}}}}).find("skew"), std::string::npos);
  EXPECT_NE(error({{"model", "gpt-oss-20b"}, {"routing", {{"alpha", 1}}}}).find("unknown field 'alpha'"), std::string::npos);
  EXPECT_NE(error({{"model", "llama-3-8b"}, {"routing", {{"skew", 1}}}}).find("MoE"), std::string::npos);
}

TEST(GemmShapesPreset, KernelSelectorHasTheLabsFiveShapes) {
  const auto out = run_shapes({{"preset", {"kernel-selector"}}});
  const auto& shapes = out.data.at("shapes");
  ASSERT_EQ(shapes.size(), 5u);
  for (const auto& s : shapes) {   // m, n, k as the names say
    const std::string name = s.at("name");
    const std::string expect = "_m" + std::to_string(s.at("m").get<long>()) + "_n" + std::to_string(s.at("n").get<long>()) +
                               "_k" + std::to_string(s.at("k").get<long>());
    EXPECT_NE(name.find(expect), std::string::npos) << name;
  }
  EXPECT_THROW(run_shapes({{"preset", {"nope"}}}), std::exception);
}

}  // namespace
}  // namespace aispflow
