// On-chip ceilings of the CUDA backend: shared-memory read bandwidth ("smem.read") and fp32 FMA throughput of
// the CUDA cores ("cuda_core.fp32"). Like every probe, each kernel's result is checked before it is timed,
// against a closed form the kernel cannot share a fault with (peaks.hpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/peaks.hpp"

namespace aispflow::kernels::cuda {

namespace {

int sm_count(int device) {
  int sms = 0;
  AISPFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// ---- shared-memory read ------------------------------------------------------------------------------
// 16 KiB tile: eight blocks of 256 threads fill an SM (2048 threads) with 128 KiB of shared memory.
constexpr int kTileVectors = 1024;   // float4
constexpr int kSmemThreads = 256, kSmemBlocksPerSm = 8;
constexpr int kVectorsPerThread = kTileVectors / kSmemThreads;

// Each pass, thread t reads vectors (t + j*256 + 8*pass) mod 1024, j < 4: every pass reads the whole tile
// exactly once (a rotation), a warp's 32 float4 stay contiguous (conflict-free), and the addresses change
// from pass to pass so no load can be hoisted out of the loop. Four accumulators keep four loads in flight.
__global__ void smem_read_kernel(const float4* __restrict__ tile_source, float* __restrict__ block_sums, int passes) {
  __shared__ float4 tile[kTileVectors];
  for (int v = threadIdx.x; v < kTileVectors; v += blockDim.x) tile[v] = tile_source[v];
  __syncthreads();
  float4 acc[kVectorsPerThread] = {};
  for (int pass = 0; pass < passes; ++pass) {
#pragma unroll
    for (int j = 0; j < kVectorsPerThread; ++j) {
      const float4 v = tile[(threadIdx.x + j * kSmemThreads + 8 * pass) & (kTileVectors - 1)];
      acc[j].x += v.x;
      acc[j].y += v.y;
      acc[j].z += v.z;
      acc[j].w += v.w;
    }
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kVectorsPerThread; ++j) sum += (acc[j].x + acc[j].y) + (acc[j].z + acc[j].w);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[kSmemThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (int w = 0; w < kSmemThreads / 32; ++w) total += warp_sums[w];
    block_sums[blockIdx.x] = total;
  }
}

// Block sums that differ from `want` (all blocks read the same tile the same number of times).
__global__ void count_block_sums_off(const float* __restrict__ sums, int blocks, float want, unsigned* bad) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += gridDim.x * blockDim.x)
    if (sums[b] != want) atomicAdd(bad, 1u);
}

// ---- fp32 FMA ---------------------------------------------------------------------------------------
// 8 independent dependency chains per thread hide the FMA latency; a and b are run-time values so the
// compiler cannot fold the chains. Every thread writes its sum, which the host compares with the closed form.
constexpr int kFmaChains = 8;
__host__ __device__ inline float fma_start(unsigned thread, int chain) { return 1.0f + float(thread % 16) + float(chain); }

__global__ void fma_kernel(float* out, float a, float b, int iterations) {
  float x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) x[j] = fma_start(threadIdx.x, j);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kFmaChains; ++j) x[j] = fmaf(x[j], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) sum += x[j];
  out[std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

// Threads whose sum is off the closed form. x_{i+1} = a x_i + b converges to x_f = b / (1 - a):
// x_n = x_f + a^n (x_0 - x_f). Each fmaf rounds once (at most 2^-24 relative); the errors shrink by a each
// step, so a chain is off by at most 2^-24 max|x| / (1 - a); the final 8-term fp32 sum adds 8 roundings.
// Twice that bound is allowed. Stopping d iterations early misses by about a^n (a^-d - 1) sum|x_0 - x_f|. The
// probe's a = 1 - 2^-12 and b = -2^-10 (exact in fp32; x_f = -4, below every start, so the chains' misses add
// up) with n = 8192 (a^n = e^-2) make that miss 16-21x the bound for 8000 of 8192 iterations and ~600x for half,
// while a full run stays below 1/1000 of it (simulated with std::fmaf over every start value; losing a single
// iteration already reaches a tenth of the bound).
std::size_t fma_threads_off(const std::vector<float>& got, int threads, float a, float b, int iterations) {
  const double ad = a, bd = b, fixed = bd / (1.0 - ad), an = std::pow(ad, iterations);
  std::size_t off = 0;
  for (std::size_t g = 0; g < got.size(); ++g) {
    const unsigned t = unsigned(g % std::size_t(threads));
    double want = 0, magnitude = 0;
    for (int j = 0; j < kFmaChains; ++j) {
      const double x0 = fma_start(t, j);
      want += fixed + an * (x0 - fixed);
      magnitude += std::max(std::abs(x0), std::abs(fixed));
    }
    const double bound = 2.0 * std::ldexp(1.0, -24) * magnitude * (1.0 / (1.0 - ad) + kFmaChains);
    if (!(std::abs(double(got[g]) - want) <= bound)) ++off;
  }
  return off;
}

Ceiling failed_ceiling(Ceiling c, const std::string& reason) {
  c["status"] = "failed";
  c["reason"] = reason;
  return c;
}

}  // namespace

