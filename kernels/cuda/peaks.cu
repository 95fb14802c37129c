#include "kernels/cuda/peaks.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <stdexcept>
#include <tuple>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/gemm_data.hpp"

namespace aispflow::kernels::cuda {

namespace {

// ---- bandwidth kernels -----------------------------------------------------------------------------
// Grid-stride loops over 16-byte vectors. Each thread issues U independent loads before the first store
// (or use), so each SM keeps U x 16 B x resident threads in flight: enough to cover HBM latency.
template <int U>
__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

template <int U>
__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  auto triad = [s](float4 x, float4 y) { return make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w); };
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 vb[U], vc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      vb[u] = b[i + u * stride];
      vc[u] = c[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) a[i + u * stride] = triad(vb[u], vc[u]);
  }
  for (; i < n; i += stride) a[i] = triad(b[i], c[i]);
}

// Sums the array (so no load can be dropped) and writes one value per block: reads dominate completely.
template <int U>
__global__ void read_kernel(const float4* __restrict__ src, float* __restrict__ block_sums, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc[U] = {};
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < n; i += stride) {
    const float4 v = src[i];
    acc[0] += (v.x + v.y) + (v.z + v.w);
  }
  float sum = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) sum += acc[u];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
    block_sums[blockIdx.x] = total;
  }
}

// ---- checks the bandwidth probes run before timing ---------------------------------------------------
// A probe whose kernel moved nothing would report any bandwidth it likes, so every kernel variant first
// runs once into an output filled with NaN bytes and its result is checked on the device; only a
// variant that passes is timed. The checks count bad values with one atomic per thread that found any.

// Words of `got` that differ from `want`, bit for bit (copies must be exact).
__global__ void count_unequal_kernel(const uint4* __restrict__ got, const uint4* __restrict__ want, std::int64_t n,
                                     unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4 g = got[i], w = want[i];
    mine += (g.x != w.x) + (g.y != w.y) + (g.z != w.z) + (g.w != w.w);
  }
  if (mine) atomicAdd(bad, mine);
}

// Elements of a that are not b + s*c within a few ulps (the triad may or may not be contracted to an FMA).
__global__ void count_triad_errors_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                                          const float4* __restrict__ c, float s, std::int64_t n,
                                          unsigned long long* bad) {
  auto wrong = [s](float got, float x, float y) {
    const double want = double(x) + double(s) * double(y);
    return !(fabs(double(got) - want) <= 1e-6 * (fabs(double(x)) + fabs(double(s) * double(y))) + 1e-30);
  };
  unsigned long long mine = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float4 va = a[i], vb = b[i], vc = c[i];
    mine += wrong(va.x, vb.x, vc.x) + wrong(va.y, vb.y, vc.y) + wrong(va.z, vb.z, vc.z) + wrong(va.w, vb.w, vc.w);
  }
  if (mine) atomicAdd(bad, mine);
}

// The sum and the sum of magnitudes of the array in double: the read kernel's reference.
__global__ void reference_sum_kernel(const float4* __restrict__ src, std::int64_t n, double* sums) {
  double sum = 0, magnitude = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float4 v = src[i];
    sum += double(v.x) + double(v.y) + double(v.z) + double(v.w);
    magnitude += fabs(double(v.x)) + fabs(double(v.y)) + fabs(double(v.z)) + fabs(double(v.w));
  }
  atomicAdd(&sums[0], sum);
  atomicAdd(&sums[1], magnitude);
}

