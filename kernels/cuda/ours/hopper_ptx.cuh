#pragma once
// Thin wrappers over the Hopper (sm_90a) PTX our GEMM kernels use: mbarriers, TMA (cp.async.bulk.tensor) loads
// with and without cluster multicast, TMA stores, wgmma fences, shared-memory matrix descriptors, cluster
// barriers and register reallocation. One instruction per function, named after it, so that the kernel reads as
// the algorithm and this file as the PTX ISA.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace aispflow::kernels::cuda::ours {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// The value, as one the compiler cannot recompute: it keeps it in a register instead of rebuilding it (from special
// registers) inside a loop where registers are short (NOTES.md step 75: the fp8 mainloop rebuilt its shared-memory
// base at the top of every promotion interval, with the tensor pipe drained).
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t v) {
  asm volatile("mov.b32 %0, %0;" : "+r"(v));
  return v;
}

// ---- mbarrier ----------------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
// Makes the initialised barriers visible to the async proxy and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// The producer's arrival: one arrival, and `bytes` more transaction bytes the phase must see before completing.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// The barriers below are given by their shared-memory address. Converted from a generic pointer inside a hot
// loop, each use re-read the shared window's base (S2R SR_SWINHI, S2UR SR_CgaCtaId) at the top of every fp8
// promotion interval, on the tensor pipe's critical path (NOTES.md step 75); the kernel converts once.
// Waits until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) { mbar_wait(smem_addr(bar), parity); }
// Arrives on the barrier at the same shared-memory offset in CTA `cta_rank` of the cluster (itself included).
// Default (.release.cta) semantics: the arriving warpgroup's reads of the stage were by wgmma, which has retired
// (wgmma.wait_group), so no memory fence is needed; `.release.cluster` would cost a GPU-wide MEMBAR per call.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint32_t bar, std::uint32_t cta_rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(bar),
      "r"(cta_rank)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// ---- stmatrix ------------------------------------------------------------------------------------------------
// Stores four 8x8 b16 matrices from the warp's registers (fragment: lane l holds row l/4, elements 2 (l % 4) and
// + 1, in r[i] for matrix i); lane l gives the shared-memory address of row l % 8 of matrix l / 8 (16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(std::uint32_t row_addr, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(row_addr), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// ---- TMA ---------------------------------------------------------------------------------------------------
// 3-D tile load (x = innermost coordinate, y, z = batch) into this CTA's shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, std::uint64_t* bar, int x, int y, int z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::
          "r"(smem_addr(dst)),
      "l"(map), "r"(smem_addr(bar)), "r"(x), "r"(y), "r"(z)
      : "memory");
}
// The same tile into the same shared-memory offset of every CTA in `cta_mask`, completing on each one's `bar`.
__device__ __forceinline__ void tma_load_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar, int x, int y,
                                                   int z, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
      "l"(map), "r"(smem_addr(bar)), "r"(x), "r"(y), "r"(z), "h"(cta_mask)
      : "memory");
}
// 3-D tile store from shared memory; out-of-bounds parts of the box are not written.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, std::uint32_t src, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),
               "r"(src), "r"(x), "r"(y), "r"(z)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most N committed store groups are still reading shared memory.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Orders this thread's ordinary shared-memory writes before later async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// ---- wgmma -------------------------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across wgmma fences.
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"), 128-byte swizzle, tile base 1024-byte
// aligned. Byte offsets are encoded >> 4. For a K-major operand the stride offset is the distance between groups
// of 8 rows (1024 B for 128-byte rows) and the leading offset is unused; for an MN-major operand the leading
// offset steps to the next 64-element column block and the stride offset to the next group of 8 K-rows.
// `start` is a shared-memory address.
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t start, std::uint32_t leading_bytes,
                                                   std::uint32_t stride_bytes) {
  std::uint64_t d = 0;
  d |= std::uint64_t((start & 0x3FFFF) >> 4);
  d |= std::uint64_t((leading_bytes & 0x3FFFF) >> 4) << 16;
  d |= std::uint64_t((stride_bytes & 0x3FFFF) >> 4) << 32;
  d |= std::uint64_t(1) << 62;   // swizzle mode 1 = 128-byte
  return d;
}

// ---- cluster and registers ---------------------------------------------------------------------------------
__device__ __forceinline__ std::uint32_t cluster_cta_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ std::uint32_t cluster_cta_count() {
  std::uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// This cluster's index in the grid and the grid's cluster count (each CTA is a cluster of one in a launch without
// clusters). Special registers, read without `volatile`: the compiler may read them again where it needs them
// instead of holding a division's result in a register for the whole kernel (held, it spilled in the fp8 128 x 192
// interval instances once step 108's release took a register: NOTES.md).
__device__ __forceinline__ int cluster_index() {
  std::uint32_t r;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return int(r);
}
__device__ __forceinline__ int cluster_count() {
  std::uint32_t r;
  asm("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return int(r);
}
// The start of a cluster's kernel: every thread arrives without ordering its own memory operations (relaxed: no
// ERRBAR in every warp, which the release form costs; NOTES.md step 105), then waits with acquire. What the peers
// must see before the first multicast, the barriers' initialisation, is released by fence_mbarrier_init() in the
// thread that initialised them, which is the pairing the PTX ISA gives that fence.
__device__ __forceinline__ void cluster_arrive_relaxed_wait() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}
// Barrier among the `threads` threads that use named barrier `id` (1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Signals named barrier `id` without waiting: the arriving threads count towards `threads`, whose other members
// wait with named_barrier(). The ping-pong consumers hand the tensor pipe to each other this way.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace aispflow::kernels::cuda::ours
