// The CPU backend and its providers: each provider's result is verified then timed; a deliberately wrong
// provider is reported failed and never timed; unsupported dtypes and sizes give reasons; the blocked
// kernel is right on every awkward edge; the probes return well-formed ceilings; GPU requirements are
// refused with the exact reason.
#include "kernels/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/fingerprint.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_gemm_run.hpp"
#include "kernels/cpu/probes.hpp"
#include "support/quick_timing.hpp"

namespace aispflow::kernels {
namespace {

GemmShape shape(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
  GemmShape s;
  s.name = "s" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  s.m = m, s.n = n, s.k = k, s.batch = batch;
  return s;
}

TimingPolicy quick() { return test::quick_timing(0.2); }

TEST(CpuBackend, NameResourcesAndFingerprint) {
  auto backend = make_cpu_backend();
  EXPECT_EQ(backend->backend_name(), "cpu");
  EXPECT_EQ(backend->resource_total("gpu"), 0);
  EXPECT_EQ(backend->resource_total("no-such-thing"), 0);
  const auto fp = backend->fingerprint();
  for (const char* key : {"cpu_model", "logical_cpus", "caches", "isa", "os", "compiler", "build_id"})
    EXPECT_TRUE(fp.contains(key)) << key;
  EXPECT_EQ(fp, make_cpu_backend()->fingerprint()) << "the cache key must not change between calls";
  const auto hw = backend->hardware_info();
  EXPECT_EQ(hw["cpu_model"], fp["cpu_model"]);
  EXPECT_TRUE(hw.contains("memory_bytes"));
  EXPECT_TRUE(hw.contains("cache_hierarchy"));
}

TEST(CpuBackend, GpuRequirementsAreUnmetWithTheExactReason) {
  auto backend = make_cpu_backend();
  EXPECT_FALSE(backend->unmet(Requirements{}).has_value());
  Requirements two;
  two.gpus = 2;
  two.why = "all-to-all";
  EXPECT_EQ(backend->unmet(two).value(), "requires 2 GPU(s) (all-to-all); found none on this machine (cpu backend)");
  Requirements feature;
  feature.features = {"tcgen05"};
  EXPECT_EQ(backend->unmet(feature).value(), "requires 1 GPU(s) (tcgen05); found none on this machine (cpu backend)");
  Requirements cc;
  cc.gpus = 1;
  cc.min_compute_capability = 90;
  EXPECT_EQ(backend->unmet(cc).value(), "requires 1 GPU(s) (sm_90+); found none on this machine (cpu backend)");
}

TEST(CpuBackend, ProvidersAndAuto) {
  auto backend = make_cpu_backend();
  EXPECT_EQ(backend->provider_names(), (std::vector<std::string>{"cpu.blocked", "cpu.openblas", "cpu.naive"}));
  EXPECT_EQ(backend->auto_providers(), (std::vector<std::string>{"cpu.blocked", "cpu.openblas"}));
  for (const auto& name : backend->provider_names()) {
    ASSERT_NE(backend->provider(name), nullptr) << name;
    EXPECT_EQ(backend->provider(name)->name(), name);
  }
  EXPECT_EQ(backend->provider("cublaslt"), nullptr);
  EXPECT_EQ(make_cpu_provider("nope"), nullptr);
}

TEST(CpuProviders, EveryProviderIsVerifiedThenTimed) {
  auto backend = make_cpu_backend();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cpu.naive", "fp32"}, {"cpu.naive", "fp64"}, {"cpu.blocked", "fp32"},
      {"cpu.openblas", "fp32"}, {"cpu.openblas", "fp64"}};
  // Odd sizes so that every edge path of the blocked kernel runs; a batch of 2.
  const GemmShape s = shape(45, 71, 130, 2);
  for (const auto& [name, dtype] : cases) {
    GemmProvider* p = backend->provider(name);
    ASSERT_FALSE(p->unsupported(GemmCase{s, dtype}).has_value()) << name << " " << dtype;
    const auto records = p->run(GemmCase{s, dtype}, quick());
    ASSERT_EQ(records.size(), 1u);
    const GemmRecord& r = records[0];
    EXPECT_EQ(r.status, "ok") << name << " " << dtype << ": " << r.reason;
    EXPECT_TRUE(r.verified);
    EXPECT_EQ(r.provider, name);
    EXPECT_EQ(r.dtype, dtype);
    EXPECT_FALSE(r.kernel.empty());
    EXPECT_LE(r.max_rel_err, r.tolerance);
    EXPECT_DOUBLE_EQ(r.tolerance, default_tolerance(dtype, s.k));
    ASSERT_TRUE(r.time.has_value());
    EXPECT_GE(r.time->samples, 3);
    EXPECT_GT(r.time->median_ms, 0.0);
    const auto j = r.to_json(backend->fingerprint());
    EXPECT_GT(j["tflops"].get<double>(), 0.0);
    EXPECT_EQ(j["verification"]["checked_elements"], 2 * 45 * 71) << "small outputs are checked in full";
  }
}

TEST(CpuProviders, KernelIdentityNamesTheBlocking) {
  auto backend = make_cpu_backend();
  const int mr = blocked_gemm_mr();
  const auto r = backend->provider("cpu.blocked")->run(GemmCase{shape(mr + 1, 8, 8), "fp32"}, quick()).at(0);
  for (const char* part : {"mc=", "nc=", "kc=", "micro=", "isa=", "threads="})
    EXPECT_NE(r.kernel.find(part), std::string::npos) << r.kernel;
  const auto skinny = backend->provider("cpu.blocked")->run(GemmCase{shape(mr, 8, 8), "fp32"}, quick()).at(0);
  EXPECT_NE(skinny.kernel.find("skinny rows=" + std::to_string(mr)), std::string::npos) << skinny.kernel;
  const auto o = backend->provider("cpu.openblas")->run(GemmCase{shape(8, 8, 8), "fp32"}, quick()).at(0);
  EXPECT_NE(o.kernel.find("cblas_sgemm"), std::string::npos) << o.kernel;
}

TEST(CpuProviders, UnsupportedDtypesAndSizesSayWhy) {
  auto backend = make_cpu_backend();
  EXPECT_EQ(backend->provider("cpu.blocked")->unsupported(GemmCase{shape(4, 4, 4), "bf16"}).value(),
            "bf16 is not supported by cpu.blocked (fp32 only)");
  EXPECT_EQ(backend->provider("cpu.blocked")->unsupported(GemmCase{shape(4, 4, 4), "fp64"}).value(),
            "fp64 is not supported by cpu.blocked (fp32 only)");
  EXPECT_NE(backend->provider("cpu.openblas")->unsupported(GemmCase{shape(4, 4, 4), "fp8_e4m3"}).value().find("cpu.openblas"),
            std::string::npos);
  const auto big = backend->provider("cpu.naive")->unsupported(GemmCase{shape(4096, 4096, 4096), "fp32"});
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->rfind("above cpu.naive size limit (", 0), 0u) << *big;
  EXPECT_FALSE(backend->provider("cpu.naive")->unsupported(GemmCase{shape(512, 512, 512), "fp32"}).has_value());
  // Operands that cannot fit in memory are refused up front rather than crashing the run.
  const auto huge = backend->provider("cpu.blocked")->unsupported(GemmCase{shape(1 << 20, 1 << 20, 1 << 20), "fp32"});
  ASSERT_TRUE(huge.has_value());
  EXPECT_NE(huge->find("more than half of this machine's"), std::string::npos) << *huge;
}