Ceiling measure_smem_read(Harness& harness, const TimingPolicy& timing, Sabotage sabotage) {
  ScopedDevice on(harness.device());
  const cudaStream_t stream = harness.stream();
  const unsigned blocks = unsigned(sm_count(harness.device()) * kSmemBlocksPerSm);
  // 256 passes of 4096 values of at most 8: partial sums below 2^24, exact in fp32.
  constexpr int kPasses = 256;
  ExactPattern pattern;
  pattern.seed = 0x5e;
  pattern.max_value = ExactPattern::max_value_for(std::uint64_t(kTileVectors) * 4 * kPasses);
  DeviceBuffer tile(std::size_t(kTileVectors) * 16), block_sums(std::size_t(blocks) * sizeof(float)),
      bad(sizeof(unsigned));
  pattern.fill(tile.get(), tile.bytes(), stream);
  const float want = float(std::uint64_t(kPasses) * pattern.sum(tile.bytes(), stream));
  const double bytes = double(blocks) * kPasses * double(tile.bytes());
  auto launch = [&](cudaStream_t s) {
    smem_read_kernel<<<blocks, kSmemThreads, 0, s>>>(tile.as<float4>(), block_sums.as<float>(),
                                                    sabotage == Sabotage::read_half ? kPasses / 2 : kPasses);
    AISPFLOW_CUDA_CHECK_LAUNCH();
    if (sabotage == Sabotage::zero_block_sums)
      AISPFLOW_CUDA_CHECK(cudaMemsetAsync(block_sums.get(), 0, block_sums.bytes(), s));
  };
  const std::string method = std::to_string(blocks) + " blocks x " + std::to_string(kSmemThreads) +
                              " threads, each reading its 16 KiB shared-memory tile " + std::to_string(kPasses) +
                              " times (float4, conflict-free), bytes = shared-memory reads";
  Ceiling c = {{"name", "smem.read"}, {"kind", "memory"}, {"level", "smem"}, {"unit", "GB/s"},
               {"source", "measured"}, {"method", method}};
  // Verified before it is timed: poisoned block sums, one launch, every block's sum equal to the closed form.
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(block_sums.get(), 0xff, block_sums.bytes(), stream));
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(bad.get(), 0, bad.bytes(), stream));
  launch(stream);
  count_block_sums_off<<<(blocks + 255) / 256, 256, 0, stream>>>(block_sums.as<float>(), int(blocks), want, bad.as<unsigned>());
  AISPFLOW_CUDA_CHECK_LAUNCH();
  unsigned wrong = 0;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&wrong, bad.get(), sizeof wrong, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (wrong)
    return failed_ceiling(c, std::to_string(wrong) + " of " + std::to_string(blocks) + " block sums differ from " +
                                 std::to_string(std::uint64_t(want)) + " (the tile's exact sum x " +
                                 std::to_string(kPasses) + " passes)");
  TimingPolicy policy = timing;
  policy.flush_cache = false;   // on-chip: global memory traffic is one 16 KiB tile per block
  const Measurement m = harness.time(policy, launch);
  Ceiling out = measured_bandwidth_ceiling("smem.read", "smem", bytes, m, method);
  out["verified"] = true;
  if (!m.warnings.empty()) out["warnings"] = m.warnings;
  return out;
}

Ceiling measure_fp32_fma(Harness& harness, const TimingPolicy& timing, Sabotage sabotage) {
  ScopedDevice on(harness.device());
  const int sms = sm_count(harness.device());
  constexpr int kThreads = 256, kBlocksPerSm = 8, kIterations = 8192;
  // a^8192 = e^-2: far enough from 0 that every iteration still moves the result (see fma_threads_off).
  constexpr float kA = 1.0f - 0x1p-12f, kB = -0x1p-10f;
  const unsigned blocks = unsigned(sms * kBlocksPerSm);
  DeviceBuffer out(std::size_t(blocks) * kThreads * sizeof(float));
  auto launch = [&](cudaStream_t s) {
    if (sabotage == Sabotage::fma_noop) return;
    const int iterations = sabotage == Sabotage::fma_half    ? kIterations / 2
                           : sabotage == Sabotage::fma_short ? kIterations - 192
                                                             : kIterations;
    fma_kernel<<<blocks, kThreads, 0, s>>>(out.as<float>(), kA, kB, iterations);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  };
  const double flops = 2.0 * kFmaChains * double(kIterations) * double(blocks) * kThreads;
  const std::string method = "FMA kernel: " + std::to_string(kFmaChains) + " independent chains per thread, " +
                             std::to_string(blocks) + " blocks x " + std::to_string(kThreads) +
                             " threads, 2 FLOP per FMA; every thread's result checked against the closed form";
  Ceiling c = {{"name", "cuda_core.fp32"}, {"kind", "compute"}, {"unit", "TFLOP/s"}, {"dtype", "fp32"},
               {"source", "measured"}, {"method", method}};
  // Verified before it is timed: output poisoned with NaN, one launch, every thread's sum vs the closed form.
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(out.get(), 0xff, out.bytes(), harness.stream()));
  launch(harness.stream());
  std::vector<float> got(std::size_t(blocks) * kThreads);
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(got.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost, harness.stream()));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(harness.stream()));
  if (const std::size_t off = fma_threads_off(got, kThreads, kA, kB, kIterations))
    return failed_ceiling(c, std::to_string(off) + " of " + std::to_string(got.size()) +
                                 " threads' results are off the closed form x_f + a^n (x_0 - x_f)");
  TimingPolicy policy = timing;
  policy.flush_cache = false;   // no memory traffic to speak of
  const Measurement m = harness.time(policy, launch);
  c["value"] = flops / (m.stats.median_ms * 1e-3) / 1e12;
  c["verified"] = true;
  c["time_ms"] = m.stats.to_json();
  c["samples"] = m.stats.samples;
  c["timing"] = m.timing_json();
  if (!m.warnings.empty()) c["warnings"] = m.warnings;
  return c;
}

}  // namespace aispflow::kernels::cuda
