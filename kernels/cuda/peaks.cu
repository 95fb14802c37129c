#include "kernels/cuda/peaks.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
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
  // memcpy D2D first: the yardstick the kernels are compared with, measured in the same call.
  const Measurement memcpy_m = harness.time(timing, [&](cudaStream_t s) {
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), array_bytes, cudaMemcpyDeviceToDevice, s));
  });
  Ceiling memcpy_ceiling = bandwidth_ceiling("hbm.memcpy_d2d", 2.0 * double(array_bytes), memcpy_m,
                                             "cudaMemcpyAsync device-to-device of " + gib_text(array_bytes) +
                                                 ", bytes = read + write");
  const double memcpy_gbs = memcpy_ceiling["value"].get<double>();

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
      auto launch = [&](cudaStream_t s) {
        with_unroll(shape.unroll, [&]<int U>() {
          const std::string name = k.name;
          if (name == "hbm.copy")
            copy_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), b.as<float4>(), vectors);
          else if (name == "hbm.triad")
            triad_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), b.as<float4>(), c.as<float4>(), 1.5f,
                                                                 vectors);
          else
            read_kernel<U><<<blocks, shape.threads, 0, s>>>(a.as<float4>(), block_sums.as<float>(), vectors);
        });
        AISPFLOW_CUDA_CHECK_LAUNCH();
      };
      Measurement m = harness.time(timing, launch);
      const double gbs = bytes / (m.stats.median_ms * 1e-3) / 1e9;
      variants.push_back({{"config", describe(shape, blocks)}, {"gb_per_s", gbs}, {"stdrel", m.stats.stdrel}});
      if (!best || m.stats.median_ms < best->stats.median_ms) {
        best = std::move(m);
        best_method = describe(shape, blocks);
      }
    }
    Ceiling ceiling = bandwidth_ceiling(k.name, bytes, *best,
                                        std::string("float4 kernel, ") + best_method + ", arrays of " +
                                            gib_text(array_bytes) + ", " + k.counted + "; best of the variants");
    ceiling["variants"] = variants;
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
  std::vector<DeviceBuffer> src, dst;
  std::vector<std::unique_ptr<Harness>> harnesses;
  for (int d = 0; d < count; ++d) {
    ScopedDevice on(d);
    src.emplace_back(bytes);
    dst.emplace_back(bytes);
    fill_random(src.back().get(), Elem::f32, std::int64_t(bytes / 4), 11 + std::uint64_t(d), nullptr);
    AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    harnesses.push_back(std::make_unique<Harness>(d));
  }
  TimingPolicy policy = timing;
  policy.flush_cache = false;
  std::vector<Ceiling> out;
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      int can = 0;
      AISPFLOW_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, to, from));
      if (!can) continue;
      {
        ScopedDevice on(to);
        const cudaError_t rc = cudaDeviceEnablePeerAccess(from, 0);
        if (rc == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
        else AISPFLOW_CUDA_CHECK(rc);
      }
      const std::string pair = std::to_string(from) + "->" + std::to_string(to);
      const Measurement ce = harnesses[std::size_t(from)]->time(policy, [&](cudaStream_t s) {
        AISPFLOW_CUDA_CHECK(cudaMemcpyPeerAsync(dst[std::size_t(to)].get(), to, src[std::size_t(from)].get(), from,
                                                bytes, s));
      });
      const int sms = sm_count(to);
      const Measurement kr = harnesses[std::size_t(to)]->time(policy, [&](cudaStream_t s) {
        copy_kernel<4><<<unsigned(sms * 8), 256, 0, s>>>(src[std::size_t(from)].as<float4>(),
                                                         dst[std::size_t(to)].as<float4>(), std::int64_t(bytes / 16));
        AISPFLOW_CUDA_CHECK_LAUNCH();
      });
      for (const auto& [name, m, method] :
           {std::tuple{"p2p.copy_engine." + pair, &ce, "cudaMemcpyPeerAsync of " + gib_text(bytes)},
            std::tuple{"p2p.kernel_read." + pair, &kr,
                       "copy kernel on GPU " + std::to_string(to) + " reading GPU " + std::to_string(from) +
                           "'s memory, " + gib_text(bytes) + " crossing the link"}}) {
        Ceiling c = {{"name", name},
                     {"kind", "interconnect"},
                     {"unit", "GB/s"},
                     {"value", double(bytes) / (m->stats.median_ms * 1e-3) / 1e9},
                     {"source", "measured"},
                     {"method", method},
                     {"from", from},
                     {"to", to},
                     {"time_ms", m->stats.to_json()},
                     {"samples", m->stats.samples}};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace aispflow::kernels::cuda