// A provider with a deliberately wrong kernel (it forgets the last k-term) goes through the same
// verify-then-time path as the real ones: it must come out "failed", with the reason, and untimed.
class DropsLastKTerm final : public GemmProvider {
 public:
  std::string name() const override { return "test.wrong"; }
  std::optional<std::string> unsupported(const GemmCase&) const override { return {}; }
  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override {
    const GemmShape s = c.shape;
    const CpuGemmJob job{name(), "drops the last k-term", s, c.dtype, timing};
    return {run_cpu_gemm(job, CpuGemmCall<float>([s, this](const float* a, const float* b, float* c) {
                           ++calls;
                           for (std::int64_t i = 0; i < s.m; ++i)
                             for (std::int64_t j = 0; j < s.n; ++j) {
                               double acc = 0;
                               for (std::int64_t p = 0; p + 1 < s.k; ++p) acc += double(a[i * s.k + p]) * b[p * s.n + j];
                               c[i * s.n + j] = float(acc);
                             }
                         }))};
  }
  int calls = 0;
};

TEST(CpuProviders, WrongResultIsFailedAndNeverTimed) {
  DropsLastKTerm wrong;
  const auto records = wrong.run(GemmCase{shape(16, 16, 256), "fp32"}, quick());
  ASSERT_EQ(records.size(), 1u);
  const GemmRecord& r = records[0];
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.verified);
  EXPECT_FALSE(r.time.has_value());
  EXPECT_EQ(wrong.calls, 1) << "run once to verify, then stop: no warm-up, no samples";
  EXPECT_GT(r.max_rel_err, r.tolerance);
  EXPECT_EQ(r.reason.rfind("verification failed: ", 0), 0u) << r.reason;
  const auto j = r.to_json({});
  EXPECT_FALSE(j.contains("time_ms"));
  EXPECT_FALSE(j.contains("tflops"));
}

