// CUTLASS manifest (kernels/cuda/cutlass/manifest.def through kernels/common/cutlass_manifest.hpp): CUTLASS-style
// names, symbols CMake must reproduce, build sets, which rows a case can use, the alignment rule.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "kernels/common/cutlass_manifest.hpp"

namespace aispflow::kernels {
namespace {

const CutlassInstance* find(int arch, const std::string& dtype, const std::string& layout, int tm, int tn, int cm,
                            int cn, const std::string& schedule) {
  for (const auto& i : cutlass_manifest())
    if (i.arch == arch && i.dtype == dtype && i.layout == layout && i.tile_m == tm && i.tile_n == tn &&
        i.cluster_m == cm && i.cluster_n == cn && i.schedule == schedule)
      return &i;
  return nullptr;
}

TEST(CutlassManifest, NamesFollowCutlassConvention) {
  const auto* coop = find(90, "bf16", "nt", 128, 256, 2, 1, "cooperative");
  ASSERT_NE(coop, nullptr);
  EXPECT_EQ(coop->name(),
            "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_void_bf16_128x256x64_2x1x1_0_tnt_align8_"
            "warpspecialized_cooperative_epi_tma");
  const auto* nn = find(90, "bf16", "nn", 128, 128, 1, 1, "stream_k");
  ASSERT_NE(nn, nullptr);
  EXPECT_EQ(nn->name(),
            "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_ttt_align8_"
            "warpspecialized_cooperative_epi_tma_stream_k");
  const auto* fp8 = find(90, "fp8_e4m3", "nt", 128, 128, 1, 2, "pingpong");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(fp8->name(),
            "cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_void_bf16_128x128x128_1x2x1_0_tnt_align16_"
            "warpspecialized_pingpong_epi_tma");
  const auto* fp4 = find(100, "nvfp4", "nt", 128, 256, 1, 1, "tcgen05_1sm");
  ASSERT_NE(fp4, nullptr);
  EXPECT_EQ(fp4->name(), "cutlass3x_sm100_bstensorop_gemm_ue4m3xe2m1_ue4m3xe2m1_f32_void_bf16_128x256x256_1x1x1_0_tnt_align32_1sm");
  EXPECT_EQ(fp4->symbol(), "aispflow_cutlass_sm100_nvfp4_nt_128x256x256_1x1_tcgen05_1sm");
}

TEST(CutlassManifest, SwappedRowsNameTheTransposedProblem) {
  const auto* swap = find(90, "bf16", "nt", 128, 64, 1, 1, "stream_k_swap");
  ASSERT_NE(swap, nullptr);
  EXPECT_TRUE(swap->swap_ab());
  EXPECT_TRUE(swap->stream_k());
  EXPECT_EQ(swap->base_schedule(), "stream_k");
  // CUTLASS's A = our B (N x K row-major: t), its B = our A (K x M column-major: n), its D = C^T (column-major).
  EXPECT_EQ(swap->name(),
            "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_void_bf16_128x64x64_1x1x1_0_tnn_align8_"
            "warpspecialized_cooperative_epi_tma_stream_k");
  EXPECT_EQ(swap->symbol(), "aispflow_cutlass_sm90_bf16_nt_128x64x64_1x1_stream_k_swap");
  const auto* plain = find(90, "bf16", "nt", 128, 128, 1, 1, "cooperative");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->swap_ab());
  EXPECT_FALSE(plain->stream_k());
  // The decode rows are built by default (issue 22: cutlass.select on M = 64 needs them).
  EXPECT_TRUE(swap->in_build_set("default"));
  const auto* fp8 = find(90, "fp8_e4m3", "nt", 128, 64, 1, 1, "stream_k_swap");
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(fp8->in_build_set("default"));
  for (const char* dtype : {"bf16", "fp8_e4m3"}) {
    const auto* pp = find(90, dtype, "nt", 64, 64, 1, 1, "pingpong_swap");
    ASSERT_NE(pp, nullptr) << dtype;
    EXPECT_TRUE(pp->in_build_set("default")) << dtype;
    EXPECT_FALSE(pp->stream_k());
    EXPECT_NE(pp->name().find("_64x64x"), std::string::npos);
    EXPECT_NE(pp->name().find("_tnn_align"), std::string::npos);
    EXPECT_NE(pp->name().find("warpspecialized_pingpong_epi_tma"), std::string::npos);
  }
}

// The split counts the search tries (docs/cutlass.md, "Split-K"). Decode qkv_proj of gpt-oss-20b at batch 64
// (M 64, N 5120, K 2880) on 132 SMs through the swapped 128x64 rows: 40 tiles of 128 along N, 45 K tiles.
TEST(CutlassSplitK, DecodeShapesSplitToFillTheSms) {
  const auto* swap = find(90, "bf16", "nt", 128, 64, 1, 1, "stream_k_swap");
  ASSERT_NE(swap, nullptr);
  EXPECT_EQ(cutlass_split_counts(*swap, {"qkv", 64, 5120, 2880, 1, {}}, 132), (std::vector<int>{1, 3}));   // 3/2 = 1: dropped
  // attn_out (N 2880, K 4096): 23 tiles, 64 K tiles: 132 / 23 = 5, and 2.
  EXPECT_EQ(cutlass_split_counts(*swap, {"out", 64, 2880, 4096, 1, {}}, 132), (std::vector<int>{1, 5, 2}));
  // K too short to split: 1 tile of 128x64 over N = 128, K = 256 (4 K tiles): at most 4 / kMinKTilesPerSplit = 1.
  EXPECT_EQ(cutlass_split_counts(*swap, {"short_k", 64, 128, 256, 1, {}}, 132), (std::vector<int>{1}));
  // Enough tiles to fill half the SMs: CUTLASS's heuristic only.
  EXPECT_EQ(cutlass_split_counts(*swap, {"prefill", 4096, 4096, 4096, 1, {}}, 132), (std::vector<int>{1}));
  // The same decode shape through an unswapped stream-K row: tiles along M are 128 rows, along N 128 columns.
  const auto* sk = find(90, "bf16", "nn", 128, 128, 1, 1, "stream_k");
  ASSERT_NE(sk, nullptr);
  EXPECT_EQ(cutlass_split_counts(*sk, {"qkv", 64, 5120, 2880, 1, {}}, 132), (std::vector<int>{1, 3}));
  // Not a stream-K row: no split.
  const auto* coop = find(90, "bf16", "nt", 128, 128, 1, 1, "cooperative");
  ASSERT_NE(coop, nullptr);
  EXPECT_EQ(cutlass_split_counts(*coop, {"qkv", 64, 5120, 2880, 1, {}}, 132), (std::vector<int>{1}));
}

TEST(CutlassSearch, VariantsCoverSwizzleSplitsAndPromotionDefaultsFirst) {
  const auto* fp8 = find(90, "fp8_e4m3", "nt", 128, 192, 1, 2, "cooperative");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(cutlass_promotion_intervals(*fp8), (std::vector<int>{4, 8, 16}));
  const auto v = cutlass_variants(*fp8, {"sq", 4096, 4096, 4096, 1, {}}, 132, true);
  ASSERT_EQ(v.size(), 3 * kCutlassSwizzles.size());
  EXPECT_EQ(v.front().swizzle, 1);
  EXPECT_EQ(v.front().promotion, 4);   // CUTLASS's default first: the `pick` candidate of the search
  std::set<std::pair<int, int>> seen;
  for (const auto& x : v) EXPECT_TRUE(seen.insert({x.swizzle, x.promotion}).second);
  // `cutlass` runs CUTLASS's defaults only.
  const auto one = cutlass_variants(*fp8, {"sq", 4096, 4096, 4096, 1, {}}, 132, false);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().swizzle, 1);
  EXPECT_EQ(one.front().splits, 1);
  EXPECT_EQ(one.front().promotion, 4);
  // bf16 has no promotion; the swapped stream-K row adds its split count on a decode shape.
  const auto* swap = find(90, "bf16", "nt", 128, 64, 1, 1, "stream_k_swap");
  ASSERT_NE(swap, nullptr);
  EXPECT_EQ(cutlass_promotion_intervals(*swap), (std::vector<int>{0}));
  const auto d = cutlass_variants(*swap, {"qkv", 64, 5120, 2880, 1, {}}, 132, true);
  ASSERT_EQ(d.size(), 2 * 2 * kCutlassSwizzles.size());   // splits {1, 3} x reduction x swizzle
  EXPECT_EQ(d.front().splits, 1);
  EXPECT_FALSE(d.front().nondeterministic);   // CUTLASS's default reduction first
  EXPECT_EQ(d.back().splits, 3);
  EXPECT_TRUE(d.back().nondeterministic);
  std::set<std::tuple<int, int, bool>> distinct;
  for (const auto& x : d) EXPECT_TRUE(distinct.insert({x.swizzle, x.splits, x.nondeterministic}).second);
  // Only stream-K instances have a reduction to choose.
  for (const auto& x : v) EXPECT_FALSE(x.nondeterministic);
}