// ---- fp32 FMA kernel -------------------------------------------------------------------------------
// 8 independent dependency chains per thread hide the FMA latency; a and b are run-time values so the
// compiler cannot fold the chains. Every thread writes its sum so nothing is dead code.
constexpr int kFmaChains = 8;
__global__ void fma_kernel(float* out, float a, float b, int iterations) {
  float x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) x[j] = float(threadIdx.x) * 1e-3f + float(j);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kFmaChains; ++j) x[j] = fmaf(x[j], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) sum += x[j];
  out[std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

// ---- helpers ---------------------------------------------------------------------------------------
struct LaunchShape {
  int unroll;
  int blocks_per_sm;
  int threads;
};
// The variants tried for each bandwidth kernel; the best is reported, all are listed.
// blocks_per_sm 0 = one pass: enough blocks that every thread handles exactly `unroll` vectors.
// (Measured on an H100: more blocks with fewer loads each beat fewer blocks with deep unrolling, and the
// evict-first hints (ld/st.global.cs) cost 2-4 %, so they are not among the variants.)
constexpr LaunchShape kShapes[] = {{4, 16, 256}, {2, 32, 256}, {1, 64, 256}, {1, 0, 256}, {2, 0, 256}, {4, 0, 256}};

int sm_count(int device) {
  int sms = 0;
  AISPFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

std::string wrong_values_text(std::uint64_t bad, std::size_t bytes) {
  return std::to_string(bad) + " of " + std::to_string(bytes / 4) + " values wrong";
}

// Runs one launch of a bandwidth kernel into a poisoned output and checks it against its definition:
// copy b == a exactly, triad a == b + s*c, read: the block sums add up to the array's sum (fp32
// accumulation, so within 1e-4 of the sum of magnitudes). Returns what was wrong, or nullopt.
template <class Launch>
std::optional<std::string> check_bandwidth_variant(OutputCheck& check, const std::string& kernel, Launch&& launch,
                                                   cudaStream_t stream, const DeviceBuffer& a, const DeviceBuffer& b,
                                                   const DeviceBuffer& c, const DeviceBuffer& block_sums,
                                                   unsigned blocks, float triad_scale) {
  const std::size_t bytes = a.bytes();
  if (kernel == "hbm.read") {
    check.poison(block_sums.get(), std::size_t(blocks) * sizeof(float));
    launch(stream);
    std::vector<float> sums(blocks);
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(sums.data(), block_sums.get(), sums.size() * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream));
    const auto [want, magnitude] = check.reference_sum(a.get(), bytes);  // synchronises the stream
    double got = 0;
    for (float v : sums) got += v;
    if (!(std::abs(got - want) <= 1e-4 * magnitude))
      return "block sums add up to " + std::to_string(got) + ", the array sums to " + std::to_string(want);
    return std::nullopt;
  }
  const DeviceBuffer& output = kernel == "hbm.copy" ? b : a;
  check.poison(output.get(), bytes);
  launch(stream);
  const std::uint64_t bad = kernel == "hbm.copy" ? check.unequal(b.get(), a.get(), bytes)
                                                 : check.triad_errors(a.get(), b.get(), c.get(), triad_scale, bytes);
  if (bad) return wrong_values_text(bad, bytes);
  return std::nullopt;
}

std::string describe(const LaunchShape& s, unsigned blocks) {
  return std::to_string(s.unroll) + " x 16 B loads in flight per thread, " + std::to_string(blocks) + " blocks x " +
         std::to_string(s.threads) + " threads" + (s.blocks_per_sm > 0 ? " (grid-stride)" : " (one pass)");
}

std::string gib_text(std::size_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB", double(bytes) / double(1ull << 30));
  return buffer;
}

// Calls launch.template operator()<U>() for the shape's compile-time unroll.
template <class Launch>
void with_unroll(int unroll, Launch&& launch) {
  switch (unroll) {
    case 1: launch.template operator()<1>(); return;
    case 2: launch.template operator()<2>(); return;
    case 4: launch.template operator()<4>(); return;
    case 8: launch.template operator()<8>(); return;
  }
  throw std::invalid_argument("unsupported unroll");
}

Ceiling bandwidth_ceiling(const std::string& name, double bytes, const Measurement& m, const std::string& method) {
  return {{"name", name},
          {"kind", "memory"},
          {"unit", "GB/s"},
          {"value", bytes / (m.stats.median_ms * 1e-3) / 1e9},
          {"source", "measured"},
          {"method", method},
          {"bytes_per_launch", bytes},
          {"time_ms", m.stats.to_json()},
          {"samples", m.stats.samples},
          {"timing", m.timing_json()}};
}

}  // namespace

OutputCheck::OutputCheck(cudaStream_t stream) : stream_(stream), scratch_(2 * sizeof(double)) {
  int device = 0;
  AISPFLOW_CUDA_CHECK(cudaGetDevice(&device));
  blocks_ = unsigned(sm_count(device) * 4);
}

void OutputCheck::poison(void* output, std::size_t bytes) {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(output, 0xff, bytes, stream_));
}

template <class Launch>
std::uint64_t OutputCheck::count(Launch&& launch) {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, sizeof(unsigned long long), stream_));
  launch(scratch_.as<unsigned long long>());
  AISPFLOW_CUDA_CHECK_LAUNCH();
  unsigned long long bad = 0;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&bad, scratch_.get(), sizeof bad, cudaMemcpyDeviceToHost, stream_));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return bad;
}