// A kernel that leaves part of C unwritten is caught by the NaN pre-fill.
TEST(CpuProviders, UnwrittenOutputIsFailed) {
  const GemmShape s = shape(10, 10, 10);
  const CpuGemmJob job{"test.lazy", "writes only row 0", s, "fp32", quick()};
  const GemmRecord r = run_cpu_gemm(job, CpuGemmCall<float>([&](const float* a, const float* b, float* c) {
                                      for (std::int64_t j = 0; j < s.n; ++j) {
                                        double acc = 0;
                                        for (std::int64_t p = 0; p < s.k; ++p) acc += double(a[p]) * b[p * s.n + j];
                                        c[j] = float(acc);
                                      }
                                    }));
  EXPECT_EQ(r.status, "failed");
  EXPECT_NE(r.reason.find("NaN"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.time.has_value());
}

// The blocked kernel against float64 on every awkward case: degenerate dimensions, sizes that are not
// multiples of the micro-tile or of the cache blocks, strided leading dimensions, tiny and odd blocks.
TEST(BlockedGemm, CorrectOnEdgeShapesAndStrides) {
  struct Case {
    std::int64_t m, n, k;
    BlockedGemmConfig cfg;
  };
  const BlockedGemmConfig tiny{.mc = 1, .nc = 1, .kc = 3, .tiles_per_thread = 3};   // rounded up to MR, NR
  const BlockedGemmConfig odd{.mc = 50, .nc = 70, .kc = 33, .tiles_per_thread = 1};
  const std::vector<Case> cases = {{1, 1, 1, {}},       {1, 200, 17, {}},  {200, 1, 17, {}},  {5, 7, 1, {}},
                                   {13, 37, 300, {}},   {97, 101, 103, odd}, {64, 96, 64, tiny},
                                   {130, 260, 700, odd}, {3, 1000, 5, {}},
                                   // skinny A (m <= MR: B streamed unpacked), around the MR boundary
                                   {1, 5123, 300, {}},  {8, 2881, 64, {}},
                                   {blocked_gemm_mr(), 515, 129, {}}, {blocked_gemm_mr() + 1, 515, 129, {}}};
  for (const auto& c : cases) {
    const std::int64_t lda = c.k + 3, ldb = c.n + 5, ldc = c.n + 7;   // strided, to catch lda/ldb/ldc mix-ups
    std::vector<float> a(std::size_t(c.m * lda)), b(std::size_t(c.k * ldb));
    std::vector<float> out(std::size_t(c.m * ldc), -7.0f);
    fill_random(a, 11);
    fill_random(b, 12);
    blocked_sgemm(c.m, c.n, c.k, a.data(), lda, b.data(), ldb, out.data(), ldc, c.cfg);
    // Compact copies for the checker, plus a check that the padding columns of C were left alone.
    std::vector<float> ac, bc, cc;
    for (std::int64_t i = 0; i < c.m; ++i) ac.insert(ac.end(), a.begin() + i * lda, a.begin() + i * lda + c.k);
    for (std::int64_t p = 0; p < c.k; ++p) bc.insert(bc.end(), b.begin() + p * ldb, b.begin() + p * ldb + c.n);
    for (std::int64_t i = 0; i < c.m; ++i) {
      cc.insert(cc.end(), out.begin() + i * ldc, out.begin() + i * ldc + c.n);
      for (std::int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[std::size_t(i * ldc + j)], -7.0f) << "wrote outside C";
    }
    const VerifyResult v = verify_gemm(shape(c.m, c.n, c.k), ac.data(), bc.data(), cc.data(),
                                       default_tolerance("fp32", c.k));
    EXPECT_TRUE(v.ok) << c.m << "x" << c.n << "x" << c.k << ": " << v.detail;
  }
}

TEST(BlockedGemm, ConfigIsDerivedFromCachesAndRespectsTheMicroTile) {
  const BlockedGemmConfig c = resolve_blocked_config();
  EXPECT_GT(c.kc, 0);
  EXPECT_EQ(c.mc % blocked_gemm_mr(), 0);
  EXPECT_EQ(c.nc % blocked_gemm_nr(), 0);
  const BlockedGemmConfig forced = resolve_blocked_config({.mc = 100, .nc = 100, .kc = 77, .tiles_per_thread = 2});
  EXPECT_EQ(forced.kc, 77);
  EXPECT_GE(forced.mc, 100);
  EXPECT_EQ(forced.mc % blocked_gemm_mr(), 0);
}

TEST(CpuPeaks, BandwidthAndComputeCeilingsAreWellFormed) {
  auto backend = make_cpu_backend();
  PeakOptions o;
  o.bandwidth_bytes = 8 << 20;   // small for a unit test; the ceilings then carry a warning
  o.timing = quick();
  const auto ceilings = backend->measure_peaks(o);
  std::vector<std::string> names;
  for (const auto& c : ceilings) {
    names.push_back(c.at("name"));
    EXPECT_EQ(c.at("source"), "measured");
    EXPECT_GT(c.at("value").get<double>(), 0.0) << c.dump();
    EXPECT_TRUE(std::isfinite(c.at("value").get<double>()));
    EXPECT_FALSE(c.at("method").get<std::string>().empty());
    EXPECT_GE(c.at("samples").get<int>(), 3);
    EXPECT_TRUE(c.at("time_ms").contains("median"));
    if (c.at("kind") == "memory") {
      EXPECT_EQ(c.at("unit"), "GB/s");
      EXPECT_TRUE(c.contains("warnings")) << "8 MiB arrays are not far larger than the cache";
    } else {
      EXPECT_EQ(c.at("kind"), "compute");
      EXPECT_EQ(c.at("unit"), "TFLOP/s");
      EXPECT_LT(c.at("value").get<double>(), 1000.0) << "TFLOP/s, not GFLOP/s";
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"dram.copy", "dram.triad", "dram.read", "cpu_core.fp32",
                                             "cpu_core.fp64"}));
}

TEST(CpuPeaks, UnknownComputeDtypeIsRefusedUpFront) {
  auto backend = make_cpu_backend();
  PeakOptions o;
  o.dtypes = {"fp32", "bf16"};
  try {
    (void)backend->measure_peaks(o);
    FAIL() << "bf16 has no CPU probe";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'bf16'"), std::string::npos) << e.what();
  }
}

TEST(CpuPeaks, DefaultArraysOverflowTheLastLevelCache) {
  EXPECT_GE(default_bandwidth_array_bytes(), 4 * last_level_cache_bytes());
  EXPECT_GE(default_bandwidth_array_bytes(), std::int64_t(64) << 20);
}

}  // namespace
}  // namespace aispflow::kernels