TEST(CutlassManifest, RowsAreUniqueAndWellFormed) {
  std::set<std::string> names, symbols;
  for (const auto& i : cutlass_manifest()) {
    SCOPED_TRACE(i.symbol());
    EXPECT_TRUE(names.insert(i.name()).second) << "duplicate name";
    EXPECT_TRUE(symbols.insert(i.symbol()).second) << "duplicate symbol";
    EXPECT_TRUE(i.arch == 90 || i.arch == 100);
    EXPECT_TRUE(i.set == "pick" || i.set == "default" || i.set == "all");
    // K tile = 128 bytes of operand: 64 bf16, 128 fp8, 256 fp4.
    const int bits = i.dtype == "bf16" ? 16 : i.dtype == "nvfp4" ? 4 : 8;
    EXPECT_EQ(i.tile_k * bits, 128 * 8);
    if (i.dtype != "bf16") {
      EXPECT_EQ(i.layout, "nt") << "8-bit and block-scaled operands are read K-major";
    }
    if (i.arch == 90) {
      EXPECT_TRUE(i.base_schedule() == "cooperative" || i.base_schedule() == "pingpong" ||
                  i.base_schedule() == "stream_k");
    }
    // Cooperative kernels split the tile's M over two consumer warpgroups of 64 rows (CUTLASS static_asserts it).
    if (i.base_schedule() == "cooperative" || i.base_schedule() == "stream_k") {
      EXPECT_GE(i.tile_m, 128);
    }
    if (i.arch == 100) {
      EXPECT_TRUE(i.schedule == "tcgen05_1sm" || i.schedule == "tcgen05_2sm");
    }
    if (i.schedule == "tcgen05_2sm") {
      EXPECT_EQ(i.cluster_m % 2, 0) << "2-SM UMMA runs on a cluster pair";
    }
  }
}

