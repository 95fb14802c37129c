// The GEMM checks that issue 24 found blind, each fed its broken case on a GPU (label gpu; skips without one):
//   - operand copies: every copy holds its own data, so a launch that reads copy 0 whatever copy it is given
//     (OperandCopySabotage) comes out `failed` in every provider family: ours, CUTLASS, cuBLASLt, grouped;
//   - the epilogue on its own: a kernel applying ReLU instead of GELU at K = 8192, which the reference check's
//     bf16 tolerance cannot see, comes out `failed`; cuBLASLt's own bias_gelu passes it;
//   - the reference's GELU on the device against independently computed values (tests/support/gelu_values.hpp);
//   - the sweep winner's time comes from its own confirmation round; grouped and padded records share the
//     cold-L2 treatment.
#include <gtest/gtest.h>

#ifndef AISPFLOW_HAS_CUDA

TEST(GemmChecks, NotBuilt) { GTEST_SKIP() << "no CUDA device: this aispflow was built without CUDA"; }

#else

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cublaslt_provider.hpp"
#include "kernels/cuda/cutlass/cutlass_provider.hpp"
#include "kernels/cuda/cutlass/registry.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/gemm_data.hpp"
#include "kernels/cuda/grouped_providers.hpp"
#include "kernels/cuda/ours/ours_provider.hpp"
#include "kernels/cuda/ours/unfused.hpp"
#include "support/gelu_values.hpp"
#include "support/gpu_test.hpp"

