// CUTLASS providers on a GPU (label gpu; skips without one): cutlass and cutlass.select on odd shapes, every
// dtype and layout, output poisoned first (GemmProblem); the candidate search refusing a corrupted kernel;
// the grouped providers on a skewed grouping with an empty expert; Blackwell dtypes gated on Hopper.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#ifndef AISPFLOW_HAS_CUDA

TEST(Cutlass, NotBuilt) { GTEST_SKIP() << "no CUDA device: this aispflow was built without CUDA (AISPFLOW_CUDA=OFF or no nvcc)"; }

#else

#include "kernels/common/backend.hpp"
#include "kernels/common/cutlass_manifest.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cutlass/cutlass_provider.hpp"
#include "kernels/cuda/cutlass/registry.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/gemm_data.hpp"
#include "kernels/cuda/grouped_providers.hpp"
#include "support/gpu_test.hpp"
#include "support/quick_timing.hpp"

namespace aispflow::kernels {
namespace {

using namespace aispflow::kernels::cuda;

class CutlassGpu : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!cutlass_built()) GTEST_SKIP() << "this build has no CUTLASS: " << cutlass_build_info().dump();
    cc_ = system_info().devices.front().compute_capability();
  }
  int cc_ = 0;
};

GemmShape shape_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmShape s;
  s.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

TEST_F(CutlassGpu, DefaultInstanceVerifiedOnOddShapes) {
  if (cc_ != 90) GTEST_SKIP() << "the sm_90a instances need an sm_90 GPU; found sm_" << cc_;
  CutlassProvider provider(context_fn(), /*select=*/false);
  for (const char* dtype : {"bf16", "fp8_e4m3"})
    for (const char* layout : {"nn", "nt"})
      for (const auto& s : {shape_of(1, 5120, 2880), shape_of(17, 2880, 32), shape_of(4096, 2880, 2880),
                            shape_of(128, 8192, 8192), shape_of(333, 520, 4096)}) {
        SCOPED_TRACE(std::string(dtype) + " " + layout + " " + s.name);
        const auto r = provider.run(GemmCase{s, dtype, layout}, test::quick_timing()).front();
        ASSERT_EQ(r.status, "ok") << r.reason;
        EXPECT_TRUE(r.verified);
        EXPECT_LE(r.max_rel_err, r.tolerance);
        EXPECT_EQ(r.kernel.rfind("cutlass3x_sm90_tensorop_gemm_", 0), 0u) << r.kernel;
        EXPECT_NE(r.kernel.find(std::string(dtype) == "bf16" ? "128x256x64_2x1x1" : "128x128x128_1x1x1"), std::string::npos)
            << "the documented default (docs/cutlass.md): " << r.kernel;
        ASSERT_TRUE(r.time.has_value());
        EXPECT_GT(r.time->median_ms, 0.0);
      }
}

