// CUTLASS manifest (kernels/cuda/cutlass/manifest.def through kernels/common/cutlass_manifest.hpp): CUTLASS-style
// names, symbols CMake must reproduce, build sets, which rows a case can use, the alignment rule.
#include <gtest/gtest.h>

#include <set>

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
    if (i.dtype != "bf16") EXPECT_EQ(i.layout, "nt") << "8-bit and block-scaled operands are read K-major";
    if (i.arch == 90) EXPECT_TRUE(i.schedule == "cooperative" || i.schedule == "pingpong" || i.schedule == "stream_k");
    if (i.arch == 100) EXPECT_TRUE(i.schedule == "tcgen05_1sm" || i.schedule == "tcgen05_2sm");
    if (i.schedule == "tcgen05_2sm") EXPECT_EQ(i.cluster_m % 2, 0) << "2-SM UMMA runs on a cluster pair";
  }
}

TEST(CutlassManifest, OnePickPerArchDtypeLayoutAndDefaultSetStaysSmall) {
  std::set<std::string> picks;
  int sm90_default = 0, sm100_default = 0, all = 0;
  for (const auto& i : cutlass_manifest()) {
    if (i.set == "pick") EXPECT_TRUE(picks.insert(std::to_string(i.arch) + i.dtype + i.layout).second) << i.symbol();
    if (i.in_build_set("default")) (i.arch == 90 ? sm90_default : sm100_default)++;
    all += i.in_build_set("all") ? 1 : 0;
    if (i.set == "all") EXPECT_FALSE(i.in_build_set("default"));
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
  GemmShape s{"x", 4096, 4096, 4096};
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
  EXPECT_FALSE(cutlass_alignment_problem(*nn, {"ok", 17, 2880, 2880}));   // any M
  const auto k = cutlass_alignment_problem(*nn, {"k", 17, 2880, 33});
  ASSERT_TRUE(k);
  EXPECT_NE(k->find("K = 33"), std::string::npos);
  const auto n = cutlass_alignment_problem(*nn, {"n", 16, 20, 64});
  ASSERT_TRUE(n);
  EXPECT_NE(n->find("N = 20"), std::string::npos);
  EXPECT_TRUE(cutlass_alignment_problem(*fp8, {"k8", 16, 64, 40}));      // fp8 needs K % 16
  EXPECT_FALSE(cutlass_alignment_problem(*fp8, {"k16", 16, 64, 48}));
}

}  // namespace
}  // namespace aispflow::kernels