namespace aispflow::kernels {
namespace {

using namespace aispflow::kernels::cuda;

class GemmChecks : public test::GpuTest {
 protected:
  int cc() const { return system_info().devices.front().compute_capability(); }
};

GemmShape shape_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmShape s;
  s.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

GemmShape grouped_shape() {
  GemmShape s = shape_of(130, 512, 256);
  s.name = "grouped";
  s.groups = {0, 5, 130, 1, 64, 17};
  s.batch = 6;
  return s;
}

// One provider's record for `c`, run as is and with every launch bound to copy 0: ok and verified on many cold
// copies as is; `failed` on the last copy (its own data, its own reference) under the sabotage, never timed.
void expect_copy0_binding_fails(GemmProvider& provider, const GemmCase& c, const TimingPolicy& timing) {
  SCOPED_TRACE(provider.name() + " " + c.shape.name + " " + c.label());
  const GemmRecord right = provider.run(c, timing).front();
  ASSERT_EQ(right.status, "ok") << right.reason;
  EXPECT_TRUE(right.verified);
  ASSERT_TRUE(right.extra.contains("operand_copies")) << "too few copies for the test to mean anything";
  EXPECT_GT(right.extra["operand_copies"]["copies"].get<int>(), 1);
  OperandCopySabotage copy0;
  const GemmRecord wrong = provider.run(c, timing).front();
  EXPECT_EQ(wrong.status, "failed") << wrong.kernel;
  EXPECT_FALSE(wrong.verified);
  EXPECT_FALSE(wrong.time.has_value());
  EXPECT_NE(wrong.reason.find("on operand copy"), std::string::npos) << wrong.reason;
}

TEST_F(GemmChecks, BindingEveryLaunchToCopy0FailsInEveryProviderFamily) {
  const TimingPolicy timing = quick();   // L2 flushed: the providers keep operand copies
  ASSERT_TRUE(timing.flush_cache);
  const GemmShape small = shape_of(256, 512, 256);
  {  // ours: the plain CUDA kernel everywhere, the TMA/wgmma one on Hopper (tensor maps per copy)
    auto tiled = make_ours_provider("ours.tiled", context_fn());
    expect_copy0_binding_fails(*tiled, GemmCase{small, "bf16", "nt", "bias"}, timing);
    auto cluster = make_ours_provider("ours.cluster", context_fn());
    if (!cluster->unsupported(GemmCase{small, "bf16", "nt", "bias"}))
      expect_copy0_binding_fails(*cluster, GemmCase{small, "bf16", "nt", "bias"}, timing);
  }
  {  // cuBLASLt
    CublasLtProvider lt(context_fn(), /*sweep=*/false);
    expect_copy0_binding_fails(lt, GemmCase{small, "bf16"}, timing);
    expect_copy0_binding_fails(lt, GemmCase{small, "fp8_e4m3"}, timing);
  }
  if (cutlass_built() && cc() == 90) {  // CUTLASS
    CutlassProvider cutlass(context_fn(), /*select=*/false);
    expect_copy0_binding_fails(cutlass, GemmCase{small, "bf16", "nt"}, timing);
  } else {
    std::printf("CUTLASS family not run here: %s\n", cutlass_built() ? "not an sm_90 GPU" : "no CUTLASS in this build");
  }
  // grouped (and padded, which is cuBLASLt's batched GEMM)
  for (auto method : {GroupedMethod::cutlass, GroupedMethod::cublas_grouped, GroupedMethod::per_expert,
                      GroupedMethod::padded}) {
    auto p = make_grouped_provider(method, context_fn());
    if (auto why = p->unsupported(GemmCase{grouped_shape(), "bf16"})) {
      std::printf("%s not run here: %s\n", p->name().c_str(), why->c_str());
      continue;
    }
    expect_copy0_binding_fails(*p, GemmCase{grouped_shape(), "bf16"}, timing);
  }
}

// The small grouped shape is timed with the same L2 treatment by the grouped providers and by `padded`.
TEST_F(GemmChecks, GroupedAndPaddedRecordsShareTheColdL2Treatment) {
  for (auto method : {GroupedMethod::cublas_grouped, GroupedMethod::per_expert, GroupedMethod::padded}) {
    auto p = make_grouped_provider(method, context_fn());
    const GemmRecord r = p->run(GemmCase{grouped_shape(), "bf16"}, quick()).front();
    SCOPED_TRACE(p->name());
    ASSERT_EQ(r.status, "ok") << r.reason;
    EXPECT_GT(r.extra.at("operand_copies").at("copies").get<int>(), 1);
    const std::string l2 = r.extra.at("timing").at("l2");
    EXPECT_TRUE(l2.find("rotate over") != std::string::npos || l2 == "flushed before each sample") << l2;
  }
}

// ---- the epilogue -------------------------------------------------------------------------------------------

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}
std::uint16_t float_to_bf16(float f) {   // round to nearest even (no NaN here)
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The broken case the reference check cannot see: C = ReLU(A*B + bias) where GELU was asked for, at K = 8192
// (the "kernel" is cuBLASLt's bare GEMM plus a host-side bias + ReLU). The search must fail it through the
// epilogue check, while the same GEMM with a GELU kernel after it (cublaslt.unfused's pair) passes.
TEST_F(GemmChecks, ReluInsteadOfGeluAtK8192Fails) {
  const GemmShape s = shape_of(256, 1024, 8192);
  const GemmCase c{s, "bf16", "nn", "bias_gelu"};
  GemmProblem problem(s, *lt_dtype("bf16"), 24, ctx().stream(), 1, GemmVariant::of(c));
  auto plan = std::make_shared<LtPlan>(ctx(), problem, /*fuse_epilogue=*/false);
  const auto top = plan->candidates(1);
  ASSERT_FALSE(top.empty());
  const cublasLtMatmulAlgo_t algo = top.front().algo;
  const std::int64_t count = s.m * s.n;
  std::vector<std::uint16_t> bias(std::size_t(s.n));
  ASSERT_EQ(cudaMemcpy(bias.data(), problem.bias(), bias.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  const BoundLaunch bare = [plan, algo](cudaStream_t st, int copy) { plan->run(algo, st, copy); };
  std::vector<SearchCandidate> cands(2);
  cands[0].kernel = "GEMM, then bias + ReLU";
  cands[0].launch = [&](cudaStream_t st, int copy) {
    plan->run(algo, st, copy);
    std::vector<std::uint16_t> host(static_cast<std::size_t>(count));
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(st));
    AISPFLOW_CUDA_CHECK(cudaMemcpy(host.data(), problem.c(copy), host.size() * 2, cudaMemcpyDeviceToHost));
    for (std::int64_t i = 0; i < count; ++i) {
      const float x = bf16_to_float(host[std::size_t(i)]) + bf16_to_float(bias[std::size_t(i % s.n)]);
      host[std::size_t(i)] = float_to_bf16(x > 0 ? x : 0.0f);
    }
    AISPFLOW_CUDA_CHECK(cudaMemcpy(problem.c(copy), host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  };
  cands[1].kernel = "GEMM, then bias + GELU";
  cands[1].launch = [&](cudaStream_t st, int copy) {
    plan->run(algo, st, copy);
    ours::launch_bias_epilogue(problem.c(copy), problem.bias(), count, s.n, int(Epilogue::bias_gelu), st);
  };
  for (auto& cand : cands) {
    cand.bare = bare;
    cand.extra_tolerance = 0x1p-8;   // the pair rounds A*B to bf16 first (cublaslt.unfused's allowance)
  }
  // A right kernel whose epilogue cannot be checked (no bare launch) is not a pass either.
  cands.push_back(cands[1]);
  cands[2].kernel = "GEMM, then bias + GELU, no bare launch";
  cands[2].bare = nullptr;
  const auto winner = run_candidate_search(cands, problem, ctx().harness(), quick());
  ASSERT_TRUE(winner.has_value());
  EXPECT_EQ(*winner, 1u);
  EXPECT_EQ(cands[0].status, "failed");
  EXPECT_FALSE(cands[0].verified);
  EXPECT_FALSE(cands[0].screen.has_value());
  EXPECT_FALSE(cands[0].full.has_value());
  EXPECT_NE(cands[0].reason.find("epilogue off by"), std::string::npos) << cands[0].reason;
  EXPECT_TRUE(cands[1].verified) << cands[1].reason;
  EXPECT_EQ(cands[2].status, "failed");
  EXPECT_NE(cands[2].reason.find("cannot be checked on its own"), std::string::npos) << cands[2].reason;
  EXPECT_LE(cands[1].epilogue_check.at("max_ratio").get<double>(), 1.0);

  // What the reference check alone says about the ReLU output (for the log: it is near or under its tolerance).
  problem.poison_output(ctx().stream());
  cands[0].launch(ctx().stream(), 0);
  const Comparison alone = problem.check_output(ctx().stream());
  std::printf("ReLU at K=8192 against the reference alone: max rel err %.4g, tolerance %.4g; %s\n", alone.max_rel_err,
              problem.tolerance() + 0x1p-8, cands[0].reason.c_str());
}

// cuBLASLt's own fused bias_gelu (CUBLASLT_EPILOGUE_GELU_BIAS), checked against the reference at a small K (where
// the reference check is sharp) and by the epilogue check at K = 8192.
TEST_F(GemmChecks, CublasLtBiasGeluIsCheckedOnItsOwn) {
  for (const std::string sweep : {"cublaslt", "cublaslt.sweep"})
    for (const std::int64_t k : {256, 8192}) {
      CublasLtProvider lt(context_fn(), sweep == "cublaslt.sweep");
      const GemmCase c{shape_of(512, 1024, k), "bf16", "nn", "bias_gelu"};
      SCOPED_TRACE(sweep + " K=" + std::to_string(k));
      const GemmRecord r = lt.run(c, quick()).front();
      ASSERT_EQ(r.status, "ok") << r.reason;
      EXPECT_TRUE(r.verified);
      EXPECT_LE(r.max_rel_err, r.tolerance);
      ASSERT_TRUE(r.extra.contains("epilogue_check")) << r.extra.dump();
      EXPECT_LE(r.extra["epilogue_check"]["max_ratio"].get<double>(), 1.0);
      std::printf("%s bias_gelu K=%lld: max rel err %.3g (tolerance %.3g), epilogue check %.3g of its bound%s\n",
                  sweep.c_str(), static_cast<long long>(k), r.max_rel_err, r.tolerance,
                  r.extra["epilogue_check"]["max_ratio"].get<double>(),
                  r.extra["epilogue_check"].contains("bare") ? " (bare GEMM: another algorithm)" : "");
    }
}

// The reference GEMM's GELU on the device (the function every GPU epilogue is checked against) at the table's
// inputs: C = gelu(x * 1 + 0) with K = 1.
TEST_F(GemmChecks, ReferenceGeluMatchesIndependentValues) {
  std::vector<float> x;
  for (const auto& [in, want] : test::kGeluTanhValues) x.push_back(float(in));
  const std::int64_t m = std::int64_t(x.size());
  DeviceBuffer a(x.size() * 4), b(4), bias(4), c(x.size() * 4), floor(x.size() * 4);
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cudaMemcpy(a.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b.get(), &one, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bias.get(), &zero, 4, cudaMemcpyHostToDevice), cudaSuccess);
  RefGemm g;
  g.m = m;
  g.n = 1;
  g.k = 1;
  g.ab_type = Elem::f32;
  g.a = a.get();
  g.b = b.get();
  g.epilogue = Epilogue::bias_gelu;
  g.bias = bias.get();
  g.bias_type = Elem::f32;
  g.c = c.as<float>();
  g.floor = floor.as<float>();
  reference_gemm(g, ctx().stream());
  ASSERT_EQ(cudaStreamSynchronize(ctx().stream()), cudaSuccess);
  std::vector<float> got(x.size());
  ASSERT_EQ(cudaMemcpy(got.data(), c.get(), got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = test::kGeluTanhValues[i].second;
    EXPECT_NEAR(got[i], want, test::gelu_tolerance(want)) << "x = " << x[i];
  }
}

// ---- the winner's time ---------------------------------------------------------------------------------------

TEST_F(GemmChecks, SweepWinnerTimeComesFromItsOwnConfirmationRound) {
  CublasLtProvider sweep(context_fn(), /*sweep=*/true);
  const GemmRecord r = sweep.run(GemmCase{shape_of(1024, 1024, 1024), "bf16"}, quick()).front();
  ASSERT_EQ(r.status, "ok") << r.reason;
  if (r.extra["sweep"]["finalists"].get<int>() < 2) GTEST_SKIP() << "one finalist: its interleaved round is its own";
  const auto& winner = r.extra["candidates"][std::size_t(r.extra["sweep"]["winner_rank"].get<int>())];
  ASSERT_TRUE(winner.contains("confirmation_time_ms")) << winner.dump();
  ASSERT_TRUE(r.time.has_value());
  EXPECT_DOUBLE_EQ(r.time->median_ms, winner["confirmation_time_ms"]["median"].get<double>());
  EXPECT_TRUE(r.extra["timing"].contains("confirmation"));
  for (const auto& cand : r.extra["candidates"])
    if (cand != winner) {
      EXPECT_FALSE(cand.contains("confirmation_time_ms")) << cand.dump();
    }
}

}  // namespace
}  // namespace aispflow::kernels

#endif  // AISPFLOW_HAS_CUDA
