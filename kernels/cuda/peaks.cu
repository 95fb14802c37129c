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

// Sums the array `passes` times (so no load can be dropped) and writes one value per block: reads dominate
// completely. passes > 1 only for the L2 probe, whose working set stays resident between passes; it loads
// with ld.global.cg (cached in L2, not in L1): a block re-reads the same slice each pass, and an SM's share of
// the working set would fit its L1, which would then be measured instead.
template <int U, bool kBypassL1 = false>
__global__ void read_kernel(const float4* __restrict__ src, float* __restrict__ block_sums, std::int64_t n, int passes) {
  auto load = [src](std::int64_t i) {
    if constexpr (kBypassL1) return __ldcg(src + i);
    else return src[i];
  };
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  float acc[U] = {};
  for (int pass = 0; pass < passes; ++pass) {
    std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = load(i + u * stride);
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (; i < n; i += stride) {
      const float4 v = load(i);
      acc[0] += (v.x + v.y) + (v.z + v.w);
    }
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

// ---- data with an exact sum (ExactPattern) -----------------------------------------------------------
__host__ __device__ inline float pattern_value(std::uint64_t i, std::uint32_t seed, std::uint32_t max_value) {
  std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (std::uint64_t(seed) << 32 | seed);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return float(1 + std::uint32_t(x % max_value));
}

__global__ void fill_pattern_kernel(float* __restrict__ out, std::int64_t n, std::uint32_t seed, std::uint32_t max_value) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = pattern_value(std::uint64_t(i), seed, max_value);
}

// Evaluates the closed form, never reading the array: the reference cannot share a fault with the data.
__global__ void pattern_sum_kernel(std::int64_t n, std::uint32_t seed, std::uint32_t max_value, unsigned long long* sum) {
  unsigned long long mine = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    mine += static_cast<unsigned long long>(pattern_value(std::uint64_t(i), seed, max_value));
  atomicAdd(sum, mine);
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

unsigned blocks_of(const LaunchShape& shape, int sms, std::int64_t vectors) {
  const std::int64_t per_block = std::int64_t(shape.threads) * shape.unroll;
  return shape.blocks_per_sm > 0 ? unsigned(sms * shape.blocks_per_sm)
                                 : unsigned(std::min<std::int64_t>((vectors + per_block - 1) / per_block, std::int64_t(1) << 31));
}

// The most floats one block of the read kernel adds up over all launch shapes: what the pattern's values
// must keep below 2^24 for the block sums to be exact.
std::uint64_t max_floats_per_block(int sms, std::int64_t vectors, int passes) {
  std::uint64_t most = 0;
  for (const auto& shape : kShapes) {
    const std::uint64_t threads = std::uint64_t(blocks_of(shape, sms, vectors)) * std::uint64_t(shape.threads);
    const std::uint64_t per_thread = (std::uint64_t(vectors) + threads - 1) / threads;
    most = std::max(most, per_thread * std::uint64_t(shape.threads) * 4 * std::uint64_t(passes));
  }
  return most;
}

std::string wrong_values_text(std::uint64_t bad, std::size_t bytes) {
  return std::to_string(bad) + " of " + std::to_string(bytes / 4) + " values wrong";
}

// One launch into poisoned block sums; they must add up to `want` exactly (ExactPattern: every partial sum
// is an integer below 2^24, so fp32 loses nothing and the order of the additions does not matter).
template <class Launch>
std::optional<std::string> check_read(OutputCheck& check, Launch&& launch, cudaStream_t stream,
                                      const DeviceBuffer& block_sums, unsigned blocks, std::uint64_t want) {
  check.poison(block_sums.get(), std::size_t(blocks) * sizeof(float));
  launch(stream);
  std::vector<float> sums(blocks);
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(sums.data(), block_sums.get(), sums.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  double got = 0;
  for (float v : sums) got += v;
  if (got != double(want))
    return "block sums add up to " + std::to_string(got) + ", the data sums to exactly " + std::to_string(want);
  return std::nullopt;
}

// Runs one launch of copy or triad into a poisoned output and checks it against its definition: copy
// b == a exactly, triad a == b + s*c. Returns what was wrong, or nullopt.
template <class Launch>
std::optional<std::string> check_copy_or_triad(OutputCheck& check, bool copy, Launch&& launch, cudaStream_t stream,
                                               const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c,
                                               float triad_scale) {
  const std::size_t bytes = a.bytes();
  const DeviceBuffer& output = copy ? b : a;
  check.poison(output.get(), bytes);
  launch(stream);
  const std::uint64_t bad = copy ? check.unequal(b.get(), a.get(), bytes)
                                 : check.triad_errors(a.get(), b.get(), c.get(), triad_scale, bytes);
  if (bad) return wrong_values_text(bad, bytes);
  return std::nullopt;
}

std::string describe(const LaunchShape& s, unsigned blocks) {
  return std::to_string(s.unroll) + " x 16 B loads in flight per thread, " + std::to_string(blocks) + " blocks x " +
         std::to_string(s.threads) + " threads" + (s.blocks_per_sm > 0 ? " (grid-stride)" : " (one pass)");
}

std::string size_text(std::size_t bytes) {
  char buffer[32];
  if (bytes >= (std::size_t(1) << 30))
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", double(bytes) / double(1ull << 30));
  else
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", double(bytes) / double(1ull << 20));
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

// Every launch shape of one bandwidth kernel: verified (`check` returns what was wrong), then timed; the best
// is the ceiling and all are listed under "variants". No shape right: a failed ceiling without a number.
struct VariantRun {
  std::function<void(cudaStream_t, const LaunchShape&, unsigned)> launch;
  std::function<std::optional<std::string>(const std::function<void(cudaStream_t)>&, unsigned)> check;
};
Ceiling best_of_shapes(Harness& harness, const TimingPolicy& timing, const std::string& name, const std::string& level,
                       double bytes, std::int64_t vectors, const std::string& what, const VariantRun& run) {
  const int sms = sm_count(harness.device());
  nlohmann::json variants = nlohmann::json::array();
  std::optional<Measurement> best;
  std::string best_method;
  for (const auto& shape : kShapes) {
    const unsigned blocks = blocks_of(shape, sms, vectors);
    const std::function<void(cudaStream_t)> launch = [&](cudaStream_t s) { run.launch(s, shape, blocks); };
    // Verified before it is timed: one launch into a poisoned output, checked against the definition.
    if (auto wrong = run.check(launch, blocks)) {
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
  if (!best)   // no variant computed the right thing: a failed ceiling, without a number
    return {{"name", name}, {"kind", "memory"}, {"level", level}, {"unit", "GB/s"}, {"source", "measured"},
            {"status", "failed"}, {"reason", "every launch shape gave wrong results"}, {"variants", variants}};
  Ceiling ceiling = measured_bandwidth_ceiling(name, level, bytes, *best,
                                               "float4 kernel, " + best_method + ", " + what + "; best of the variants");
  ceiling["variants"] = variants;
  ceiling["verified"] = true;
  if (!best->warnings.empty()) ceiling["warnings"] = best->warnings;
  return ceiling;
}

// The read kernel with a sabotage applied (tests only): half the data, or zeroed block sums afterwards.
void launch_read(cudaStream_t s, const LaunchShape& shape, unsigned blocks, const DeviceBuffer& data,
                 const DeviceBuffer& block_sums, std::int64_t vectors, int passes, Sabotage sabotage) {
  const std::int64_t n = sabotage == Sabotage::read_half ? vectors / 2 : vectors;
  with_unroll(shape.unroll, [&]<int U>() {
    if (passes > 1)
      read_kernel<U, true><<<blocks, shape.threads, 0, s>>>(data.as<float4>(), block_sums.as<float>(), n, passes);
    else
      read_kernel<U><<<blocks, shape.threads, 0, s>>>(data.as<float4>(), block_sums.as<float>(), n, passes);
  });
  AISPFLOW_CUDA_CHECK_LAUNCH();
  if (sabotage == Sabotage::zero_block_sums)
    AISPFLOW_CUDA_CHECK(cudaMemsetAsync(block_sums.get(), 0, std::size_t(blocks) * sizeof(float), s));
}

}  // namespace

Ceiling measured_bandwidth_ceiling(const std::string& name, const std::string& level, double bytes,
                                   const Measurement& m, const std::string& method) {
  return {{"name", name},
          {"kind", "memory"},
          {"level", level},
          {"unit", "GB/s"},
          {"value", bytes / (m.stats.median_ms * 1e-3) / 1e9},
          {"source", "measured"},
          {"method", method},
          {"bytes_per_launch", bytes},
          {"time_ms", m.stats.to_json()},
          {"samples", m.stats.samples},
          {"timing", m.timing_json()}};
}

void ExactPattern::fill(void* data, std::size_t bytes, cudaStream_t stream) const {
  fill_pattern_kernel<<<1024, 256, 0, stream>>>(static_cast<float*>(data), std::int64_t(bytes / 4), seed, max_value);
  AISPFLOW_CUDA_CHECK_LAUNCH();
}

std::uint64_t ExactPattern::sum(std::size_t bytes, cudaStream_t stream) const {
  DeviceBuffer total(sizeof(unsigned long long));
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(total.get(), 0, total.bytes(), stream));
  pattern_sum_kernel<<<1024, 256, 0, stream>>>(std::int64_t(bytes / 4), seed, max_value, total.as<unsigned long long>());
  AISPFLOW_CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&host, total.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

std::uint32_t ExactPattern::max_value_for(std::uint64_t values) {
  if (values == 0) return 8;
  return std::uint32_t(std::min<std::uint64_t>(8, ((std::uint64_t(1) << 24) - 1) / values));
}

OutputCheck::OutputCheck(cudaStream_t stream) : stream_(stream), scratch_(sizeof(unsigned long long)) {
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

std::vector<Ceiling> measure_bandwidth(Harness& harness, std::size_t array_bytes, const TimingPolicy& timing,
                                       Sabotage sabotage) {
  ScopedDevice on(harness.device());
  const cudaStream_t stream = harness.stream();
  array_bytes = std::max<std::size_t>(array_bytes / 16 * 16, 16);
  const std::int64_t vectors = std::int64_t(array_bytes / 16);
  const int sms = sm_count(harness.device());
  DeviceBuffer a(array_bytes), b(array_bytes), c(array_bytes);
  // Three different contents, never zeros: a copy from the wrong array or a triad reading one operand twice
  // cannot pass, and nothing in the memory system gets to treat the data as special. `a` holds small
  // integers with an exact sum (the read probe's reference), b and c random floats of different seeds.
  ExactPattern pattern;
  pattern.max_value = ExactPattern::max_value_for(max_floats_per_block(sms, vectors, 1));
  if (pattern.max_value == 0)
    throw std::invalid_argument("bandwidth arrays of " + size_text(array_bytes) + " are too large for an exact read check");
  pattern.fill(a.get(), array_bytes, stream);
  fill_random(b.get(), Elem::f32, std::int64_t(array_bytes / 4), 0xb0b, stream);
  fill_random(c.get(), Elem::f32, std::int64_t(array_bytes / 4), 0xc0c, stream);
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
  Ceiling memcpy_ceiling = measured_bandwidth_ceiling("hbm.memcpy_d2d", "hbm", 2.0 * double(array_bytes), memcpy_m,
                                                      "cudaMemcpyAsync device-to-device of " + size_text(array_bytes) +
                                                          ", bytes = read + write");
  memcpy_ceiling["verified"] = true;
  const double memcpy_gbs = memcpy_ceiling["value"].get<double>();
  // b is a's copy now: refill it so b, c and a differ again before the copy and triad checks.
  fill_random(b.get(), Elem::f32, std::int64_t(array_bytes / 4), 0xb0b, stream);
  constexpr float kTriadScale = 1.5f;
  const std::string arrays = "arrays of " + size_text(array_bytes);

  auto beside_memcpy = [&](Ceiling ceiling) {
    if (ceiling.contains("value")) {
      ceiling["memcpy_d2d_gb_per_s"] = memcpy_gbs;
      ceiling["fraction_of_memcpy_d2d"] = ceiling["value"].get<double>() / memcpy_gbs;
    }
    out.push_back(std::move(ceiling));
  };
  beside_memcpy(best_of_shapes(
      harness, timing, "hbm.copy", "hbm", 2.0 * double(array_bytes), vectors, arrays + ", bytes = read + write",
      {[&](cudaStream_t s, const LaunchShape& shape, unsigned blocks) {
         const DeviceBuffer& source = sabotage == Sabotage::copy_wrong_source ? c : a;
         with_unroll(shape.unroll, [&]<int U>() {
           copy_kernel<U><<<blocks, shape.threads, 0, s>>>(source.as<float4>(), b.as<float4>(), vectors);
         });
         AISPFLOW_CUDA_CHECK_LAUNCH();
       },
       [&](const std::function<void(cudaStream_t)>& launch, unsigned) {
         return check_copy_or_triad(check, true, launch, stream, a, b, c, kTriadScale);
       }}));
  beside_memcpy(best_of_shapes(
      harness, timing, "hbm.triad", "hbm", 3.0 * double(array_bytes), vectors,
      arrays + ", a = b + s*c, bytes = 2 reads + 1 write",
      {[&](cudaStream_t s, const LaunchShape& shape, unsigned blocks) {
         const DeviceBuffer& second = sabotage == Sabotage::triad_b_twice ? b : c;
         with_unroll(shape.unroll, [&]<int U>() {
           triad_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), b.as<float4>(), second.as<float4>(),
                                                                kTriadScale, vectors);
         });
         AISPFLOW_CUDA_CHECK_LAUNCH();
       },
       [&](const std::function<void(cudaStream_t)>& launch, unsigned) {
         return check_copy_or_triad(check, false, launch, stream, a, b, c, kTriadScale);
       }}));
  // The triad overwrote a: the pattern again, and its sum from the closed form.
  pattern.fill(a.get(), array_bytes, stream);
  const std::uint64_t want = pattern.sum(array_bytes, stream);
  beside_memcpy(best_of_shapes(
      harness, timing, "hbm.read", "hbm", double(array_bytes), vectors,
      arrays + ", sum reduction, bytes = reads (one float per block written)",
      {[&](cudaStream_t s, const LaunchShape& shape, unsigned blocks) {
         launch_read(s, shape, blocks, a, block_sums, vectors, 1, sabotage);
       },
       [&](const std::function<void(cudaStream_t)>& launch, unsigned blocks) {
         return check_read(check, launch, stream, block_sums, blocks, want);
       }}));
  if (!memcpy_m.warnings.empty()) memcpy_ceiling["warnings"] = memcpy_m.warnings;
  out.push_back(std::move(memcpy_ceiling));
  return out;
}

Ceiling measure_l2_read(Harness& harness, std::size_t l2_bytes, const TimingPolicy& timing, Sabotage sabotage) {
  ScopedDevice on(harness.device());
  const cudaStream_t stream = harness.stream();
  // A quarter of the L2: resident whatever the partitioning and the replacement policy do. The loads bypass
  // L1 (read_kernel<U, true>), so repeated passes are served by L2.
  const std::size_t working_set = std::max<std::size_t>(l2_bytes / 4 / 16 * 16, 16);
  const std::int64_t vectors = std::int64_t(working_set / 16);
  const int sms = sm_count(harness.device());
  // About 1 GiB read per launch (tens of microseconds), so launch gaps do not count.
  int passes = int(std::clamp<std::size_t>((std::size_t(1) << 30) / working_set, 1, 1024));
  while (passes > 1 && ExactPattern::max_value_for(max_floats_per_block(sms, vectors, passes)) == 0) passes /= 2;
  ExactPattern pattern;
  pattern.seed = 0x12;
  pattern.max_value = ExactPattern::max_value_for(max_floats_per_block(sms, vectors, passes));
  if (pattern.max_value == 0) throw std::logic_error("l2.read: no exact pattern for this working set");
  DeviceBuffer data(working_set);
  pattern.fill(data.get(), working_set, stream);
  const std::uint64_t want = std::uint64_t(passes) * pattern.sum(working_set, stream);
  DeviceBuffer block_sums(std::size_t(vectors / 256 + std::int64_t(sms) * 64 + 1) * sizeof(float));
  OutputCheck check(stream);
  TimingPolicy policy = timing;
  policy.flush_cache = false;   // the point: the working set stays in L2 between samples too
  return best_of_shapes(
      harness, policy, "l2.read", "l2", double(working_set) * passes, vectors,
      "working set of " + size_text(working_set) + " (a quarter of the " + size_text(l2_bytes) + " L2) read " +
          std::to_string(passes) + " times per launch, L2 not flushed, sum reduction, bytes = reads",
      {[&](cudaStream_t s, const LaunchShape& shape, unsigned blocks) {
         launch_read(s, shape, blocks, data, block_sums, vectors, passes, sabotage);
       },
       [&](const std::function<void(cudaStream_t)>& launch, unsigned blocks) {
         return check_read(check, launch, stream, block_sums, blocks, want);
       }});
}

namespace {

// Peer access of `device` to `peer`'s memory, enabled now (idempotent: already enabled is fine).
void enable_peer_access(int device, int peer) {
  ScopedDevice on(device);
  const cudaError_t rc = cudaDeviceEnablePeerAccess(peer, 0);
  if (rc == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
  else AISPFLOW_CUDA_CHECK(rc);
}

// How a copy from `from` to `to` travels given which peer accesses are enabled (enabled[a][b]: a reaches b's
// memory). cudaMemcpyPeerAsync goes over the link only with peer access; without it the driver stages the bytes
// through host memory (the CUDA runtime's documented fallback), at a fraction of NVLink's speed.
const char* copy_path(const std::vector<std::vector<bool>>& enabled, int from, int to) {
  if (from == to) return "local";
  if (enabled[std::size_t(from)][std::size_t(to)] && enabled[std::size_t(to)][std::size_t(from)]) return "direct";
  if (enabled[std::size_t(from)][std::size_t(to)] || enabled[std::size_t(to)][std::size_t(from)])
    return "direct or staged through the host (peer access enabled in one direction only; the driver decides)";
  return "staged through the host";
}

}  // namespace

std::vector<Ceiling> measure_p2p(std::size_t bytes, const TimingPolicy& timing, bool include_local, Sabotage sabotage) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < (include_local ? 1 : 2)) return {};
  bytes = std::max<std::size_t>(bytes / 16 * 16, 16);
  auto seed_of = [](int device) { return 11 + std::uint64_t(device); };
  std::vector<DeviceBuffer> src, dst, expected;
  std::vector<std::unique_ptr<Harness>> harnesses;
  std::vector<std::unique_ptr<OutputCheck>> checks;
  std::vector<std::size_t> l2_bytes;   // per GPU, for the record's warning at small sizes
  for (int d = 0; d < count; ++d) {
    ScopedDevice on(d);
    int l2 = 0;
    AISPFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, d));
    l2_bytes.push_back(std::size_t(l2));
    src.emplace_back(bytes);
    dst.emplace_back(bytes);
    expected.emplace_back(bytes);  // on this GPU: what a copy from the current source GPU must leave
    fill_random(src.back().get(), Elem::f32, std::int64_t(bytes / 4), seed_of(d), nullptr);
    AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    harnesses.push_back(std::make_unique<Harness>(d));
    checks.push_back(std::make_unique<OutputCheck>(harnesses.back()->stream()));
  }
  // What the copies move: all of it, or half under the test hook (the check must then fail).
  const std::size_t moved = sabotage == Sabotage::p2p_half ? bytes / 32 * 16 : bytes;
  const bool lazy = sabotage == Sabotage::p2p_lazy_peer;
  // can[a][b]: a may reach b's memory; enabled[a][b]: it does now.
  const std::vector<bool> none_of(std::size_t(count), false);
  std::vector<std::vector<bool>> can(std::size_t(count), none_of), enabled = can;
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b) {
      int ok = 0;
      if (a != b) AISPFLOW_CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, a, b));
      can[std::size_t(a)][std::size_t(b)] = ok != 0;
    }
  // Why up front (issue 18): enabled lazily, as the first kernel read needed it, the first pair's copy-engine copy
  // ran before any peer access existed, so the driver staged it through the host (GPU 0 -> 1 at 37 GB/s on two
  // H200s while 1 -> 0 gave 371 GB/s). Every pair, both directions, before anything is copied or timed.
  if (!lazy)
    for (int a = 0; a < count; ++a)
      for (int b = 0; b < count; ++b)
        if (can[std::size_t(a)][std::size_t(b)]) {
          enable_peer_access(a, b);
          enabled[std::size_t(a)][std::size_t(b)] = true;
        }

  auto copy_engine = [&](int from, int to) {
    return [&, from, to](cudaStream_t s) {
      if (from == to)
        AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(dst[std::size_t(to)].get(), src[std::size_t(from)].get(), moved,
                                            cudaMemcpyDeviceToDevice, s));
      else
        AISPFLOW_CUDA_CHECK(cudaMemcpyPeerAsync(dst[std::size_t(to)].get(), to, src[std::size_t(from)].get(), from,
                                                moved, s));
    };
  };
  auto kernel_read = [&](int from, int to) {
    return [&, from, to](cudaStream_t s) {
      copy_kernel<4><<<unsigned(sm_count(to) * 8), 256, 0, s>>>(src[std::size_t(from)].as<float4>(),
                                                                  dst[std::size_t(to)].as<float4>(),
                                                                  std::int64_t(moved / 16));
      AISPFLOW_CUDA_CHECK_LAUNCH();
    };
  };
  // One untimed copy of every pair by each method, before the first timing: first-touch costs (mappings,
  // module load, the copy engines' first use) land here, not in whichever pair happens to be measured first.
  if (!lazy)
    for (int from = 0; from < count; ++from)
      for (int to = 0; to < count; ++to) {
        if (from == to && !include_local) continue;
        {
          ScopedDevice on(from);
          copy_engine(from, to)(harnesses[std::size_t(from)]->stream());
          AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(harnesses[std::size_t(from)]->stream()));
        }
        if (from == to || enabled[std::size_t(to)][std::size_t(from)]) {
          ScopedDevice on(to);
          kernel_read(from, to)(harnesses[std::size_t(to)]->stream());
          AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(harnesses[std::size_t(to)]->stream()));
        }
      }

  TimingPolicy policy = timing;
  policy.flush_cache = false;
  std::vector<Ceiling> out;
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to && !include_local) continue;
      const bool local = from == to;
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
      // The record, with how the bytes travelled as it stood when this copy was timed.
      // A kernel read needs only the reader's access and always loads over the link; a copy-engine copy's path
      // depends on both directions (copy_path).
      auto record = [&](const std::string& name, const std::string& method, bool kernel) {
        Ceiling c = {{"name", name}, {"kind", "interconnect"}, {"unit", "GB/s"}, {"source", "measured"},
                     {"method", method}, {"from", from}, {"to", to}};
        const bool reads = enabled[std::size_t(to)][std::size_t(from)], writes = enabled[std::size_t(from)][std::size_t(to)];
        if (!local) c["peer_access"] = kernel ? reads : reads && writes;
        c["path"] = local ? "local" : kernel ? (reads ? "direct" : "none: no peer access") : copy_path(enabled, from, to);
        return c;
      };
      auto ceiling = [&](const std::string& name, const std::string& method, bool kernel,
                         const std::pair<std::optional<Measurement>, std::string>& result) {
        Ceiling c = record(name, method, kernel);
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
        c["timing"] = m.timing_json();
        std::vector<std::string> warnings = m.warnings;
        if (bytes <= l2_bytes[std::size_t(to)])
          warnings.push_back("source and destination (2 x " + size_text(bytes) + ") are at most twice the " +
                             size_text(l2_bytes[std::size_t(to)]) + " L2, which is not flushed between samples: "
                             "the copy runs largely from L2, so this measures L2 rather than HBM bandwidth "
                             "(docs/nodes-comm.md, p2p)");
        if (!warnings.empty()) c["warnings"] = warnings;
        return c;
      };

      // The copy engines work between any two GPUs (staged through the host without peer access). Within one
      // GPU it is a plain device-to-device copy; unlike a peer copy, a CUDA graph can hold it, so a short one is
      // timed without launch overhead (see Harness::time). Both directions of a pair are pushed by the source.
      out.push_back(ceiling("p2p.copy_engine." + pair,
                            (local ? "cudaMemcpyAsync device to device within GPU " + std::to_string(to) + ", "
                                   : std::string("cudaMemcpyPeerAsync of ")) + size_text(bytes), false,
                            verified_measurement(on_from, copy_engine(from, to))));
      const std::string kernel_name = "p2p.kernel_read." + pair;
      const std::string kernel_method =
          local ? "copy kernel on GPU " + std::to_string(to) + " within its own memory, " + size_text(bytes)
                : "copy kernel on GPU " + std::to_string(to) + " reading GPU " + std::to_string(from) + "'s memory, " +
                      size_text(bytes) + " crossing the link";
      if (!local && !can[std::size_t(to)][std::size_t(from)]) {
        Ceiling c = record(kernel_name, kernel_method, true);
        c["status"] = "not measured";
        c["reason"] = "GPU " + std::to_string(to) + " has no peer access to GPU " + std::to_string(from);
        out.push_back(std::move(c));
        continue;
      }
      if (lazy && !local) {   // the old order: enabled only now, after the copy-engine copy above was timed
        enable_peer_access(to, from);
        enabled[std::size_t(to)][std::size_t(from)] = true;
      }
      out.push_back(ceiling(kernel_name, kernel_method, true, verified_measurement(on_to, kernel_read(from, to))));
    }
  }
  return out;
}

}  // namespace aispflow::kernels::cuda
