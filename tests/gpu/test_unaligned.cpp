// The unaligned path of ours.wgmma / ours.cluster (kernels/cuda/ours/padded_operands.hpp): rows that are not
// 16-byte aligned run on padded copies, timed with the GEMM. Every case here goes through the provider, so the
// record is the one a workflow gets: verified against the fp32 reference element by element, and `failed` when
// the padding is broken on purpose (the test hook PadSabotage).
#include <gtest/gtest.h>

#ifndef AISPFLOW_HAS_CUDA

TEST(Unaligned, NotBuilt) { GTEST_SKIP() << "no CUDA device: this aispflow was built without CUDA"; }

#else

#include <string>

#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/hopper_kernels.hpp"
#include "kernels/cuda/ours/ours_provider.hpp"
#include "kernels/cuda/ours/padded_operands.hpp"
#include "support/gpu_test.hpp"

namespace aispflow::kernels::cuda {
namespace {

using ours::PadSabotage;
using ours::row_padding;

using aispflow::test::shape_of;

// ---- no GPU needed ---------------------------------------------------------------------------------------

TEST(RowPadding, PadsOnlyTheOperandsWhoseRowsAreUnaligned) {
  // bf16 K = 1001: A and a K-major B get K = 1008; C's rows (N = 4096) are fine.
  auto p = row_padding(shape_of(1000, 4096, 1001), 2, true);
  EXPECT_EQ(p.k, 1008);
  EXPECT_EQ(p.n, 4096);
  EXPECT_TRUE(p.a && p.b && !p.c);
  // ... and a K x N B has rows of N: aligned, left alone (TMA zero-fills its rows past K).
  p = row_padding(shape_of(1000, 4096, 1001), 2, false);
  EXPECT_TRUE(p.a && !p.b && !p.c);
  // N = 4095: C always, B only when its rows are N long (layout nn).
  p = row_padding(shape_of(4096, 4095, 4096), 2, true);
  EXPECT_TRUE(!p.a && !p.b && p.c);
  EXPECT_EQ(p.n, 4096);
  p = row_padding(shape_of(4096, 4095, 4096), 2, false);
  EXPECT_TRUE(!p.a && p.b && p.c);
  // fp8: 16 elements per 16 bytes, so K = 1000 (aligned for bf16) is padded to 1008.
  p = row_padding(shape_of(1000, 1000, 1000), 1, true);
  EXPECT_EQ(p.k, 1008);
  EXPECT_TRUE(p.a && p.b && !p.c);
  EXPECT_FALSE(row_padding(shape_of(1000, 1000, 1000), 2, false).any());
  EXPECT_FALSE(row_padding(shape_of(4096, 4096, 4096), 1, true).any());
}

TEST(RowPadding, TheKernelNamesThePaddingAndThatItIsTimed) {
  const auto cluster = ours::cluster_kernels();
  const GemmCase both{shape_of(1000, 1000, 1001), "bf16", "nn", "none"};
  const std::string id = cluster.at(ours::pick_cluster(cluster, both))->identity(both);
  EXPECT_NE(id.find("padded to K=1008, N=1000 (pad copies timed: A in)"), std::string::npos) << id;
  const GemmCase n_only{shape_of(4096, 4095, 4096), "bf16", "nn", "none"};
  const std::string id_n = cluster.at(ours::pick_cluster(cluster, n_only))->identity(n_only);
  EXPECT_NE(id_n.find("padded to K=4096, N=4096 (pad copies timed: B in, C out)"), std::string::npos) << id_n;
  const GemmCase aligned{shape_of(4096, 4096, 4096), "bf16", "nn", "none"};
  EXPECT_EQ(cluster.at(ours::pick_cluster(cluster, aligned))->identity(aligned).find("padded"), std::string::npos);
}

// ---- on a Hopper GPU -------------------------------------------------------------------------------------

// The shared GPU fixture (tests/support/gpu_test.hpp: its short timing flushes L2, so that small problems get
// several operand copies and the last copy, each with its own operands and reference, shows that every launch
// pads its own copy), on Hopper only.
class UnalignedGpu : public aispflow::test::GpuTest {
 protected:
  void SetUp() override {
    aispflow::test::GpuTest::SetUp();
    if (IsSkipped()) return;
    const auto& sys = system_info();
    if (sys.devices.front().compute_capability() != 90)
      GTEST_SKIP() << "ours.wgmma / ours.cluster need sm_90a; found " << sys.devices.front().name;
  }
  GemmRecord run(const std::string& provider_name, GemmCase c) {
    auto provider = make_ours_provider(provider_name, context_fn());
    if (auto why = provider->unsupported(c)) ADD_FAILURE() << provider_name << " declined " << c.shape.name << ": " << *why;
    return provider->run(c, quick()).front();
  }
};

void expect_verified_and_padded(const GemmRecord& r) {
  EXPECT_EQ(r.status, "ok") << r.reason;
  EXPECT_TRUE(r.verified);
  EXPECT_LE(r.max_rel_err, r.tolerance);
  EXPECT_TRUE(r.time.has_value());
  EXPECT_NE(r.kernel.find("(pad copies timed"), std::string::npos) << r.kernel;
}

struct UnalignedCase {
  GemmShape shape;
  const char* dtype;
  const char* layout;
  const char* epilogue;
};

// K unaligned, N unaligned, both; bf16 and fp8; layouts nn and nt; the epilogues (a padded bias); batch; and a
// skinny case that runs split-K (the reduce kernel writes the padded C).
TEST_F(UnalignedGpu, EveryUnalignedCaseIsVerified) {
  const UnalignedCase cases[] = {
      {shape_of(1000, 1000, 1001), "bf16", "nn", "none"},        // K (and so A) only
      {shape_of(1000, 1000, 1001), "bf16", "nt", "none"},        // K: A and B
      {shape_of(1000, 1000, 1000), "fp8_e4m3", "nt", "none"},    // fp8 K = 1000: not a multiple of 16
      {shape_of(512, 4095, 1024), "bf16", "nt", "none"},         // N: C only
      {shape_of(512, 4095, 1024), "bf16", "nn", "none"},         // N: B and C
      {shape_of(300, 1001, 1001), "bf16", "nn", "bias_gelu"},    // both, with a padded bias
      {shape_of(300, 1001, 1001), "bf16", "nt", "bias"},
      {shape_of(300, 4095, 2001), "fp8_e4m3", "nt", "bias_gelu"},
      {shape_of(200, 1003, 1001, 3), "bf16", "nn", "bias"},      // batch: every matrix [batch][rows][cols]
      {shape_of(200, 1003, 1000, 3), "fp8_e4m3", "nt", "none"},
      {shape_of(8, 1001, 4001), "bf16", "nt", "bias_gelu"},      // decode: split-K into the padded C
      {shape_of(1, 1, 1), "bf16", "nn", "none"},
  };
  for (const auto& uc : cases)
    for (const char* provider : {"ours.cluster", "ours.wgmma"}) {
      const GemmCase c{uc.shape, uc.dtype, uc.layout, uc.epilogue};
      SCOPED_TRACE(std::string(provider) + " " + uc.shape.name + " " + c.label());
      expect_verified_and_padded(run(provider, c));
    }
}

// Every configuration autotune can pick gets the padded launch (each binds its own padded buffers).
TEST_F(UnalignedGpu, AutotuneVerifiesEveryPaddedCandidate) {
  GemmCase c{shape_of(1000, 1000, 1001), "bf16", "nn", "bias"};
  c.options = {{"autotune", true}};
  const GemmRecord r = run("ours.cluster", c);
  expect_verified_and_padded(r);
  ASSERT_TRUE(r.extra.contains("candidates"));
  EXPECT_GT(r.extra["candidates"].size(), 3u);
  for (const auto& cand : r.extra["candidates"]) {
    EXPECT_TRUE(cand["verified"].get<bool>()) << cand.dump();
    EXPECT_NE(cand["kernel"].get<std::string>().find("padded to K=1008"), std::string::npos) << cand.dump();
  }
}

// The check must see a broken padding: pad columns of K left unzeroed (they hold the NaN the buffers start with),
// or only half of C copied back. Both must come out `failed`, untimed.
TEST_F(UnalignedGpu, ABrokenPaddingFails) {
  struct Broken {
    PadSabotage::Mode mode;
    UnalignedCase uc;
  };
  const Broken broken[] = {
      {PadSabotage::keep_pad, {shape_of(1000, 1000, 1001), "bf16", "nt", "none"}},
      {PadSabotage::keep_pad, {shape_of(256, 1024, 1000), "fp8_e4m3", "nt", "none"}},
      {PadSabotage::half_c, {shape_of(512, 4095, 1024), "bf16", "nn", "none"}},
      {PadSabotage::half_c, {shape_of(200, 1003, 1001, 3), "bf16", "nt", "bias"}},
  };
  for (const auto& b : broken) {
    const GemmCase c{b.uc.shape, b.uc.dtype, b.uc.layout, b.uc.epilogue};
    SCOPED_TRACE(std::to_string(int(b.mode)) + " " + b.uc.shape.name + " " + c.label());
    GemmRecord r;
    {
      PadSabotage sabotage(b.mode);
      r = run("ours.cluster", c);
    }
    EXPECT_EQ(r.status, "failed") << r.kernel;
    EXPECT_FALSE(r.verified);
    EXPECT_FALSE(r.time.has_value());
    EXPECT_NE(r.reason.find("verification failed"), std::string::npos) << r.reason;
  }
  // The same cases without the hook pass: the failures above are the sabotage's.
  expect_verified_and_padded(run("ours.cluster", {shape_of(512, 4095, 1024), "bf16", "nn", "none"}));
}

}  // namespace
}  // namespace aispflow::kernels::cuda

#endif
