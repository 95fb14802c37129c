#include "kernels/cuda/code_eviction.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <vector>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace aispflow::kernels::cuda {

namespace {

// One step of a dependent chain no compiler can shorten: an add of a run-time value and a rotate, which ptxas fuses
// into one 16-byte instruction (LEA.HI on sm_90). x is the chain, y a kernel argument.
#define AISPFLOW_STEP asm volatile("add.u32 %0, %0, %1;\n\tshf.l.wrap.b32 %0, %0, %0, 5;" : "+r"(x) : "r"(y));
#define AISPFLOW_STEP4 AISPFLOW_STEP AISPFLOW_STEP AISPFLOW_STEP AISPFLOW_STEP
#define AISPFLOW_STEP16 AISPFLOW_STEP4 AISPFLOW_STEP4 AISPFLOW_STEP4 AISPFLOW_STEP4
#define AISPFLOW_STEP64 AISPFLOW_STEP16 AISPFLOW_STEP16 AISPFLOW_STEP16 AISPFLOW_STEP16
#define AISPFLOW_STEP256 AISPFLOW_STEP64 AISPFLOW_STEP64 AISPFLOW_STEP64 AISPFLOW_STEP64
#define AISPFLOW_STEP1K AISPFLOW_STEP256 AISPFLOW_STEP256 AISPFLOW_STEP256 AISPFLOW_STEP256

// kKiloSteps x 1024 steps of 16 bytes of SASS each. The kernels store the result only if it equals a value the
// chain never reaches, so the code stays and nothing is written.
template <int kKiloSteps>
__device__ __forceinline__ unsigned run_steps(unsigned x, unsigned y) {
#pragma unroll
  for (int i = 0; i < kKiloSteps; ++i) {
    AISPFLOW_STEP1K
  }
  return x;
}

// 16 K steps: 256 KB of code (cuobjdump: the whole body unrolled), twice the 128 KB instruction/constant cache an
// SM has had since Volta (its L0 caches are smaller), and more than any GEMM instance of ours (52-89 KB).
__global__ void eviction_kernel(unsigned y, unsigned* sink) {
  const unsigned x = run_steps<16>(threadIdx.x, y);
  if (x == 0xFFFFFFFFu && y == 0) *sink = x;
}

// The test hook's kernel: 64 blocks of 16 steps (256 bytes of code each), visited in an order the compiler cannot
// know (the stride is an argument), so that every visit jumps: a cold SM fetches each block afresh, one miss per
// jump, which no sequential prefetch hides (straight-line code hides it: a dependent chain of 16 KB measured 4123
// cycles warm and cold alike on an H100; this kernel takes 8-9 % more cold). One warp a block; block b stores its
// cycles in cycles[b].
#define AISPFLOW_CASE(n) \
  case n:                \
    AISPFLOW_STEP16      \
    break;
#define AISPFLOW_CASES8(n) \
  AISPFLOW_CASE(n) AISPFLOW_CASE(n + 1) AISPFLOW_CASE(n + 2) AISPFLOW_CASE(n + 3) AISPFLOW_CASE(n + 4) \
      AISPFLOW_CASE(n + 5) AISPFLOW_CASE(n + 6) AISPFLOW_CASE(n + 7)
__global__ void scattered_code_kernel(unsigned y, unsigned stride, long long* cycles) {
  unsigned x = threadIdx.x;
  const long long start = clock64();
#pragma unroll 1
  for (unsigned i = 0; i < 64; ++i) {
    switch ((i * stride) & 63) {
      AISPFLOW_CASES8(0) AISPFLOW_CASES8(8) AISPFLOW_CASES8(16) AISPFLOW_CASES8(24)
      AISPFLOW_CASES8(32) AISPFLOW_CASES8(40) AISPFLOW_CASES8(48) AISPFLOW_CASES8(56)
    }
  }
  const long long end = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = end - start;
  if (x == 0xFFFFFFFFu && y == 0) cycles[blockIdx.x] = x;
}

std::atomic<long> g_evictions{0};   // evictions_enqueued()

}  // namespace

static_assert(kEvictionCodeBytes == 16 * 1024 * 16, "eviction_kernel runs 16 K steps of 16 bytes");

void evict_instruction_caches(cudaStream_t stream, int sm_count) {
  // (No sink: the store's guard is never true for y = 1, and the compiler cannot know y.)
  eviction_kernel<<<2 * sm_count, 32, 0, stream>>>(1u, nullptr);
  AISPFLOW_CUDA_CHECK_LAUNCH();
  ++g_evictions;
}

long evictions_enqueued() { return g_evictions.load(); }

long long scattered_code_cycles(cudaStream_t stream, int sm_count) {
  DeviceBuffer out(std::size_t(sm_count) * sizeof(long long));
  // Stride 37: odd, so the 64 visits cover the 64 blocks once each, and far from 1, so consecutive visits are apart.
  scattered_code_kernel<<<sm_count, 32, 0, stream>>>(1u, 37u, out.as<long long>());
  AISPFLOW_CUDA_CHECK_LAUNCH();
  std::vector<long long> cycles(static_cast<std::size_t>(sm_count));
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(cycles.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::nth_element(cycles.begin(), cycles.begin() + sm_count / 2, cycles.end());
  return cycles[std::size_t(sm_count / 2)];
}

}  // namespace aispflow::kernels::cuda
