// The device side of the tensor-pipe probe (tensor_pipe.hpp): wgmma m64n256 instructions back to back on
// operands that sit in shared memory (or, for A, in registers), with no global-memory traffic in the loop.
// Compiled for sm_90a alone (wgmma exists nowhere else); the host side checks the device before it launches.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/cuda/ours/hopper_ptx.cuh"
#include "kernels/cuda/ours/wgmma_ops.cuh"
#include "kernels/cuda/tensor_pipe_launch.hpp"

namespace aispflow::kernels::cuda {

namespace {

using namespace ours;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Every element of a row of A (and of a row of B, which is a column of the product) holds the same small power
// of two, so the 128-byte swizzle (a permutation within a row) cannot change what the tensor cores read, and
// every partial sum is a power of two times a small integer: exact in fp32 and in fp8's narrower accumulator.
__device__ __forceinline__ float row_value(int row) { return float(1 << (row % 3)); }
__device__ __forceinline__ float col_value(int col) { return float(1 << (col % 3)); }

// One 32-bit word filled with `v` in the probe's element type (bf16/f16: two copies, e4m3: four, tf32: one).
template <int Dt>
__device__ __forceinline__ std::uint32_t packed(float v) {
  if constexpr (Dt == kPipeBf16) {
    const std::uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    return h | (h << 16);
  } else if constexpr (Dt == kPipeFp16) {
    const std::uint32_t h = __half_as_ushort(__float2half_rn(v));
    return h | (h << 16);
  } else if constexpr (Dt == kPipeTf32) {
    return __float_as_uint(v);
  } else {
    const std::uint32_t b = __nv_fp8_e4m3(v).__x;
    return b * 0x01010101u;
  }
}

// scale_d = 0 starts a new sum (the first instruction of an fp8 chain), 1 accumulates.
template <int Dt>
__device__ __forceinline__ void mma_ss(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  if constexpr (Dt == kPipeBf16) wgmma_ss_bf16_n256(d, desc_a, desc_b, scale_d);
  else if constexpr (Dt == kPipeFp16) wgmma_ss_f16_n256(d, desc_a, desc_b, scale_d);
  else if constexpr (Dt == kPipeTf32) wgmma_ss_tf32_n256(d, desc_a, desc_b, scale_d);
  else wgmma_ss_e4m3_n256(d, desc_a, desc_b, scale_d);
}
template <int Dt>
__device__ __forceinline__ void mma_rs(float (&d)[128], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                       int scale_d) {
  if constexpr (Dt == kPipeBf16) wgmma_rs_bf16_n256(d, a, desc_b, scale_d);
  else if constexpr (Dt == kPipeFp16) wgmma_rs_f16_n256(d, a, desc_b, scale_d);
  else if constexpr (Dt == kPipeTf32) wgmma_rs_tf32_n256(d, a, desc_b, scale_d);
  else wgmma_rs_e4m3_n256(d, a, desc_b, scale_d);
}

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

#endif

constexpr int kRowBytes = 128;
constexpr int kARows = 64, kBRows = 256;
// + room to align the tiles to 1024 bytes; 41 KiB, under the 48 KiB a launch may take without opting in.
constexpr int kTileBytes = (kARows + kBRows) * kRowBytes + 1024;
static_assert(kTileBytes <= 48 * 1024);
// fp8's wgmma accumulates in fewer bits than fp32: on the H100 a chain of 1024 instructions (256 steps, partial
// sums up to 1024 times one instruction's) came out off the closed form, and chains of up to 512 held it exactly.
// So fp8 sums chains of kFp8ChainSteps steps (512 instructions) and adds each chain's result into fp32 partial sums
// in shared memory, one per accumulator (what a GEMM's promotion does, here off the tensor pipe's path: the other
// warpgroup keeps issuing meanwhile). Each chain ends in a drain, which is what the probe loses to the dense rate:
// with chains of 64 instructions it measured 77 % of it (no more than our fp8 GEMMs), 87 % with 128, 92 % with 256 and
// 95 % with 512 (NOTES.md step 109). A run whose chains stopped holding the sum exactly fails the check, untimed.
constexpr int kFp8ChainSteps = 128;
template <int Dt, int Warpgroups>
constexpr int smem_bytes() {
  return kTileBytes + (Dt == kPipeE4m3 ? Warpgroups * 128 * 128 * int(sizeof(float)) : 0);
}

// Each warpgroup accumulates D[64 x 256] += A[64 x 128 B] * B[256 x 128 B]^T, four instructions (one 128-byte row
// of K) per step, one group of four kept in flight while the next is issued. After the loop every thread compares
// its 128 accumulators with the closed form steps x K x row_value x col_value and counts what differs.
template <int Dt, bool FromRegisters, int Warpgroups>
__global__ void __launch_bounds__(Warpgroups * 128, 1)
    tensor_pipe_kernel(int steps, std::uint64_t expected_k, unsigned* wrong, unsigned* blocks_done,
                       unsigned long long* clocks) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t raw_smem[];
  std::uint8_t* tiles = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(raw_smem) + 1023) & ~std::uintptr_t(1023));
  std::uint8_t* tile_a = tiles;
  std::uint8_t* tile_b = tiles + kARows * kRowBytes;
  for (int w = threadIdx.x; w < (kARows + kBRows) * kRowBytes / 4; w += blockDim.x) {
    const int row = w / (kRowBytes / 4);
    const float v = row < kARows ? row_value(row) : col_value(row - kARows);
    reinterpret_cast<std::uint32_t*>(tiles)[w] = packed<Dt>(v);
  }
  // The tiles were written by ordinary stores; wgmma reads them through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  const int row0 = warp * 16 + lane / 4;   // this thread's first row of the warpgroup's 64
  std::uint32_t a_regs[4];
  a_regs[0] = a_regs[2] = packed<Dt>(row_value(row0));
  a_regs[1] = a_regs[3] = packed<Dt>(row_value(row0 + 8));
  std::uint64_t desc_a[4], desc_b[4];
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    desc_a[kk] = smem_desc(smem_addr(tile_a + kk * 32), 16, 1024);
    desc_b[kk] = smem_desc(smem_addr(tile_b + kk * 32), 16, 1024);
  }
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  // fp8 only: this thread's fp32 partial sums, interleaved with the other threads' (conflict-free).
  float* promoted = reinterpret_cast<float*>(tiles + (kARows + kBRows) * kRowBytes) + threadIdx.x;
  constexpr bool kPromote = Dt == kPipeE4m3;
  if constexpr (kPromote)
    for (int i = 0; i < 128; ++i) promoted[i * blockDim.x] = 0.0f;

  unsigned long long cycles0 = 0, ns0 = 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    cycles0 = clock64();
    ns0 = global_timer_ns();
  }
  for (int s = 0; s < steps; ++s) {
    const bool chain_start = kPromote && s % kFp8ChainSteps == 0;
    wgmma_fence();
    fence_registers(d);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const int scale_d = chain_start && kk == 0 ? 0 : 1;
      if constexpr (FromRegisters) mma_rs<Dt>(d, a_regs, desc_b[kk], scale_d);
      else mma_ss<Dt>(d, desc_a[kk], desc_b[kk], scale_d);
    }
    wgmma_commit();
    if (kPromote && (s + 1) % kFp8ChainSteps == 0) {
      wgmma_wait<0>();
      fence_registers(d);
#pragma unroll
      for (int i = 0; i < 128; ++i) promoted[i * blockDim.x] += d[i];
    } else {
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();
  fence_registers(d);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    clocks[0] = clock64() - cycles0;
    clocks[1] = global_timer_ns() - ns0;
  }
  if constexpr (kPromote)
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = promoted[i * blockDim.x];

  // Accumulator layout of wgmma m64nN (fp32): register 4j + 2h + e of lane l in warp w holds
  // row 16 w + l/4 + 8 h, column 8 j + 2 (l % 4) + e.
  unsigned off = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    const int j = i / 4, h = (i / 2) % 2, e = i % 2;
    const float want = float(expected_k) * row_value(row0 + 8 * h) * col_value(8 * j + 2 * (lane % 4) + e);
    off += d[i] != want;
  }
  if (off) atomicAdd(wrong, off);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(blocks_done, 1u);
