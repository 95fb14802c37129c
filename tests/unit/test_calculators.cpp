// kv_cache and cost_per_token against values worked out by hand (the arithmetic is in the comments).
#include <gtest/gtest.h>

#include "nodes/node_factories.hpp"

namespace aispflow {
namespace {

json run_node(const NodeType& node, const json& params) {
  NodeContext ctx;
  ctx.node_name = node.name();
  ctx.params = params;
  return node.run(ctx).data;
}

// The issue's example: 80 layers, hidden 8192 (no heads given: multi-head attention, K/V width = hidden),
// 4096 tokens, batch 8, fp8, 192 GB GPU, 10% overhead, 40 GB reserved.
TEST(KvCache, IssueExampleByHand) {
  auto node = make_kv_cache_node();
  const json params = {{"layers", 80},         {"hidden", 8192},           {"tokens", 4096},
                       {"batch", 8},           {"dtype", "fp8"},           {"gpu_memory_gb", 192},
                       {"overhead_fraction", 0.1}, {"reserved_gb", 40}};
  EXPECT_EQ(node->check_params(params), "");
  const json r = run_node(*node, params);
  EXPECT_EQ(r["kv_dim"], 8192);
  // 2 (K and V) * 80 layers * 8192 * 1 byte = 1,310,720 bytes per token.
  EXPECT_EQ(r["bytes_per_token"].get<std::int64_t>(), 1310720);
  // 1,310,720 * 4096 tokens * 8 sequences = 42,949,672,960 bytes = 42.94967296 GB (GB = 1e9 bytes).
  EXPECT_EQ(r["total_bytes"].get<std::int64_t>(), 42949672960LL);
  EXPECT_NEAR(r["total_gb"].get<double>(), 42.94967296, 1e-9);
  // 192 * (1 - 0.1) - 40 = 132.8 GB available.
  EXPECT_NEAR(r["available_gb"].get<double>(), 132.8, 1e-9);
  EXPECT_TRUE(r["fits"].get<bool>());
  // floor(132.8e9 / (1,310,720 * 4096)) = floor(132.8e9 / 5,368,709,120) = floor(24.73...) = 24.
  EXPECT_EQ(r["max_batch"].get<std::int64_t>(), 24);
  // floor(132.8e9 / (1,310,720 * 8)) = floor(132.8e9 / 10,485,760) = floor(12664.79...) = 12664.
  EXPECT_EQ(r["max_tokens"].get<std::int64_t>(), 12664);
}

TEST(KvCache, GroupedQueryAttentionAndOtherDtypes) {
  auto node = make_kv_cache_node();
  // hidden 8192 with 64 heads and 8 KV heads: head_dim 128, K/V width 8 * 128 = 1024;
  // fp16: 2 * 80 * 1024 * 2 bytes = 327,680 bytes per token.
  json r = run_node(*node, {{"layers", 80}, {"hidden", 8192}, {"heads", 64}, {"kv_heads", 8}, {"tokens", 1000},
                            {"dtype", "fp16"}, {"gpu_memory_gb", 80}});
  EXPECT_EQ(r["kv_dim"], 1024);
  EXPECT_EQ(r["head_dim"], 128);
  EXPECT_EQ(r["bytes_per_token"].get<std::int64_t>(), 327680);
  // fp4 is half a byte: 2 * 80 * 8192 * 0.5 = 655,360.
  r = run_node(*node, {{"layers", 80}, {"hidden", 8192}, {"tokens", 16}, {"dtype", "fp4"}, {"gpu_memory_gb", 80}});
  EXPECT_EQ(r["bytes_per_token"].get<std::int64_t>(), 655360);
  // The llama-3-8b preset: 32 layers, 8 KV heads of 128; bf16: 2 * 32 * 8 * 128 * 2 = 131,072 per token;
  // 8192 tokens = 1,073,741,824 bytes.
  r = run_node(*node, {{"model", "llama-3-8b"}, {"tokens", 8192}, {"dtype", "bf16"}, {"gpu_memory_gb", 24}});
  EXPECT_EQ(r["bytes_per_token"].get<std::int64_t>(), 131072);
  EXPECT_EQ(r["total_bytes"].get<std::int64_t>(), 1073741824LL);
}

TEST(KvCache, DoesNotFitAndNothingAvailable) {
  auto node = make_kv_cache_node();
  // 42.95 GB of cache on a 48 GB card with 10% overhead and 10 GB reserved: 48*0.9-10 = 33.2 GB available.
  json r = run_node(*node, {{"layers", 80}, {"hidden", 8192}, {"tokens", 4096}, {"batch", 8}, {"dtype", "fp8"},
                            {"gpu_memory_gb", 48}, {"reserved_gb", 10}});
  EXPECT_FALSE(r["fits"].get<bool>());
  // floor(33.2e9 / 5,368,709,120) = 6 sequences of 4096 tokens.
  EXPECT_EQ(r["max_batch"].get<std::int64_t>(), 6);
  // Reserved memory above the GPU's: nothing fits, and the counts say so instead of going negative.
  r = run_node(*node, {{"layers", 2}, {"hidden", 64}, {"tokens", 1}, {"gpu_memory_gb", 10}, {"reserved_gb", 20}});
  EXPECT_FALSE(r["fits"].get<bool>());
  EXPECT_EQ(r["max_batch"].get<std::int64_t>(), 0);
  EXPECT_EQ(r["max_tokens"].get<std::int64_t>(), 0);
}

TEST(KvCache, BadInputNamesTheField) {
  auto node = make_kv_cache_node();
  const json ok = {{"layers", 80}, {"hidden", 8192}, {"tokens", 4096}, {"gpu_memory_gb", 192}};
  EXPECT_EQ(node->check_params(ok), "");
  auto with = [&](const char* field, json value) {
    json p = ok;
    p[field] = std::move(value);
    return node->check_params(p);
  };
  EXPECT_NE(with("dtype", "int3").find("dtype"), std::string::npos);
  EXPECT_NE(with("overhead_fraction", 1.0).find("overhead_fraction"), std::string::npos);
  EXPECT_NE(with("gpu_memory_gb", -1).find("gpu_memory_gb"), std::string::npos);
  EXPECT_NE(with("model", "nope").find("llama-3-8b"), std::string::npos);
  json no_tokens = ok;
  no_tokens.erase("tokens");
  EXPECT_NE(node->check_params(no_tokens).find("tokens"), std::string::npos);
  json no_dims = ok;
  no_dims.erase("hidden");
  EXPECT_NE(node->check_params(no_dims).find("kv_heads"), std::string::npos);
  json no_layers = ok;
  no_layers.erase("layers");
  EXPECT_NE(node->check_params(no_layers).find("layers"), std::string::npos);
  no_layers["tokens"] = 0;
  EXPECT_THROW(run_node(*node, no_layers), NodeError);
}

// The issue's example: 800 W, 1500 tokens/s, $0.16 per kWh, PUE 1.5.
TEST(CostPerToken, IssueExampleByHand) {
  auto node = make_cost_per_token_node();
  const json params = {{"power_w", 800}, {"tokens_per_s", 1500}, {"price_per_kwh", 0.16}, {"pue", 1.5}};
  EXPECT_EQ(node->check_params(params), "");
  const json r = run_node(*node, params);
  // 800 W * 1.5 = 1200 W at the facility; / 1500 tokens/s = 0.8 J per token.
  EXPECT_NEAR(r["joules_per_token"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(r["tokens_per_joule"].get<double>(), 1.25, 1e-12);
  // 0.8 J * 1e6 tokens = 800,000 J = 800,000 / 3,600,000 kWh = 0.2222... kWh.
  EXPECT_NEAR(r["kwh_per_million_tokens"].get<double>(), 0.222222222222, 1e-9);
  // 0.2222 kWh * $0.16 = $0.035555...
  EXPECT_NEAR(r["cost_per_million_tokens"].get<double>(), 0.0355555555556, 1e-9);
}

TEST(CostPerToken, GpusMultiplyPowerAndBadInputIsNamed) {
  auto node = make_cost_per_token_node();
  // 8 GPUs at 700 W, PUE 1.2, 10,000 tokens/s: 8*700*1.2 / 10000 = 0.672 J per token.
  const json r = run_node(*node, {{"power_w", 700}, {"gpus", 8}, {"tokens_per_s", 10000}, {"price_per_kwh", 0.1},
                                  {"pue", 1.2}});
  EXPECT_NEAR(r["joules_per_token"].get<double>(), 0.672, 1e-12);
  EXPECT_NEAR(r["facility_power_w"].get<double>(), 6720, 1e-9);
  EXPECT_NE(node->check_params({{"power_w", 800}, {"tokens_per_s", 1500}, {"price_per_kwh", 0.16}, {"pue", 0.9}})
                .find("pue"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"power_w", 800}, {"tokens_per_s", 0}, {"price_per_kwh", 0.16}}).find("tokens_per_s"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"power_w", 800}, {"tokens_per_s", 1}}).find("price_per_kwh"), std::string::npos);
  EXPECT_THROW(run_node(*node, {{"power_w", "lots"}, {"tokens_per_s", 1}, {"price_per_kwh", 1}}), NodeError);
}

}  // namespace
}  // namespace aispflow
