// gemm_shapes: the GEMMs of gpt-oss-20b and llama-3-8b checked against tables computed by hand from the
// model cards (the arithmetic is written next to each number), tensor parallelism, and bad input.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "nodes/model_presets.hpp"
#include "nodes/node_factories.hpp"

namespace aispflow {
namespace {

NodeOutput run_shapes(const json& params) {
  auto node = make_gemm_shapes_node();
  NodeContext ctx;
  ctx.node_name = "shapes";
  ctx.params = params;
  return node->run(ctx);
}

std::map<std::string, json> by_name(const NodeOutput& out) {
  std::map<std::string, json> m;
  for (const auto& s : out.data.at("shapes")) m[s.at("name").get<std::string>()] = s;
  return m;
}

struct Expected {
  const char* name;
  std::int64_t m, n, k, batch;
};

void expect_table(const std::map<std::string, json>& shapes, const std::vector<Expected>& table) {
  for (const auto& e : table) {
    SCOPED_TRACE(e.name);
    ASSERT_TRUE(shapes.count(e.name)) << "missing shape " << e.name;
    const json& s = shapes.at(e.name);
    EXPECT_EQ(s.at("m").get<std::int64_t>(), e.m);
    EXPECT_EQ(s.at("n").get<std::int64_t>(), e.n);
    EXPECT_EQ(s.at("k").get<std::int64_t>(), e.k);
    EXPECT_EQ(s.at("batch").get<std::int64_t>(), e.batch);
    EXPECT_DOUBLE_EQ(s.at("flops").get<double>(), 2.0 * double(e.m) * double(e.n) * double(e.k) * double(e.batch));
  }
}

// gpt-oss-20b: hidden 2880, 64 query heads, 8 KV heads, head_dim 64, 32 experts, top-4, expert width 2880,
// vocab 201088. Every MLP is MoE, so there is no dense mlp_up_gate / mlp_down.
TEST(GemmShapes, GptOss20bDecodeAndPrefillMatchHandTable) {
  const auto out = run_shapes({{"model", "gpt-oss-20b"}});
  const auto shapes = by_name(out);
  // 2 prefill lengths + 4 decode batches, 6 GEMM kinds each (qkv, attn_out, router, moe up/gate, moe down, lm_head).
  EXPECT_EQ(out.data["shapes"].size(), 36u);
  expect_table(shapes, {
      // decode, batch 8: M = 8 tokens.
      {"decode_b8_qkv_proj", 8, 5120, 2880, 1},      // N = (64 + 2*8) * 64 = 5120
      {"decode_b8_attn_out", 8, 2880, 4096, 1},      // K = 64 * 64 = 4096
      {"decode_b8_router", 8, 32, 2880, 1},          // N = 32 experts
      {"decode_b8_moe_up_gate", 1, 5760, 2880, 32},  // M = ceil(8*4/32) = 1, N = 2*2880, one GEMM per expert
      {"decode_b8_moe_down", 1, 2880, 2880, 32},
      {"decode_b8_lm_head", 8, 201088, 2880, 1},
      // decode, batch 1: ceil(1*4/32) = 1 row per expert (the minimum).
      {"decode_b1_qkv_proj", 1, 5120, 2880, 1},
      {"decode_b1_moe_up_gate", 1, 5760, 2880, 32},
      // decode, batch 64: 64*4/32 = 8 rows per expert; batch 128: 16.
      {"decode_b64_moe_down", 8, 2880, 2880, 32},
      {"decode_b128_moe_up_gate", 16, 5760, 2880, 32},
      {"decode_b128_attn_out", 128, 2880, 4096, 1},
      // prefill: M = prompt tokens; experts see 512*4/32 = 64 and 4096*4/32 = 512 rows.
      {"prefill_t512_qkv_proj", 512, 5120, 2880, 1},
      {"prefill_t512_moe_up_gate", 64, 5760, 2880, 32},
      {"prefill_t4096_moe_down", 512, 2880, 2880, 32},
      {"prefill_t4096_lm_head", 4096, 201088, 2880, 1},
  });
  EXPECT_EQ(shapes.count("decode_b8_mlp_up_gate"), 0u) << "an all-MoE model has no dense MLP";
  // flops of one hand-checked entry: 2 * 1 * 5760 * 2880 * 32 = 1,061,683,200.
  EXPECT_DOUBLE_EQ(shapes.at("decode_b8_moe_up_gate")["flops"].get<double>(), 1061683200.0);
  const json& s = shapes.at("decode_b8_qkv_proj");
  EXPECT_EQ(s["kind"], "qkv_proj");
  EXPECT_EQ(s["phase"], "decode");
  EXPECT_EQ(s["tokens"], 8);
  EXPECT_EQ(s["model"], "gpt-oss-20b");
  EXPECT_EQ(s["per_forward"], 24);   // once per layer
  EXPECT_EQ(shapes.at("decode_b8_lm_head")["per_forward"], 1);
}

// llama-3-8b: hidden 4096, 32 heads, 8 KV heads, head_dim 128, dense MLP width 14336, vocab 128256.
TEST(GemmShapes, Llama3_8bMatchesHandTable) {
  const auto shapes = by_name(run_shapes({{"model", "llama-3-8b"}}));
  expect_table(shapes, {
      {"decode_b1_qkv_proj", 1, 6144, 4096, 1},        // (32 + 2*8) * 128 = 6144
      {"decode_b1_attn_out", 1, 4096, 4096, 1},        // K = 32 * 128
      {"decode_b1_mlp_up_gate", 1, 28672, 4096, 1},    // gate + up fused: 2 * 14336
      {"decode_b1_mlp_down", 1, 4096, 14336, 1},
      {"decode_b1_lm_head", 1, 128256, 4096, 1},
      {"prefill_t4096_mlp_down", 4096, 4096, 14336, 1},
      {"prefill_t512_qkv_proj", 512, 6144, 4096, 1},
  });
  EXPECT_EQ(shapes.count("decode_b1_router"), 0u) << "a dense model has no router";
  EXPECT_EQ(shapes.size(), 6u * 5u);
}

TEST(GemmShapes, TensorParallelTwoHalvesTheShardedDimension) {
  const auto oss = by_name(run_shapes({{"model", "gpt-oss-20b"}, {"tp", 2}, {"phases", {"decode"}}, {"decode_batch", {8}}}));
  expect_table(oss, {
      {"decode_b8_qkv_proj_tp2", 8, 2560, 2880, 1},      // (64/2 + 2 * 8/2) * 64 = 40 * 64: column-parallel N
      {"decode_b8_attn_out_tp2", 8, 2880, 2048, 1},      // row-parallel K = 32 * 64
      {"decode_b8_router_tp2", 8, 32, 2880, 1},          // replicated
      {"decode_b8_moe_up_gate_tp2", 1, 2880, 2880, 32},  // N = 2 * 2880 / 2
      {"decode_b8_moe_down_tp2", 1, 2880, 1440, 32},     // K = 2880 / 2
      {"decode_b8_lm_head_tp2", 8, 100544, 2880, 1},     // vocab-parallel 201088 / 2
  });
  const auto llama = by_name(run_shapes({{"model", "llama-3-8b"}, {"tp", 2}, {"phases", {"decode"}}, {"decode_batch", {1}}}));
  expect_table(llama, {
      {"decode_b1_qkv_proj_tp2", 1, 3072, 4096, 1},      // (16 + 2*4) * 128
      {"decode_b1_attn_out_tp2", 1, 4096, 2048, 1},
      {"decode_b1_mlp_up_gate_tp2", 1, 14336, 4096, 1},
      {"decode_b1_mlp_down_tp2", 1, 4096, 7168, 1},
      {"decode_b1_lm_head_tp2", 1, 64128, 4096, 1},
  });
  EXPECT_EQ(llama.at("decode_b1_qkv_proj_tp2")["tp"], 2);
}

TEST(GemmShapes, MoreRanksThanKvHeadsReplicatesOneKvHeadPerRank) {
  // tp 16 > 8 KV heads: each rank holds 64/16 = 4 query heads and one (replicated) KV head: (4 + 2) * 64.
  const auto s = by_name(run_shapes({{"model", "gpt-oss-20b"}, {"tp", 16}, {"phases", {"decode"}},
                                     {"decode_batch", {1}}, {"include", {"qkv_proj"}}}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.at("decode_b1_qkv_proj_tp16")["n"], 384);
}

TEST(GemmShapes, IncludeConfigOverridesAndExplicitShapes) {
  // Fewer experts: ceil(8*4/16) = 2 rows per expert; the name says the preset was changed.
  const auto out = run_shapes({{"model", "gpt-oss-20b"}, {"config", {{"experts", 16}}}, {"phases", {"decode"}},
                               {"decode_batch", {8}}, {"include", {"moe_up_gate"}}});
  const auto s = by_name(out);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.at("decode_b8_moe_up_gate")["m"], 2);
  EXPECT_EQ(s.at("decode_b8_moe_up_gate")["batch"], 16);
  EXPECT_EQ(s.at("decode_b8_moe_up_gate")["model"], "gpt-oss-20b+config");

  // A model described only by config.
  const auto custom = by_name(run_shapes({{"config", {{"hidden", 1024}, {"heads", 8}, {"intermediate", 4096},
                                                       {"layers", 2}}},
                                          {"phases", {"prefill"}}, {"prefill_tokens", {128}},
                                          {"include", {"qkv_proj", "mlp_down"}}}));
  expect_table(custom, {{"prefill_t128_qkv_proj", 128, 3072, 1024, 1},   // head_dim 1024/8, kv_heads = heads
                        {"prefill_t128_mlp_down", 128, 1024, 4096, 1}});

  // Explicit shapes alone are the output, as given.
  const auto given = run_shapes({{"shapes", {{{"name", "square"}, {"m", 64}, {"n", 32}, {"k", 16}}}}});
  ASSERT_EQ(given.data["shapes"].size(), 1u);
  EXPECT_EQ(given.data["shapes"][0]["name"], "square");
  EXPECT_EQ(given.data["shapes"][0]["n"], 32);
  EXPECT_DOUBLE_EQ(given.data["shapes"][0]["flops"].get<double>(), 2.0 * 64 * 32 * 16);
}

TEST(GemmShapes, BadInputIsReportedByCheckParamsWithTheField) {
  auto node = make_gemm_shapes_node();
  const std::string unknown = node->check_params({{"model", "gpt-oss-21b"}});
  EXPECT_NE(unknown.find("gpt-oss-21b"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("gpt-oss-20b"), std::string::npos) << "lists the presets: " << unknown;
  EXPECT_NE(unknown.find("llama-3-8b"), std::string::npos) << unknown;
  EXPECT_THROW(run_shapes({{"model", "gpt-oss-21b"}}), NodeError);

  EXPECT_NE(node->check_params({{"model", "gpt-oss-20b"}, {"tp", 3}}).find("tp: 3 does not divide heads"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"model", "llama-3-8b"}, {"phases", {"decoding"}}}).find("phases"), std::string::npos);
  EXPECT_NE(node->check_params({{"model", "llama-3-8b"}, {"include", {"qkv"}}}).find("include"), std::string::npos);
  EXPECT_NE(node->check_params({{"model", "llama-3-8b"}, {"decode_batch", {0}}}).find("decode_batch"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"model", "llama-3-8b"}, {"config", {{"hiden", 1}}}}).find("hiden"), std::string::npos);
  EXPECT_NE(node->check_params(json::object()).find("model"), std::string::npos);
  // A config without vocab cannot size the LM head unless lm_head is left out.
  const json no_vocab = {{"config", {{"hidden", 256}, {"heads", 4}, {"intermediate", 512}}}};
  EXPECT_NE(node->check_params(no_vocab).find("vocab"), std::string::npos);
  json without_head = no_vocab;
  without_head["include"] = {"qkv_proj", "attn_out", "mlp_up_gate", "mlp_down"};
  EXPECT_EQ(node->check_params(without_head), "");
  // Duplicate names would make records ambiguous.
  const json dup = {{"shapes", {{{"name", "a"}, {"m", 1}, {"n", 1}, {"k", 1}}, {{"name", "a"}, {"m", 2}, {"n", 2}, {"k", 2}}}}};
  EXPECT_NE(node->check_params(dup).find("twice"), std::string::npos);
  // Unresolved ${refs} are checked later, once substituted.
  EXPECT_EQ(node->check_params({{"model", "${pick.model}"}}), "");
  EXPECT_EQ(node->check_params({{"model", "gpt-oss-20b"}}), "");
}

TEST(ModelPresets, PresetsHaveTheIssueNumbers) {
  const auto oss = find_model_preset("gpt-oss-20b");
  ASSERT_TRUE(oss);
  EXPECT_EQ(oss->hidden, 2880);
  EXPECT_EQ(oss->layers, 24);
  EXPECT_EQ(oss->vocab, 201088);
  const auto llama = find_model_preset("llama-3-8b");
  ASSERT_TRUE(llama);
  EXPECT_EQ(llama->intermediate, 14336);
  EXPECT_EQ(llama->effective_head_dim(), 128);
  EXPECT_FALSE(find_model_preset("nope"));
}

}  // namespace
}  // namespace aispflow
