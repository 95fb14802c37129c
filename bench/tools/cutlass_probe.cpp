// Developer probe for the CUTLASS instances (docs/cutlass.md, "The first H100 runs"): runs ONE compiled instance once,
// straight through its entry points (no candidate search, no CUDA graph, no L2 flush), with a deadline on the
// stream, so that a launch that never returns is named instead of hanging a whole test binary.
//   cutlass_probe list                          the compiled sm_90a instances, one symbol per line
//   cutlass_probe SYMBOL [M N K] [deadline_s]   run it once on small-integer data, check sampled elements
//                                               (CUTLASS_PROBE_SWIZZLE=s: the tile scheduler's swizzle;
//                                               CUTLASS_PROBE_PROMOTION=n: an fp8 instance's promotion interval)
// Exit status: 0 ran and matched, 1 wrong result or launch error, 2 usage, 3 did not finish by the deadline
// (the process then _exits without touching the stream again). bench/run_cutlass_probe.sh drives it, one
// process per instance under `timeout`, and is read by a person: never committed as evidence.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/cutlass_manifest.hpp"
#include "kernels/cuda/cutlass/registry.hpp"

using namespace aispflow::kernels;
using namespace aispflow::kernels::cuda;

namespace {

#define PROBE_CHECK(call)                                                                            \
  do {                                                                                               \
    const cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                         \
      std::printf("  CUDA error %s at %s\n", cudaGetErrorString(e_), #call);                        \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

// Values in {-2..2}: exact in bf16 and e4m3, so the only error is the bf16 output's rounding.
std::vector<int> small_ints(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-2, 2);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
std::vector<T> convert(const std::vector<int>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = T(float(v[i]));
  return out;
}

int probe(const CutlassInstance& inst, const cutlass_abi::InstanceOps& ops, int m, int n, int k, double deadline_s) {
  std::mt19937 rng(12345);
  const auto a = small_ints(std::size_t(m) * k, rng);
  const auto b = small_ints(std::size_t(k) * n, rng);   // nn: K x N row-major; nt: N x K row-major
  const bool fp8 = inst.dtype == "fp8_e4m3";
  const std::size_t elem = fp8 ? 1 : 2;
  void *da = nullptr, *db = nullptr, *dc = nullptr, *ws = nullptr;
  PROBE_CHECK(cudaMalloc(&da, a.size() * elem));
  PROBE_CHECK(cudaMalloc(&db, b.size() * elem));
  PROBE_CHECK(cudaMalloc(&dc, std::size_t(m) * n * 2));
  if (fp8) {
    const auto ha = convert<__nv_fp8_e4m3>(a), hb = convert<__nv_fp8_e4m3>(b);
    PROBE_CHECK(cudaMemcpy(da, ha.data(), a.size(), cudaMemcpyHostToDevice));
    PROBE_CHECK(cudaMemcpy(db, hb.data(), b.size(), cudaMemcpyHostToDevice));
  } else {
    const auto ha = convert<__nv_bfloat16>(a), hb = convert<__nv_bfloat16>(b);
    PROBE_CHECK(cudaMemcpy(da, ha.data(), a.size() * 2, cudaMemcpyHostToDevice));
    PROBE_CHECK(cudaMemcpy(db, hb.data(), b.size() * 2, cudaMemcpyHostToDevice));
  }
  PROBE_CHECK(cudaMemset(dc, 0xff, std::size_t(m) * n * 2));   // NaN: an unwritten element cannot match
  int device = 0, sms = 0;
  PROBE_CHECK(cudaGetDevice(&device));
  PROBE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaStream_t stream;
  PROBE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cutlass_abi::GemmArgs g;
  g.m = m, g.n = n, g.k = k, g.a = da, g.b = db, g.c = dc, g.alpha = 1.0f, g.sm_count = sms, g.stream = stream;
  // CUTLASS_PROBE_SWIZZLE: the tile scheduler's swizzle (1, 2, 4, 8), as cutlass.select tries them (to profile
  // one instance at the swizzle that won).
  if (const char* sw = std::getenv("CUTLASS_PROBE_SWIZZLE")) g.swizzle = std::atoi(sw);
  // CUTLASS_PROBE_PROMOTION: an fp8 instance's promotion interval in wgmma k-blocks (4 = every 128-wide k-tile;
  // 16 = every 4, our promote4), as cutlass.select tries them.
  if (const char* pi = std::getenv("CUTLASS_PROBE_PROMOTION")) g.promotion_interval = std::atoi(pi);
  if (ops.can_implement(g) != cutlass_abi::kOk) {
    std::printf("  can_implement: no\n");
    return 1;
  }
  g.workspace_bytes = ops.workspace_bytes(g);
  if (g.workspace_bytes) PROBE_CHECK(cudaMalloc(&ws, g.workspace_bytes));
  g.workspace = ws;
  std::printf("  workspace %zu bytes, %d SMs; launching\n", g.workspace_bytes, sms);
  std::fflush(stdout);

  const auto t0 = std::chrono::steady_clock::now();
  const int st = ops.run(g);
  const double launch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  run() returned %d after %.2f ms (last error: %s)\n", st, launch_ms,
              cudaGetErrorString(cudaGetLastError()));
  std::fflush(stdout);
  if (st != cutlass_abi::kOk) return 1;
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (q == cudaSuccess) {
      std::printf("  finished after %.3f s\n", s);
      break;
    }
    if (q != cudaErrorNotReady) {
      std::printf("  kernel error after %.3f s: %s\n", s, cudaGetErrorString(q));
      return 1;
    }
    if (s > deadline_s) {
      std::printf("  HANG: not finished after %.1f s\n", s);
      std::fflush(stdout);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  std::vector<__nv_bfloat16> c(std::size_t(m) * n);
  PROBE_CHECK(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost));
  const bool b_k_major = inst.layout == "nt";
  double worst = 0;
  int bad = 0;
  std::uniform_int_distribution<int> pick_m(0, m - 1), pick_n(0, n - 1);
  for (int s = 0; s < 4096; ++s) {
    const int i = s < 4 ? (s & 1) * (m - 1) : pick_m(rng), j = s < 4 ? (s >> 1) * (n - 1) : pick_n(rng);
    double want = 0, scale = 0;
    for (int kk = 0; kk < k; ++kk) {
      const double bv = b_k_major ? b[std::size_t(j) * k + kk] : b[std::size_t(kk) * n + j];
      want += a[std::size_t(i) * k + kk] * bv;
      scale += std::fabs(a[std::size_t(i) * k + kk] * bv);
    }
    const double got = double(__bfloat162float(c[std::size_t(i) * n + j]));
    const double err = std::fabs(got - want) / std::max(1.0, scale);
    if (!(err <= 1.0 / 128)) ++bad;   // bf16 output rounding is <= 2^-8 of |want| <= scale
    worst = std::max(worst, std::isnan(err) ? 1e9 : err);
  }
  std::printf("  sampled 4096 elements: %d wrong, worst error %.3g of the absolute sum\n", bad, worst);

  cudaEvent_t e0, e1;
  PROBE_CHECK(cudaEventCreate(&e0));
  PROBE_CHECK(cudaEventCreate(&e1));
  PROBE_CHECK(cudaEventRecord(e0, stream));
  for (int r = 0; r < 10; ++r)
    if (ops.run(g) != cutlass_abi::kOk) return 1;
  PROBE_CHECK(cudaEventRecord(e1, stream));
  const auto t1 = std::chrono::steady_clock::now();
  while (cudaEventQuery(e1) == cudaErrorNotReady) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() > deadline_s) {
      std::printf("  HANG in the 10 repeated runs\n");
      std::fflush(stdout);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  float ms = 0;
  PROBE_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  std::printf("  10 back-to-back runs: %.3f ms each, %.1f TFLOP/s (indicative only)\n", ms / 10,
              2.0 * m * n * k / (ms / 10 * 1e-3) / 1e12);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cutlass_probe list | SYMBOL [M N K] [deadline_s]\n");
    return 2;
  }
  const std::string what = argv[1];
  for (const auto& inst : cutlass_manifest()) {
    const auto* ops = cutlass_ops(inst);
    if (!ops || inst.arch != 90) continue;
    if (what == "list") {
      std::printf("%s\n", inst.symbol().c_str());
      continue;
    }
    if (inst.symbol() != what) continue;
    const int m = argc > 4 ? std::atoi(argv[2]) : 1024, n = argc > 4 ? std::atoi(argv[3]) : 1024,
              k = argc > 4 ? std::atoi(argv[4]) : 1024;
    const double deadline = argc > 5 ? std::atof(argv[5]) : argc == 3 ? std::atof(argv[2]) : 10.0;
    std::printf("%s (%s) %dx%dx%d\n", inst.symbol().c_str(), inst.name().c_str(), m, n, k);
    std::fflush(stdout);
    return probe(inst, *ops, m, n, k, deadline);
  }
  if (what == "list") return 0;
  std::fprintf(stderr, "no compiled sm_90a instance named %s (cutlass_probe list)\n", what.c_str());
  return 2;
}