TEST_F(CutlassGpu, UnalignedShapeIsSkippedWithCutlassAnswer) {
  if (cc_ != 90) GTEST_SKIP() << "needs an sm_90 GPU";
  CutlassProvider select(context_fn(), /*select=*/true);
  const auto r = select.run(GemmCase{shape_of(17, 2880, 33), "bf16"}, test::quick_timing()).front();
  EXPECT_EQ(r.status, "skipped") << r.reason;
  EXPECT_FALSE(r.time.has_value());
  EXPECT_NE(r.reason.find("can_implement"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("K = 33"), std::string::npos) << r.reason;
}

TEST_F(CutlassGpu, SelectRecordsEveryCandidateAndTheWinnerFirst) {
  if (cc_ != 90) GTEST_SKIP() << "needs an sm_90 GPU";
  CutlassProvider select(context_fn(), /*select=*/true);
  for (const char* dtype : {"bf16", "fp8_e4m3"}) {
    SCOPED_TRACE(dtype);
    const auto r = select.run(GemmCase{shape_of(1024, 2880, 2880), dtype, "nt"}, test::quick_timing()).front();
    ASSERT_EQ(r.status, "ok") << r.reason;
    const auto& cands = r.extra.at("candidates");
    // Every manifest row is listed; a runnable one once per scheduler swizzle, a skipped one once.
    std::map<std::string, std::set<int>> swizzles;
    for (const auto& c : cands) swizzles[c.at("kernel")].insert(c.value("swizzle", 0));
    EXPECT_EQ(swizzles.size(), cutlass_instances_for(GemmCase{shape_of(1024, 2880, 2880), dtype, "nt"}).size());
    for (const auto& [kernel, seen] : swizzles)
      EXPECT_TRUE((seen == std::set<int>{0} || seen == std::set<int>{1, 2, 4, 8})) << kernel;
    const auto& winner = cands[std::size_t(r.extra.at("search").at("winner").get<int>())];
    EXPECT_EQ(r.extra.at("scheduler").at("swizzle"), winner.at("swizzle"));
    int timed = 0;
    for (const auto& c : cands) {
      if (c.at("status") == "ok") {
        EXPECT_TRUE(c.at("verified").get<bool>());
        EXPECT_TRUE(c.contains("screen_time_ms"));
        timed += c.contains("time_ms") ? 1 : 0;
      } else {
        EXPECT_TRUE(c.contains("reason"));
        EXPECT_FALSE(c.contains("screen_time_ms")) << "a candidate that did not verify must never be timed";
      }
      if (c.at("arch") == "sm_100a") {
        EXPECT_EQ(c.at("reason"), "requires sm_100 (tcgen05)");
      }
    }
    EXPECT_GE(timed, 1);
    EXPECT_EQ(r.kernel, cands[std::size_t(r.extra.at("search").at("winner").get<int>())].at("kernel"));
  }
}

// Decode (issue 22): the swapped rows run C^T = B * A^T, the stream-K ones also split-K with the provider's split
// count and either reduction; every such candidate must pass the same verification (a wrong transposition or a
// lost partial sum errs by order 1), and each fp8 promotion interval likewise. M = 40 is not a multiple of the 64-wide tile.
TEST_F(CutlassGpu, DecodeSwappedSplitKAndPromotionCandidatesVerify) {
  if (cc_ != 90) GTEST_SKIP() << "needs an sm_90 GPU";
  CutlassProvider select(context_fn(), /*select=*/true);
  for (const char* dtype : {"bf16", "fp8_e4m3"})
    for (const auto& s : {shape_of(64, 2880, 4096), shape_of(40, 5120, 2880)}) {
      SCOPED_TRACE(std::string(dtype) + " " + s.name);
      const auto r = select.run(GemmCase{s, dtype, "nt"}, test::quick_timing()).front();
      ASSERT_EQ(r.status, "ok") << r.reason;
      int split_k = 0, swapped = 0, nondeterministic = 0;
      std::set<int> promotions;
      for (const auto& c : r.extra.at("candidates")) {
        if (c.at("status") == "skipped") continue;
        EXPECT_EQ(c.at("status"), "ok") << c.dump();
        EXPECT_TRUE(c.value("verified", false)) << c.dump();
        if (c.contains("operands")) {
          ++swapped;
          EXPECT_NE(c.at("kernel").get<std::string>().find("_tnn_"), std::string::npos) << c.dump();
        }
        if (c.value("decomposition", "") == "split_k") {
          ++split_k;
          EXPECT_GT(c.at("splits").get<int>(), 1);
          nondeterministic += c.value("reduction", "") == "nondeterministic" ? 1 : 0;
        }
        if (c.contains("mma_promotion_interval")) promotions.insert(c.at("mma_promotion_interval").get<int>());
      }
      EXPECT_GT(swapped, 0) << "the decode rows are in the default build";
      EXPECT_GT(split_k, 0) << "tiles cover under half the SMs: the search must try split-K";
      EXPECT_GT(nondeterministic, 0) << "split-K with the unordered (atomic) reduction must be tried and verified";
      if (std::string(dtype) == "fp8_e4m3") {
        EXPECT_EQ(promotions, (std::set<int>{4, 8, 16}));
      }
      const auto& sched = r.extra.at("scheduler");
      const auto& winner = r.extra.at("candidates")[std::size_t(r.extra.at("search").at("winner").get<int>())];
      EXPECT_EQ(sched.value("splits", 1), winner.value("splits", 1)) << "the winner's split count is recorded";
    }
}

// The broken case of `verified`: a candidate whose output is corrupted after a correct run must fail
// verification and never be timed, while the same kernel uncorrupted wins.
TEST_F(CutlassGpu, CandidateSearchRejectsACorruptedKernel) {
  if (cc_ != 90) GTEST_SKIP() << "needs an sm_90 GPU";
  const GemmShape s = shape_of(256, 512, 512);
  const CutlassInstance* pick = nullptr;
  for (const auto* i : cutlass_instances_for(GemmCase{s, "bf16"}))
    if (i->set == "pick" && i->arch == 90) pick = i;
  ASSERT_NE(pick, nullptr);
  const auto* ops = cutlass_ops(*pick);
  ASSERT_NE(ops, nullptr);
  GemmProblem problem(s, *lt_dtype("bf16"), 7, ctx_->stream());
  cutlass_abi::GemmArgs args;
  args.m = 256;
  args.n = 512;
  args.k = 512;
  args.sm_count = system_info().devices.front().sm_count;
  DeviceBuffer ws(ops->workspace_bytes(args) + 256);
  args.workspace = ws.get();
  auto run = [&, args](cudaStream_t st, int copy) mutable {
    args.a = problem.a(copy);
    args.b = problem.b(copy);
    args.c = problem.c(copy);
    args.stream = st;
    if (ops->run(args) != cutlass_abi::kOk) throw CudaError("run failed");
  };
  std::vector<SearchCandidate> cands(2);
  cands[0].kernel = "corrupted";
  cands[0].launch = [&](cudaStream_t st, int copy) {
    run(st, copy);
    set_element(problem.c(copy), Elem::bf16, 100 * 512 + 7, 1e3f, st);
  };
  cands[1].kernel = "intact";
  cands[1].launch = run;
  const auto winner = run_candidate_search(cands, problem, ctx_->harness(), test::quick_timing());
  ASSERT_TRUE(winner.has_value());
  EXPECT_EQ(*winner, 1u);
  EXPECT_FALSE(cands[0].full.has_value());
  EXPECT_EQ(cands[0].status, "failed");
  EXPECT_FALSE(cands[0].verified);
  EXPECT_FALSE(cands[0].screen.has_value());
  EXPECT_NE(cands[0].reason.find("C[100][7]"), std::string::npos) << cands[0].reason;
}

TEST_F(CutlassGpu, BlackwellDtypesAreGatedOnHopper) {
  if (cc_ != 90) GTEST_SKIP() << "the gate under test is Hopper's";
  for (const char* name : {"cutlass", "cutlass.select"}) {
    CutlassProvider p(context_fn(), std::string(name) == "cutlass.select");
    for (const char* dtype : {"mxfp8", "nvfp4"}) {
      const auto r = p.run(GemmCase{shape_of(256, 256, 256), dtype, "nt"}, test::quick_timing()).front();
      EXPECT_EQ(r.status, "skipped");
      EXPECT_EQ(r.reason.rfind("requires sm_100 (tcgen05)", 0), 0u) << r.reason;
      EXPECT_FALSE(r.time.has_value());
    }
  }
}

TEST_F(CutlassGpu, GroupedProvidersVerifyEveryExpert) {
  if (cc_ != 90) GTEST_SKIP() << "cutlass.grouped is built for sm_90a";
  GemmShape s = shape_of(130, 512, 256);
  s.name = "grouped";
  s.groups = {0, 5, 130, 1, 64, 17};
  s.batch = 6;
  for (auto method : {GroupedMethod::cutlass, GroupedMethod::cublas_grouped, GroupedMethod::per_expert,
                      GroupedMethod::padded}) {
    auto p = make_grouped_provider(method, context_fn());
    SCOPED_TRACE(p->name());
    const auto r = p->run(GemmCase{s, "bf16"}, test::quick_timing()).front();
    ASSERT_EQ(r.status, "ok") << r.reason;
    EXPECT_TRUE(r.verified);
    EXPECT_EQ(r.shape.real_rows(), 217);
    EXPECT_DOUBLE_EQ(r.shape.flops(), 2.0 * 217 * 512 * 256);
  }
  // Plain shapes are not grouped work; fp8 is not offered.
  auto g = make_grouped_provider(GroupedMethod::cutlass, context_fn());
  EXPECT_EQ(g->run(GemmCase{shape_of(64, 64, 64), "bf16"}, test::quick_timing()).front().status, "skipped");
  EXPECT_EQ(g->run(GemmCase{s, "fp8_e4m3"}, test::quick_timing()).front().status, "skipped");
}

// Per-group verification sees a corrupted row and an unwritten expert (the broken cases of grouped `verified`).
TEST_F(CutlassGpu, PerGroupCheckCatchesCorruptedAndUnwrittenRows) {
  GemmShape padded = shape_of(64, 256, 128);
  padded.batch = 3;
  GemmProblem problem(padded, *lt_dtype("bf16"), 9, ctx_->stream());
  problem.poison_output(ctx_->stream());
  const auto unwritten = problem.check_output_range(ctx_->stream(), 64 * 256, 10 * 256);
  EXPECT_EQ(unwritten.non_finite, 10 * 256);
  // Write the reference itself into expert 1's first 10 rows: those pass, expert 2 stays unwritten.
  std::vector<float> ref(10 * 256);
  ASSERT_EQ(cudaMemcpy(ref.data(), problem.reference() + 64 * 256, ref.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < ref.size(); ++i)
    set_element(problem.c(), Elem::bf16, std::int64_t(64 * 256 + i), ref[i], ctx_->stream());
  EXPECT_EQ(problem.check_output_range(ctx_->stream(), 64 * 256, 10 * 256).non_finite, 0);
  set_element(problem.c(), Elem::bf16, 64 * 256 + 3 * 256 + 5, ref[3 * 256 + 5] * 1.1f + 1.0f, ctx_->stream());
  EXPECT_GT(problem.check_output_range(ctx_->stream(), 64 * 256, 10 * 256).max_rel_err, problem.tolerance());
  EXPECT_GT(problem.check_output_range(ctx_->stream(), 2 * 64 * 256, 256).non_finite, 0);
}

TEST_F(CutlassGpu, HardwareInfoReportsCutlass) {
  auto backend = make_cuda_backend();
  const auto info = backend->hardware_info().at("cutlass");
  EXPECT_EQ(info.at("version"), "4.2.0");
  EXPECT_GT(info.at("instances_compiled").at("sm_90a").get<int>(), 0);
}

}  // namespace
}  // namespace aispflow::kernels

#endif