std::uint64_t OutputCheck::unequal(const void* got, const void* want, std::size_t bytes) {
  return count([&](unsigned long long* bad) {
    count_unequal_kernel<<<blocks_, 256, 0, stream_>>>(static_cast<const uint4*>(got), static_cast<const uint4*>(want),
                                                       std::int64_t(bytes / 16), bad);
  });
}

std::uint64_t OutputCheck::triad_errors(const void* a, const void* b, const void* c, float s, std::size_t bytes) {
  return count([&](unsigned long long* bad) {
    count_triad_errors_kernel<<<blocks_, 256, 0, stream_>>>(static_cast<const float4*>(a), static_cast<const float4*>(b),
                                                            static_cast<const float4*>(c), s, std::int64_t(bytes / 16), bad);
  });
}

std::pair<double, double> OutputCheck::reference_sum(const void* data, std::size_t bytes) {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, scratch_.bytes(), stream_));
  reference_sum_kernel<<<blocks_, 256, 0, stream_>>>(static_cast<const float4*>(data), std::int64_t(bytes / 16),
                                                     scratch_.as<double>());
  AISPFLOW_CUDA_CHECK_LAUNCH();
  double sums[2];
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(sums, scratch_.get(), sizeof sums, cudaMemcpyDeviceToHost, stream_));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return {sums[0], sums[1]};
}

std::vector<Ceiling> measure_bandwidth(Harness& harness, std::size_t array_bytes, const TimingPolicy& timing) {
  ScopedDevice on(harness.device());
  const cudaStream_t stream = harness.stream();
  array_bytes = std::max<std::size_t>(array_bytes / 16 * 16, 16);
  const std::int64_t vectors = std::int64_t(array_bytes / 16);
  DeviceBuffer a(array_bytes), b(array_bytes), c(array_bytes);
  // Random contents, never zeros: nothing in the memory system gets to treat the data as special.
  for (auto* buffer : {&a, &b, &c})
    fill_random(buffer->get(), Elem::f32, std::int64_t(array_bytes / 4), std::uint64_t(buffer->bytes()) + 7, stream);
  const int sms = sm_count(harness.device());
  // One partial sum per block of the read kernel; the one-pass variants have the most blocks.
  DeviceBuffer block_sums(std::size_t(vectors / 256 + std::int64_t(sms) * 64 + 1) * sizeof(float));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<Ceiling> out;
  OutputCheck check(stream);
  // memcpy D2D first: the yardstick the kernels are compared with, measured in the same call.
  auto memcpy_launch = [&](cudaStream_t s) {
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), array_bytes, cudaMemcpyDeviceToDevice, s));
  };
  check.poison(b.get(), array_bytes);
  memcpy_launch(stream);
  if (const auto bad = check.unequal(b.get(), a.get(), array_bytes))
    throw std::runtime_error("cudaMemcpyAsync device-to-device copied wrong data (" + wrong_values_text(bad, array_bytes) +
                             "): no bandwidth figure of this GPU can be trusted");
  const Measurement memcpy_m = harness.time(timing, memcpy_launch);
  Ceiling memcpy_ceiling = bandwidth_ceiling("hbm.memcpy_d2d", 2.0 * double(array_bytes), memcpy_m,
                                             "cudaMemcpyAsync device-to-device of " + gib_text(array_bytes) +
                                                 ", bytes = read + write");
  memcpy_ceiling["verified"] = true;
  const double memcpy_gbs = memcpy_ceiling["value"].get<double>();
  constexpr float kTriadScale = 1.5f;

  struct Kernel {
    const char* name;
    double bytes_factor;
    const char* counted;
  };
  const Kernel kernels[] = {{"hbm.copy", 2.0, "bytes = read + write"},
                            {"hbm.triad", 3.0, "a = b + s*c, bytes = 2 reads + 1 write"},
                            {"hbm.read", 1.0, "sum reduction, bytes = reads (one float per block written)"}};
  for (const auto& k : kernels) {
    const double bytes = k.bytes_factor * double(array_bytes);
    nlohmann::json variants = nlohmann::json::array();
    std::optional<Measurement> best;
    std::string best_method;
    for (const auto& shape : kShapes) {
      const std::int64_t per_block = std::int64_t(shape.threads) * shape.unroll;
      const unsigned blocks = shape.blocks_per_sm > 0 ? unsigned(sms * shape.blocks_per_sm)
                                                      : unsigned(std::min<std::int64_t>((vectors + per_block - 1) / per_block,
                                                                                        std::int64_t(1) << 31));
      const std::string name = k.name;
      auto launch = [&](cudaStream_t s) {
        with_unroll(shape.unroll, [&]<int U>() {
          if (name == "hbm.copy")
            copy_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), b.as<float4>(), vectors);
          else if (name == "hbm.triad")
            triad_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), b.as<float4>(), c.as<float4>(),
                                                                 kTriadScale, vectors);
          else
            read_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), block_sums.as<float>(), vectors);
        });
        AISPFLOW_CUDA_CHECK_LAUNCH();
      };
      // Verified before it is timed: one launch into a poisoned output, checked on the device.
      if (auto wrong = check_bandwidth_variant(check, name, launch, stream, a, b, c, block_sums, blocks, kTriadScale)) {
        variants.push_back({{"config", describe(shape, blocks)}, {"status", "failed"}, {"reason", *wrong}});
        continue;
      }
      Measurement m = harness.time(timing, launch);
      const double gbs = bytes / (m.stats.median_ms * 1e-3) / 1e9;
      variants.push_back({{"config", describe(shape, blocks)}, {"gb_per_s", gbs}, {"stdrel", m.stats.stdrel}});
      if (!best || m.stats.median_ms < best->stats.median_ms) {
        best = std::move(m);
        best_method = describe(shape, blocks);
      }
    }
    if (!best) {  // no variant computed the right thing: a failed ceiling, without a number
      out.push_back({{"name", k.name}, {"kind", "memory"}, {"unit", "GB/s"}, {"source", "measured"},
                     {"status", "failed"}, {"reason", "every launch shape gave wrong results"}, {"variants", variants}});
      continue;
    }
    Ceiling ceiling = bandwidth_ceiling(k.name, bytes, *best,
                                        std::string("float4 kernel, ") + best_method + ", arrays of " +
                                            gib_text(array_bytes) + ", " + k.counted + "; best of the variants");
    ceiling["variants"] = variants;
    ceiling["verified"] = true;
    ceiling["memcpy_d2d_gb_per_s"] = memcpy_gbs;
    ceiling["fraction_of_memcpy_d2d"] = ceiling["value"].get<double>() / memcpy_gbs;
    if (!best->warnings.empty()) ceiling["warnings"] = best->warnings;
    out.push_back(std::move(ceiling));
  }
  if (!memcpy_m.warnings.empty()) memcpy_ceiling["warnings"] = memcpy_m.warnings;
  out.push_back(std::move(memcpy_ceiling));
  return out;
}