#endif
}

template <int Dt, bool FromRegisters, int Warpgroups>
cudaError_t launch_one(const TensorPipeLaunch& l, cudaStream_t stream) {
  auto kernel = tensor_pipe_kernel<Dt, FromRegisters, Warpgroups>;
  constexpr int bytes = smem_bytes<Dt, Warpgroups>();
  if constexpr (bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
  }
  const std::uint64_t expected_k = std::uint64_t(l.expected_steps) * 4 * tensor_pipe_k_per_instruction(Dt);
  kernel<<<l.blocks, Warpgroups * 128, bytes, stream>>>(l.steps, expected_k, l.wrong, l.blocks_done, l.clocks);
  return cudaGetLastError();
}

template <int Dt>
cudaError_t launch_dtype(const TensorPipeLaunch& l, cudaStream_t stream) {
  // A in registers takes 218 registers per thread at two warpgroups; three would spill, so rs runs with two.
  // fp8's shared-memory partial sums take 64 KiB per warpgroup: three would not fit beside the tiles.
  if (l.from_registers) return launch_one<Dt, true, 2>(l, stream);
  if constexpr (Dt == kPipeE4m3) return launch_one<Dt, false, 2>(l, stream);
  return l.warpgroups == 3 ? launch_one<Dt, false, 3>(l, stream) : launch_one<Dt, false, 2>(l, stream);
}

}  // namespace

// K per instruction: 32 bytes of a 128-byte row, whatever the element size.
int tensor_pipe_k_per_instruction(int dtype) {
  return dtype == kPipeTf32 ? 8 : dtype == kPipeE4m3 ? 32 : 16;
}

cudaError_t launch_tensor_pipe(const TensorPipeLaunch& l, cudaStream_t stream) {
  switch (l.dtype) {
    case kPipeBf16: return launch_dtype<kPipeBf16>(l, stream);
    case kPipeFp16: return launch_dtype<kPipeFp16>(l, stream);
    case kPipeTf32: return launch_dtype<kPipeTf32>(l, stream);
    case kPipeE4m3: return launch_dtype<kPipeE4m3>(l, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace aispflow::kernels::cuda