TEST(CutlassManifest, OnePickPerArchDtypeLayoutAndDefaultSetStaysSmall) {
  std::set<std::string> picks;
  int sm90_default = 0, sm100_default = 0, all = 0;
  for (const auto& i : cutlass_manifest()) {
    if (i.set == "pick") {
      EXPECT_TRUE(picks.insert(std::to_string(i.arch) + i.dtype + i.layout).second) << i.symbol();
    }
    if (i.in_build_set("default")) (i.arch == 90 ? sm90_default : sm100_default)++;
    all += i.in_build_set("all") ? 1 : 0;
    if (i.set == "all") {
      EXPECT_FALSE(i.in_build_set("default"));
    }
    EXPECT_EQ(i.in_build_set("pick"), i.set == "pick") << i.symbol();
  }
  EXPECT_TRUE(picks.count("90bf16nn") && picks.count("90bf16nt") && picks.count("90fp8_e4m3nt"));
  EXPECT_TRUE(picks.count("100bf16nt") && picks.count("100mxfp8nt") && picks.count("100nvfp4nt"));
  // The CI build-time budget (docs/cutlass.md): at most 16 sm90 instances by default.
  EXPECT_LE(sm90_default, 16);
  EXPECT_GE(sm90_default, 12);
  EXPECT_EQ(sm100_default, 4);
  EXPECT_EQ(all, int(cutlass_manifest().size()));
}

TEST(CutlassManifest, CandidatesFollowDtypeLayoutAndEpilogue) {
  GemmShape s{"x", 4096, 4096, 4096, 1, {}};
  for (const auto* i : cutlass_instances_for({s, "bf16", "nn"})) EXPECT_EQ(i->layout, "nn");
  EXPECT_FALSE(cutlass_instances_for({s, "bf16", "nn"}).empty());
  // fp8 nn runs on nt instances: GemmProblem stores fp8's B as N x K whatever the layout.
  const auto fp8 = cutlass_instances_for({s, "fp8_e4m3", "nn"});
  ASSERT_FALSE(fp8.empty());
  for (const auto* i : fp8) EXPECT_EQ(i->layout, "nt");
  EXPECT_TRUE(cutlass_instances_for({s, "bf16", "nn", "bias"}).empty());
  EXPECT_TRUE(cutlass_instances_for({s, "fp32", "nn"}).empty());
  const auto fp4 = cutlass_instances_for({s, "nvfp4", "nt"});
  ASSERT_EQ(fp4.size(), 1u);
  EXPECT_EQ(fp4.front()->arch, 100);
}

TEST(CutlassManifest, AlignmentRuleNamesTheBadDimension) {
  const auto* nn = find(90, "bf16", "nn", 128, 128, 1, 1, "cooperative");
  const auto* fp8 = find(90, "fp8_e4m3", "nt", 128, 128, 1, 1, "cooperative");
  ASSERT_TRUE(nn && fp8);
  EXPECT_FALSE(cutlass_alignment_problem(*nn, {"ok", 17, 2880, 2880, 1, {}}));   // any M
  const auto k = cutlass_alignment_problem(*nn, {"k", 17, 2880, 33, 1, {}});
  ASSERT_TRUE(k);
  EXPECT_NE(k->find("K = 33"), std::string::npos);
  const auto n = cutlass_alignment_problem(*nn, {"n", 16, 20, 64, 1, {}});
  ASSERT_TRUE(n);
  EXPECT_NE(n->find("N = 20"), std::string::npos);
  EXPECT_TRUE(cutlass_alignment_problem(*fp8, {"k8", 16, 64, 40, 1, {}}));      // fp8 needs K % 16
  EXPECT_FALSE(cutlass_alignment_problem(*fp8, {"k16", 16, 64, 48, 1, {}}));
}

}  // namespace
}  // namespace aispflow::kernels