Ceiling measure_fp32_fma(Harness& harness, const TimingPolicy& timing) {
  ScopedDevice on(harness.device());
  const int sms = sm_count(harness.device());
  constexpr int kThreads = 256, kBlocksPerSm = 8, kIterations = 8192;
  const unsigned blocks = unsigned(sms * kBlocksPerSm);
  DeviceBuffer out(std::size_t(blocks) * kThreads * sizeof(float));
  TimingPolicy policy = timing;
  policy.flush_cache = false;   // no memory traffic to speak of
  const Measurement m = harness.time(policy, [&](cudaStream_t s) {
    fma_kernel<<<blocks, kThreads, 0, s>>>(out.as<float>(), 0.999999f, 1e-6f, kIterations);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  const double flops = 2.0 * kFmaChains * double(kIterations) * double(blocks) * kThreads;
  Ceiling c = {{"name", "cuda_core.fp32"},
               {"kind", "compute"},
               {"unit", "TFLOP/s"},
               {"dtype", "fp32"},
               {"value", flops / (m.stats.median_ms * 1e-3) / 1e12},
               {"source", "measured"},
               {"method", "FMA kernel: " + std::to_string(kFmaChains) + " independent chains per thread, " +
                              std::to_string(blocks) + " blocks x " + std::to_string(kThreads) +
                              " threads, 2 FLOP per FMA"},
               {"time_ms", m.stats.to_json()},
               {"samples", m.stats.samples},
               {"timing", m.timing_json()}};
  if (!m.warnings.empty()) c["warnings"] = m.warnings;
  return c;
}

std::vector<Ceiling> measure_p2p(std::size_t bytes, const TimingPolicy& timing) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) return {};
  bytes = std::max<std::size_t>(bytes / 16 * 16, 16);
  auto seed_of = [](int device) { return 11 + std::uint64_t(device); };
  std::vector<DeviceBuffer> src, dst, expected;
  std::vector<std::unique_ptr<Harness>> harnesses;
  std::vector<std::unique_ptr<OutputCheck>> checks;
  for (int d = 0; d < count; ++d) {
    ScopedDevice on(d);
    src.emplace_back(bytes);
    dst.emplace_back(bytes);
    expected.emplace_back(bytes);  // on this GPU: what a copy from the current source GPU must leave
    fill_random(src.back().get(), Elem::f32, std::int64_t(bytes / 4), seed_of(d), nullptr);
    AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    harnesses.push_back(std::make_unique<Harness>(d));
    checks.push_back(std::make_unique<OutputCheck>(harnesses.back()->stream()));
  }
  TimingPolicy policy = timing;
  policy.flush_cache = false;
  std::vector<Ceiling> out;
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      const std::string pair = std::to_string(from) + "->" + std::to_string(to);
      Harness& on_from = *harnesses[std::size_t(from)];
      Harness& on_to = *harnesses[std::size_t(to)];
      OutputCheck& check = *checks[std::size_t(to)];
      {
        ScopedDevice on(to);  // the source's random contents, regenerated from its seed on the destination
        fill_random(expected[std::size_t(to)].get(), Elem::f32, std::int64_t(bytes / 4), seed_of(from), on_to.stream());
      }
      // One verified launch into the poisoned destination, then the timing; a wrong copy is not timed.
      auto verified_measurement = [&](Harness& harness, const std::function<void(cudaStream_t)>& launch)
          -> std::pair<std::optional<Measurement>, std::string> {
        ScopedDevice on(to);
        check.poison(dst[std::size_t(to)].get(), bytes);
        AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(on_to.stream()));
        {
          ScopedDevice launch_on(harness.device());
          launch(harness.stream());
          AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(harness.stream()));
        }
        if (const auto bad = check.unequal(dst[std::size_t(to)].get(), expected[std::size_t(to)].get(), bytes))
          return {std::nullopt, wrong_values_text(bad, bytes)};
        return {harness.time(policy, launch), ""};
      };
      auto ceiling = [&](const std::string& name, const std::string& method,
                         const std::pair<std::optional<Measurement>, std::string>& result) {
        Ceiling c = {{"name", name}, {"kind", "interconnect"}, {"unit", "GB/s"}, {"source", "measured"},
                     {"method", method}, {"from", from}, {"to", to}};
        if (!result.first) {
          c["status"] = "failed";
          c["reason"] = result.second;
          return c;
        }
        const Measurement& m = *result.first;
        c["value"] = double(bytes) / (m.stats.median_ms * 1e-3) / 1e9;
        c["verified"] = true;
        c["time_ms"] = m.stats.to_json();
        c["samples"] = m.stats.samples;
        return c;
      };

      // The copy engines work between any two GPUs (staged through the host without peer access).
      out.push_back(ceiling("p2p.copy_engine." + pair, "cudaMemcpyPeerAsync of " + gib_text(bytes),
                            verified_measurement(on_from, [&](cudaStream_t s) {
                              AISPFLOW_CUDA_CHECK(cudaMemcpyPeerAsync(dst[std::size_t(to)].get(), to,
                                                                      src[std::size_t(from)].get(), from, bytes, s));
                            })));
      const std::string kernel_name = "p2p.kernel_read." + pair;
      const std::string kernel_method = "copy kernel on GPU " + std::to_string(to) + " reading GPU " +
                                        std::to_string(from) + "'s memory, " + gib_text(bytes) + " crossing the link";
      int can = 0;
      AISPFLOW_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, to, from));
      if (!can) {
        out.push_back({{"name", kernel_name}, {"kind", "interconnect"}, {"unit", "GB/s"}, {"source", "measured"},
                       {"method", kernel_method}, {"from", from}, {"to", to}, {"status", "not measured"},
                       {"reason", "GPU " + std::to_string(to) + " has no peer access to GPU " + std::to_string(from)}});
        continue;
      }
      {
        ScopedDevice on(to);
        const cudaError_t rc = cudaDeviceEnablePeerAccess(from, 0);
        if (rc == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
        else AISPFLOW_CUDA_CHECK(rc);
      }
      const int sms = sm_count(to);
      out.push_back(ceiling(kernel_name, kernel_method, verified_measurement(on_to, [&](cudaStream_t s) {
                              copy_kernel<4><<<unsigned(sms * 8), 256, 0, s>>>(
                                  src[std::size_t(from)].as<float4>(), dst[std::size_t(to)].as<float4>(),
                                  std::int64_t(bytes / 16));
                              AISPFLOW_CUDA_CHECK_LAUNCH();
                            })));
    }
  }
  return out;
}

}  // namespace aispflow::kernels::cuda
