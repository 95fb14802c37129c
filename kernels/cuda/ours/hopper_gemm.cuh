#pragma once
// The device side of ours.wgmma and ours.cluster: one Hopper GEMM kernel template.
//
//   C[b][M x N] = epilogue(scale * A[b][M x K] * B[b] + bias),  A row-major (K-major), B either K-major
//   (layout nt: stored N x K) or MN-major (layout nn: stored K x N), C bf16 row-major.
//
// One CTA = 3 warpgroups (384 threads) computing a BM x BN tile (BM = 128, or 256 for bf16 at BN = 128):
//   warpgroup 0, the producer: one thread issues TMA loads of A and B k-tiles (128 bytes of K per row, 128-byte
//     swizzle) into a ring of STAGES shared-memory stages; `full[s]` (an mbarrier with a transaction count)
//     completes when a stage's bytes have landed, `empty[s]` when every consumer that reads it is done;
//   warpgroups 1 and 2, the consumers: each runs wgmma.mma_async on BM/2 rows x BN columns (one m64 wgmma per
//     64-row slice; fp32 accumulators in registers), one k-tile's group in flight while the next is issued (256-row
//     tiles drain each k-tile's group first: NOTES.md step 65), and releases a stage as soon as the group that read
//     it has retired. The epilogue scales, adds the bias (held in registers from the tile's start), applies GELU,
//     converts to bf16, writes 64 x 64 chunks into 128-byte-swizzled shared memory (bank-conflict free; 64 x 32
//     chunks, 64-byte-swizzled, for BN = 32), and each warp TMA-stores its own 16 rows of a chunk. At M <= 64
//     (decode) the second consumer's rows lie past M: it sits out.
// Register budget: setmaxnreg gives the producer 56 registers and each consumer thread 224 (BM x BN / 256
// accumulators: 128 for 128x256 and 256x128, whose two m64n128 wgmmas per k-step are cuBLASLt's bf16 shape).
//
// Ping-pong schedule (PingPong = true, bf16, BN = 128): the consumers no longer split a tile; each computes whole
// 128 x BN tiles (two m64 wgmmas per k-step, BN accumulators per thread), warpgroup 1 the CTA's even work items
// and warpgroup 2 the odd ones. Their mainloops take turns on the tensor pipe (named barriers kOrderBarrier + wg:
// a warpgroup hands over once its last k-tile is issued), so each epilogue runs while the other warpgroup's
// mainloop keeps the tensor cores busy: in the cooperative schedule both warpgroups store at once and the pipe
// idles. The stage ring is the same; a stage is read by one warpgroup instead of two.
//
// Clusters (ours.cluster): cluster_m x cluster_n CTAs (2x1 or 1x2) work on neighbouring tiles that share B
// (2x1: same columns) or A (1x2: same rows). Each CTA loads a slice of the shared operand and multicasts it to the
// cluster, so every shared k-tile leaves HBM/L2 once per cluster instead of once per CTA. A stage may be refilled
// only when the consumers of every CTA it is multicast into are done with it: consumers arrive on the `empty`
// barrier of every CTA in the cluster.
//
// Work decomposition: a work item is (split, batch, cluster tile). A persistent grid (one cluster per
// co-resident slot) walks work items with stride = number of clusters; cluster tiles are visited in bands of
// `raster_group` cluster-rows, column by column, so that consecutive work items share A rows and B columns in L2.
// With split-K (skinny decode shapes), each split writes fp32 partials and a second kernel reduces them and runs
// the epilogue.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/fp8_promotion.hpp"
#include "kernels/common/work_schedule.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cluster_launch.hpp"
#include "kernels/cuda/epilogue.cuh"
#include "kernels/cuda/ours/hopper_params.hpp"
#include "kernels/cuda/ours/hopper_ptx.cuh"
#include "kernels/cuda/ours/hopper_timeline.hpp"
#include "kernels/cuda/ours/wgmma_ops.cuh"

// The timeline build (bench/tools/hopper_timeline.cu defines AISPFLOW_HOPPER_TIMELINE and its
// hopper_timeline_stamp(event, unit) before including this file): the kernel stamps the moments of
// TimelineEvent, and lives in its own namespace, so that its instances never share a symbol with the library's.
// Every other build compiles the stamps to nothing.
#ifdef AISPFLOW_HOPPER_TIMELINE
#define HOPPER_TIMELINE_STAMP(event, unit) hopper_timeline_stamp(TimelineEvent::event, unit)
#define HOPPER_TIMELINE_ENTRY() hopper_timeline_entry()
#else
#define HOPPER_TIMELINE_STAMP(event, unit) ((void)0)
#define HOPPER_TIMELINE_ENTRY() ((void)0)
#endif

namespace aispflow::kernels::cuda::ours {
#ifdef AISPFLOW_HOPPER_TIMELINE
inline namespace timeline {
#endif


// Named barriers 1 and 2 are the consumers' epilogue barriers; 3 and 4 order the ping-pong mainloops.
constexpr int kOrderBarrier = 3;

template <bool Fp8, int BM, int BN>
struct HopperShape {
  static constexpr int kBlockK = Fp8 ? 128 : 64;                     // elements of K per stage (128 bytes)
  static constexpr int kKStep = Fp8 ? 32 : 16;                       // K per wgmma instruction
  // B's slab holds whole 64-column boxes of an MN-major B (its loads' unit): a tile 240 wide reads 256 columns
  // there, the 16 past its own unused by its wgmmas. A K-major B loads BN rows, so it needs no padding, but both
  // layouts share this layout (a K-major 240-wide slab keeps 2 KB of each stage unused: still 4 stages).
  static constexpr int kBSlabRows = BN > 64 ? (BN + 63) / 64 * 64 : BN;
  static constexpr int kStageBytes = (BM + kBSlabRows) * kRowBytes;
  static constexpr int kEpilogueBytes = 2 * 2 * kChunkBytes;         // 2 consumers x double buffer
  static constexpr int kBarrierBytes = 256;
  static constexpr int kFixedBytes = 1024 + kEpilogueBytes + kBarrierBytes;
  static constexpr int kStages = std::min(8, (kSmemLimit - kFixedBytes) / kStageBytes);
  static constexpr int kSmemBytes = kFixedBytes + kStages * kStageBytes;
  // The layout from the 1024-byte-aligned base, in bytes: every stage's A slab, every stage's B slab, the
  // epilogue buffers, the `full` barriers, the `empty` barriers. The producer addresses it through generic pointers
  // and the consumers through 32-bit shared addresses (the kernel's comment says why); both come from these.
  static constexpr int kStageBOffset = kStages * BM * kRowBytes;
  static constexpr int kChunksOffset = kStages * kStageBytes;
  static constexpr int kFullBarOffset = kChunksOffset + kEpilogueBytes;
  static constexpr int kEmptyBarOffset = kFullBarOffset + 8 * kStages;
  static_assert(kStages >= 2, "tile too large for shared memory");
  static_assert(2 * kStages * 8 <= kBarrierBytes, "full and empty barriers of every stage");
  static_assert(kSmemBytes <= kSmemLimit, "shared memory budget");
};

// The work order (rasterized data-parallel tiles, then stream-K's shared k-iterations): WorkSchedule in
// kernels/common/work_schedule.hpp, host-and-device so that a CPU test walks it.
using aispflow::kernels::WorkSchedule;
using aispflow::kernels::WorkTile;
using aispflow::kernels::WorkUnit;

__device__ __forceinline__ int load_acquire(const int* flag) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

template <bool Fp8, int BM, int BN, bool BMnMajor, bool PingPong, int PromoteEvery>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                       const __grid_constant__ CUtensorMap map_c, const __grid_constant__ HopperParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  HOPPER_TIMELINE_ENTRY();   // (the timeline build's experiments: e.g. CTAs held back at entry)
  using Shape = HopperShape<Fp8, BM, BN>;
  static_assert(BM == 128 || (BM == 256 && !Fp8 && !PingPong && BN == 128),
                "256-row tiles: bf16, cooperative, 128 columns (the accumulators of 128x256)");
  constexpr int kStages = Shape::kStages;
  // fp8 promotion intervals: with one wgmma group left in flight, a consumer releases k-tile j's stage only after
  // it has waited for k-tile j + 1's data and issued it, so the producer refills that stage one k-tile late and the
  // ring runs kStages - 1 deep wherever the loads are slow. With 4 stages (128 x 192) that costs more than draining
  // the group at each k-tile, which releases the stage at once (NOTES.md step 108). (bf16 keeps the queued group:
  // its 4-stage 128-row tiles measured 0-2 % slower draining.)
  constexpr bool kReleaseEachKTile = Fp8 && kStages <= 4;
  constexpr int kBlockK = Shape::kBlockK;
  constexpr int kASlab = BM * kRowBytes;               // A bytes per stage
  constexpr int kBSlab = Shape::kBSlabRows * kRowBytes;   // B bytes a stage holds
  constexpr int kBBoxes = Shape::kBSlabRows / 64;          // MN-major B: the 64-column boxes a stage loads
  constexpr int kBLoadBytes = BMnMajor ? kBSlab : BN * kRowBytes;   // B bytes a stage receives
  constexpr int kAcc = BN / 2;                         // accumulators per consumer thread
  constexpr int kCols = epilogue_chunk_cols(BN);       // epilogue chunk: the host's C map stores boxes of it
  constexpr int kCRowBytes = kCols * 2;
  // A tile whose width is not a multiple of the chunk's (240 = 3 x 64 + 48) stores its last chunk flush with its
  // right edge, overlapping the chunk before it (chunk_col0 below): the overlap's columns are written twice with the
  // same values, and no store reaches past the tile into a neighbour's columns.
  constexpr int kChunks = (BN + kCols - 1) / kCols;
  static_assert(BN % 16 == 0 && (kCols == 64 || kCols == 32), "epilogue chunk: 64 or 32 columns");
  static_assert(!BMnMajor || BN >= 64, "MN-major B is loaded in boxes of 64 columns");
  // First column of epilogue chunk c within the tile.
  auto chunk_col0 = [](int c) { return c * kCols < BN - kCols ? c * kCols : BN - kCols; };

  extern __shared__ std::uint8_t smem_raw[];
  // 128-byte swizzled tiles must start on 1024-byte boundaries; every CTA computes the same offset, which the
  // multicast relies on.
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                                       ~std::uintptr_t(1023));
  std::uint8_t* stage_a = smem;
  std::uint8_t* stage_b = smem + Shape::kStageBOffset;
  auto* full = reinterpret_cast<std::uint64_t*>(smem + Shape::kFullBarOffset);
  auto* empty = reinterpret_cast<std::uint64_t*>(smem + Shape::kEmptyBarOffset);
  // The same layout as 32-bit shared-memory addresses, which the consumers and the epilogue use: the stage
  // barriers, the stages (the wgmma descriptors' base) and the epilogue buffers. Derived from generic pointers like
  // the producer's above, the compiler rebuilt those pointers from special registers (SR_SWINHI, SR_CgaCtaId) inside the loops, at
  // the top of every fp8 promotion interval with the tensor pipe drained (NOTES.md steps 74-75). The base is held
  // in a register (hopper_ptx.cuh's opaque()) where that measured faster: fp8 promoting every k-tile 5-6 %, fp8
  // 128 x 192 promote8 1 %. The fp8 128 x 128 tiles that promote every 4 or 8 k-tiles ran 1-2.5 % slower with the
  // register, and the MN-major bf16 128 x 192 tile spilled: there the compiler may rebuild it, now from the 32-bit
  // address alone.
  constexpr bool kHoldBase = !(BMnMajor && BN == 192) && !(Fp8 && BN == 128 && PromoteEvery > 1);
  const std::uint32_t aligned_base = (smem_addr(smem_raw) + 1023u) & ~1023u;   // `smem` above, as an address
  const std::uint32_t smem_base = kHoldBase ? opaque(aligned_base) : aligned_base;
  const std::uint32_t full_bar = smem_base + std::uint32_t(Shape::kFullBarOffset);
  const std::uint32_t empty_bar = smem_base + std::uint32_t(Shape::kEmptyBarOffset);
  const std::uint32_t chunks_addr = smem_base + std::uint32_t(Shape::kChunksOffset);   // epilogue buffers

  const int warpgroup = threadIdx.x / 128;
  const int cluster_size = p.cluster_m * p.cluster_n;
  // Consumer warpgroups that read each stage. A trimmed A box (M <= 64, p.a_box_rows) leaves the second warpgroup's
  // 64 rows of a cooperative 128-row tile past M in every tile: that warpgroup sits the kernel out, and the
  // `empty` barriers do not wait for it (its wgmmas on stale rows took the tensor pipe from the live warpgroup's,
  // on decode's critical path: NOTES.md step 44).
  const bool second_idle = !PingPong && BM == 128 && p.a_box_rows > 0;
  const int readers = PingPong || second_idle ? 1 : 2;
  const int rank = int(cluster_cta_rank());
  const int rank_m = rank % p.cluster_m, rank_n = rank / p.cluster_m;
  // The cluster's place in the work order: its launch index (blockIdx.x / cluster_size: clusters run along x), or
  // the host's permutation of it (p.cluster_place: GPC order). (p is a __grid_constant__ so that the table is read
  // from the parameter bank, not copied to local memory.) Asked where each role builds its schedule: a value kept
  // from here to the consumers' start cost fp8 128 x 192 a spill (NOTES.md step 127).
  auto work_place = [&p] { return p.places > 0 ? int(p.cluster_place[cluster_index()]) : cluster_index(); };
  const int clusters = cluster_count();

  // ---------------- producer (thread 0) ----------------
  // CTAs that share B (same columns: same rank_n) and those that share A (same rows: same rank_m).
  std::uint16_t mask_b = 0, mask_a = 0;
  for (int i = 0; i < p.cluster_m; ++i) mask_b |= std::uint16_t(1u << (rank_n * p.cluster_m + i));
  for (int j = 0; j < p.cluster_n; ++j) mask_a |= std::uint16_t(1u << (j * p.cluster_m + rank_m));
  // This CTA's slice of the shared A tile: of BM rows, or of the 64 live rows of a trimmed box.
  const int a_rows = (p.a_box_rows > 0 ? p.a_box_rows : BM) / p.cluster_n;
  const int b_rows = BN / p.cluster_m;            // ... of the shared B tile (K-major B)
  // Bytes a stage receives: the whole tile, less the A rows a trimmed box leaves out (p.a_box_rows).
  const std::uint32_t stage_bytes = kASlab + kBLoadBytes - (p.a_box_rows > 0 ? (BM - p.a_box_rows) * kRowBytes : 0);
  // Loads k-tile kt of `unit` into stage s (its `full` barrier armed with the bytes to expect). In a cluster each CTA
  // loads its slices of the shared operands and multicasts them; `own_copy` loads every slice into this CTA alone
  // instead (the stage issued before the cluster's start barrier: it touches no peer's barrier or shared memory).
  // Its loops stay rolled: unrolled, they cost the fp8 128 x 192 consumers an 8-byte spill.
  auto load_stage = [&](const WorkUnit& unit, int kt, int s, bool own_copy) {
    const WorkTile& t = unit.t;
    const int m0 = (t.cm * p.cluster_m + rank_m) * BM;
    const int n0 = (t.cn * p.cluster_n + rank_n) * BN;
    mbar_arrive_expect_tx(&full[s], stage_bytes);
    std::uint8_t* a_dst = stage_a + s * kASlab;
    std::uint8_t* b_dst = stage_b + s * kBSlab;
    const int kx = kt * kBlockK;
    if (p.cluster_n == 1)
      tma_load(a_dst, &map_a, &full[s], kx, m0, t.batch);
    else if (own_copy)
#pragma unroll 1
      for (int r = 0; r < p.cluster_n; ++r)
        tma_load(a_dst + r * a_rows * kRowBytes, &map_a, &full[s], kx, m0 + r * a_rows, t.batch);
    else
      tma_load_multicast(a_dst + rank_n * a_rows * kRowBytes, &map_a, &full[s], kx, m0 + rank_n * a_rows, t.batch,
                         mask_a);
    if constexpr (!BMnMajor) {
      if (p.cluster_m == 1)
        tma_load(b_dst, &map_b, &full[s], kx, n0, t.batch);
      else if (own_copy)
#pragma unroll 1
        for (int r = 0; r < p.cluster_m; ++r)
          tma_load(b_dst + r * b_rows * kRowBytes, &map_b, &full[s], kx, n0 + r * b_rows, t.batch);
      else
        tma_load_multicast(b_dst + rank_m * b_rows * kRowBytes, &map_b, &full[s], kx, n0 + rank_m * b_rows, t.batch,
                           mask_b);
    } else {
      // MN-major B: kBBoxes boxes of 64 columns x kBlockK rows, each 8 KB; box j goes to offset j * 8 KB.
      for (int j = 0; j < kBBoxes; ++j) {
        if (!own_copy && j % p.cluster_m != rank_m) continue;
        std::uint8_t* dst = b_dst + j * (kBlockK * kRowBytes);
        if (p.cluster_m == 1 || own_copy)
          tma_load(dst, &map_b, &full[s], n0 + 64 * j, kx, t.batch);
        else
          tma_load_multicast(dst, &map_b, &full[s], n0 + 64 * j, kx, t.batch, mask_b);
      }
    }
  };
  WorkSchedule producer_schedule(p, work_place(), clusters);
  WorkUnit unit;
  bool has_unit = false;
  int pre_issued = 0;   // stages loaded before the start barrier, each CTA's own copy (its barriers are its own)

  if (threadIdx.x == 0) {
    HOPPER_TIMELINE_STAMP(entry, 0);
    // A launch whose cluster is not the one the parameters describe would wait forever on arrivals that never come
    // (NOTES.md step 41: a first run hung where every CTA believed it was CTA 0 of a pair): stop it with an error.
    if (cluster_cta_count() != std::uint32_t(cluster_size)) __trap();
    HOPPER_TIMELINE_STAMP(params_read, 0);
    prefetch_tensormap(&map_a);
    prefetch_tensormap(&map_b);
    prefetch_tensormap(&map_c);
    HOPPER_TIMELINE_STAMP(maps_prefetched, 0);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      // Every consumer warpgroup that reads the stage, in every CTA it is multicast into: both (cooperative), the
      // one whose tile it is (ping-pong), or the one with live rows (trimmed A).
      mbar_init(&empty[s], readers * cluster_size);
    }
    fence_mbarrier_init();
    HOPPER_TIMELINE_STAMP(barriers_ready, 0);
    has_unit = producer_schedule.next(unit);
    HOPPER_TIMELINE_STAMP(unit_decoded, 0);
    // The first stages are issued now: their loads overlap the barrier below, the register reallocation and the
    // consumers' start (NOTES.md step 40: the first load was issued 2.3 us into a 13 us decode kernel). Fresh
    // stages need no wait on `empty`. A lone CTA issues at most 4: each TMA load holds this thread until the TMA
    // unit takes it, and the consumers wait at the barrier meanwhile: the 128 x 64 tile's 8 stages kept them there
    // 1.2 us (NOTES.md step 112). With 4, fp8 1000 x 1000 x 1008 ran 14 % faster and bf16 1024^3 1.4 % (step 114).
    // A cluster's CTA issues one, its own copy of the first k-tile (every slice loaded unicast): a multicast may not
    // start before the peers' barriers are initialised, which the cluster barrier below waits for, and a pair's
    // first loads went out 0.6 us after its barriers were ready where a lone CTA's went out after 0.13 us. One
    // own copy took the 128 x 64 pairs at 1000 x 1000 x 1008 3-6 % faster and other clusters at shapes of one or
    // two waves 1-4 %; four cost the small fp8 pairs 6-8 % in the L2 reads that the multicast saves (NOTES.md step
    // 143). All CTAs of a cluster share the unit, so all load that k-tile this way. The producer's loop issues the
    // rest after the barrier, multicast.
    const int pre_issue = cluster_size == 1 ? (kStages < 4 ? kStages : 4) : 1;
    if (has_unit)
      for (; pre_issued < pre_issue && unit.k_begin + pre_issued < unit.k_end; ++pre_issued) {
        load_stage(unit, unit.k_begin + pre_issued, pre_issued, /*own_copy=*/true);
        if (pre_issued == 0) HOPPER_TIMELINE_STAMP(first_load, 0);
      }
    if (pre_issued > 0) HOPPER_TIMELINE_STAMP(loads_issued, 0);
  }
  // A cluster's CTAs must see each other's initialised barriers before any multicast (a relaxed arrive: NOTES.md
  // step 105); a lone CTA (1x1) only needs its own threads to, which a CTA barrier does for far less (NOTES.md
  // step 40: the cluster barrier took 0.9 us of a 13 us decode kernel).
  if (cluster_size > 1)
    cluster_arrive_relaxed_wait();
  else
    __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<56>();
    if (threadIdx.x == 0) {
      // Fill number `it` takes stage it % kStages once every reader has released the fill before it there
      // (fresh stages pass at once); returns the stage.
      auto acquire = [&](std::uint32_t it) {
        const int s = int(it % kStages);
        mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
        return s;
      };
      std::uint32_t it = std::uint32_t(pre_issued);
      [[maybe_unused]] int produced = 0;   // units begun (the timeline's unit index)
      for (int skip = pre_issued; has_unit; has_unit = producer_schedule.next(unit), skip = 0, ++produced) {
        for (int kt = unit.k_begin + skip; kt < unit.k_end; ++kt, ++it) {
          const int s = acquire(it);
          load_stage(unit, kt, s, /*own_copy=*/false);
          if (it == 0) HOPPER_TIMELINE_STAMP(first_load, 0);
          if (kt == unit.k_begin) HOPPER_TIMELINE_STAMP(unit_loads, produced);
        }
      }
      // The producer's tail (clusters only): wait until every stage has been released once more, by every consumer
      // of every CTA it was multicast into. After that no peer arrives on this CTA's barriers or reads what this
      // producer loaded, so the CTA may leave without a cluster barrier at exit (NOTES.md step 105: that barrier's
      // release arrive and wait were a quarter of a 128 x 64 pair's stall samples at 1000 x 1000 x 1008). Stages
      // never filled pass at once, as on their first use.
      if (cluster_size > 1)
        for (int i = 0; i < kStages; ++i, ++it) acquire(it);
    }
  } else if (second_idle && warpgroup == 2) {
    // No live rows in any tile: nothing to compute or store (it keeps its launch registers; the producer's release
    // covers the first consumer's increase alone).
  } else {
    // ---------------- consumers ----------------
    setmaxnreg_inc<224>();
    const int wg = warpgroup - 1;
    const int tid = threadIdx.x % 128;
    // The timeline's consumer stamps: thread 0 of the warpgroup that computes the unit (ping-pong), or of the
    // first consumer (cooperative: both compute every unit).
    [[maybe_unused]] const bool stamps = tid == 0 && (PingPong || wg == 0);
    if (stamps) HOPPER_TIMELINE_STAMP(consumer_start, 0);
    const int warp = tid / 32, lane = tid % 32;
    const float scale = (Fp8 && p.scale_a && p.scale_b) ? (*p.scale_a) * (*p.scale_b) : 1.0f;
    // Cooperative: this warpgroup computes the 64-row slices [wg x BM/128, (wg + 1) x BM/128) of every tile (one
    // at BM = 128, two at 256). Ping-pong: both 64-row slices of every other tile (work items of its parity among
    // this CTA's).
    constexpr int kSlices = PingPong ? 2 : BM / 128;
    const int first_slice = PingPong ? 0 : wg * kSlices;
    std::uint32_t it = 0, chunk_counter = 0;
    float acc[kSlices][kAcc];
    // Descriptors of stage 0's A slab (row 0) and B slab; issue() adds a stage's and a K step's offsets.
    const std::uint32_t stage_a_addr = smem_base, stage_b_addr = smem_base + std::uint32_t(Shape::kStageBOffset);
    const std::uint64_t desc_a0 = smem_desc(stage_a_addr, 16, 1024);
    const std::uint64_t desc_b0 =
        BMnMajor ? smem_desc(stage_b_addr, kBlockK * kRowBytes, 1024) : smem_desc(stage_b_addr, 16, 1024);
    const std::uint32_t desc_a0_lo = std::uint32_t(desc_a0), desc_b0_lo = std::uint32_t(desc_b0);
    const std::uint64_t desc_hi_a = desc_a0 & ~std::uint64_t(0xFFFFFFFF), desc_hi_b = desc_b0 & ~std::uint64_t(0xFFFFFFFF);
    int local = 0;   // index of the unit among this CTA's, in the producer's order
    WorkSchedule schedule(p, work_place(), clusters);
    WorkUnit unit;
    for (; schedule.next(unit); ++local) {
      const WorkTile& t = unit.t;
      const int m0 = (t.cm * p.cluster_m + rank_m) * BM;
      const int n0 = (t.cn * p.cluster_n + rank_n) * BN;
      const int k_begin = unit.k_begin, k_end = unit.k_end;
      if constexpr (PingPong) {
        // The other warpgroup's tile: its stages pass by in the ring; skip them.
        if ((local & 1) != wg) {
          it += std::uint32_t(k_end - k_begin);
          continue;
        }
        // Wait until the other warpgroup has issued its previous tile's mainloop: the mainloops take turns on
        // the tensor pipe, and each epilogue runs under the other warpgroup's mainloop.
        if (local > 0) named_barrier(kOrderBarrier + wg, 256);
      }
      if (stamps) HOPPER_TIMELINE_STAMP(unit_start, local);
      // The tile's bias, loaded now so that the mainloop hides the loads' latency: in every warp, lane l holds the
      // bf16 pair of columns 2 l and 2 l + 1 of each chunk c (one register per chunk; a 32-column chunk uses lanes
      // 0-15), and the epilogue shuffles each pair to the lanes that need it. Loaded in the epilogue, the bias cost
      // a global load's latency per chunk: a third of the 4096^3 kernel's epilogue with a bias (NOTES.md step 42).
      // (fp8 at 192 columns, whose promotion keeps a second accumulator set, has no registers to spare: 24 bytes
      // spilled. It loads the pairs when the mainloop is done, one latency a tile instead of one a chunk.)
      constexpr bool kBiasEarly = !(Fp8 && BN > 128);
      std::uint32_t bias_pairs[kChunks];
      auto load_bias = [&] {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          const int col = n0 + chunk_col0(c) + 2 * lane;   // even, and n is even: col + 1 < n too
          bias_pairs[c] = p.epilogue != 0 && 2 * lane < kCols && col < p.n
                              ? __ldg(static_cast<const std::uint32_t*>(p.bias) + col / 2)
                              : 0u;
        }
      };
      if constexpr (kBiasEarly) load_bias();
#pragma unroll
      for (int h = 0; h < kSlices; ++h)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[h][i] = 0.0f;
      // Tells every CTA that reads stage `s` (its own consumers and, under multicast, its peers') that this
      // warpgroup is done with it.
      // In a cluster, thread r arrives on CTA r's barrier: one predicated instruction, no loop (the wait that
      // retired the group is the whole warpgroup's, so any of its threads may signal).
      auto release = [&](int s) {
        if (cluster_size == 1) {
          if (tid == 0) mbar_arrive(empty_bar + 8u * std::uint32_t(s));
        } else if (tid < cluster_size) {
          mbar_arrive_cluster(empty_bar + 8u * std::uint32_t(s), std::uint32_t(tid));
        }
      };
      // wgmma for one k-tile of stage `s`, A's rows from `a_row` of the slab: the shared-memory descriptors are
      // stage 0's plus constants (a descriptor holds its start address in 16-byte units in its low 14 bits, and
      // no stage crosses them), instead of being rebuilt from addresses per instruction: that rebuilding was most
      // of the 2.5x CUTLASS's instruction count that ncu counted (NOTES.md step 33).
      // The offsets go into the low 32 bits only (start address and leading offset); the high half (stride,
      // swizzle) is the same for every stage, so no 64-bit carry arithmetic is left per instruction.
      auto issue = [&](float (&d)[kAcc], int s, int a_row, bool accumulate_first) {
        const std::uint32_t a = desc_a0_lo + std::uint32_t((s * kASlab + a_row * kRowBytes) >> 4);
        const std::uint32_t b = desc_b0_lo + std::uint32_t((s * kBSlab) >> 4);
#pragma unroll
        for (int kk = 0; kk < kBlockK / Shape::kKStep; ++kk) {
          // K step kk: 32 bytes further along a K-major row; an MN-major B steps kKStep rows of 128 bytes.
          constexpr std::uint32_t kStepB = BMnMajor ? (Shape::kKStep * kRowBytes) >> 4 : 32 >> 4;
          wgmma<Fp8, BN, BMnMajor ? 1 : 0>(d, desc_hi_a | (a + kk * (32 >> 4)), desc_hi_b | (b + kk * kStepB),
                                           (accumulate_first || kk > 0) ? 1 : 0);
        }
      };
      auto fence_accumulators = [&] {
#pragma unroll
        for (int h = 0; h < kSlices; ++h) fence_registers(acc[h]);
      };
      if (stamps) HOPPER_TIMELINE_STAMP(first_wait, local);
      if constexpr (!Fp8) {
        // bf16: the tensor cores accumulate in fp32. One k-tile's group stays in flight while the next is issued
        // (128-row tiles); a stage is released as soon as the group that read it has retired.
        int previous_stage = -1;
        for (int kt = k_begin; kt < k_end; ++kt, ++it) {
          const int s = int(it % kStages);
          mbar_wait(full_bar + 8u * std::uint32_t(s), (it / kStages) & 1);
          if (stamps && kt == k_begin) HOPPER_TIMELINE_STAMP(first_full, local);
          wgmma_fence();
          fence_accumulators();
#pragma unroll
          for (int h = 0; h < kSlices; ++h)
            issue(acc[h], s, (first_slice + h) * 64, kt > k_begin);
          wgmma_commit();
          if constexpr (BM == 256) {
            // 256-row tiles (two m64n128 slices a warpgroup, cuBLASLt's bf16 shape): each k-tile's group is drained
            // before the next is issued and its stage released at once, as cuBLASLt's loop does (its SASS, NOTES.md
            // step 65); the two consumer warpgroups then interleave their groups on the tensor pipe. Measured
            // 0.4-1.5 % faster for 256 x 128 than one group in flight, and slower for the 128-row tiles (128 x 64
            // decode 2 %; 128 x 256 and 128 x 192, 4 stages like 256 x 128, 0-2 %: NOTES.md step 108), which keep
            // the queued group.
            wgmma_wait<0>();
            fence_accumulators();
            release(s);
          } else {
            wgmma_wait<1>();
            fence_accumulators();
            if (previous_stage >= 0) release(previous_stage);
            previous_stage = s;
          }
        }
        // Ping-pong: every wgmma of this tile is issued; the other warpgroup may queue its own behind them.
        if constexpr (PingPong)
          if (unit.has_next) named_barrier_arrive(kOrderBarrier + (wg ^ 1), 256);
        wgmma_wait<0>();
        fence_accumulators();
        if (previous_stage >= 0) release(previous_stage);
      } else {
        static_assert(!PingPong, "fp8 ping-pong would need 4 x BN/2 accumulator registers per thread");
        // fp8: Hopper's fp8 wgmma accumulates with fewer mantissa bits than fp32 (about 1.5% error at K = 4096 on
        // random data, far outside the fp8 tolerance). Each k-tile (K = 128) is therefore accumulated in a
        // temporary and promoted into the fp32 accumulators (what DeepGEMM and CUTLASS's fp8 "promotion" do). The
        // wait drains the pipe once per k-tile; the other consumer warpgroup's wgmmas do not cover it (NOTES.md
        // steps 7 and 12-16: what was tried, and why most of it lost to ptxas serializing the wgmmas).
        float part[kAcc];
        int kt = k_begin;
        // Staggered promotion (p.promotion_stagger, half an interval; PromoteEvery > 1): warpgroup 1 first promotes
        // that many k-tiles one at a time, so that from then on its drains fall mid-interval of warpgroup 0's, whose
        // queued wgmmas keep the tensor pipe busy. Phase 0 runs those k-tiles and then the whole intervals, phase 1
        // the k-tiles left; the phase loop is unrolled, so no branch chooses a wait at run time (a branch around a
        // wait makes ptxas serialize every wgmma, step 16; and a lambda for the one-k-tile step spilled, step 21).
        const int lead = PromoteEvery > 1 && wg == 1 ? min(p.promotion_stagger, k_end - k_begin) : 0;
#pragma unroll
        for (int phase = 0; phase < 2; ++phase) {
          // One k-tile at a time: into the temporary, drained and promoted at once.
          for (const int stop = phase == 0 ? k_begin + lead : k_end; kt < stop; ++kt, ++it) {
            const int s = int(it % kStages);
            mbar_wait(full_bar + 8u * std::uint32_t(s), (it / kStages) & 1);
            if (stamps && kt == k_begin) HOPPER_TIMELINE_STAMP(first_full, local);
            wgmma_fence();
            fence_registers(part);
            issue(part, s, wg * 64, false);
            wgmma_commit();
            wgmma_wait<0>();
            fence_registers(part);
            release(s);
#pragma unroll
            for (int i = 0; i < kAcc; ++i) acc[0][i] += part[i];
          }
          if constexpr (PromoteEvery > 1) {
            if (phase == 1) break;
            // Promotion every PromoteEvery k-tiles (CUTLASS's "promotion interval" x 4): the k-tiles of one
            // interval are issued back to back into the temporary, one group in flight while the next is issued
            // (4-stage tiles drain each k-tile instead, to give its stage back at once: kReleaseEachKTile), and the
            // promotion runs once per interval instead of once per k-tile. The temporary then sums
            // PromoteEvery x 128 K at the tensor cores' precision: more rounding, which the same verification
            // bounds. The interval is unrolled at compile time on purpose: with a run-time interval (a wait<0> or
            // wait<1> chosen by a branch) ptxas serializes every wgmma ("C7518 ... WG.DP in divergent path",
            // NOTES.md step 16; tests/build/check_ptxas.cmake keeps such a kernel out of the build).
            // Whole intervals, then one tail interval where that many k-tiles are left (promotion_tail_interval,
            // kernels/common/fp8_promotion.hpp: 4 for promote8, whose 7 leftover k-tiles of K = 2880 otherwise went
            // one at a time). The size loop is unrolled, so each size is a compile-time constant.
            constexpr int kTail = promotion_tail_interval(PromoteEvery);
#pragma unroll
            for (int size = 0; size < (kTail > 0 ? 2 : 1); ++size) {
              const int interval = size == 0 ? PromoteEvery : kTail;
              for (; kt + interval <= k_end; kt += interval) {
#pragma unroll
                for (int j = 0; j < interval; ++j) {
                  const std::uint32_t at = it + std::uint32_t(j);
                  const int s = int(at % kStages);
                  mbar_wait(full_bar + 8u * std::uint32_t(s), (at / kStages) & 1);
                  if (stamps && kt + j == k_begin) HOPPER_TIMELINE_STAMP(first_full, local);
                  wgmma_fence();
                  fence_registers(part);
                  issue(part, s, wg * 64, j > 0);
                  wgmma_commit();
                  if constexpr (kReleaseEachKTile) {
                    if (j + 1 < interval) {
                      wgmma_wait<0>();   // k-tile j has been read: its stage goes back before k-tile j + 1's wait
                      release(s);
                    }
                  } else if (j > 0 && j + 1 < interval) {
                    wgmma_wait<1>();   // k-tile j - 1 has been read
                    release(int((at - 1) % kStages));
                  }
                }
                wgmma_wait<0>();
                fence_registers(part);
                if constexpr (!kReleaseEachKTile) release(int((it + interval - 2) % kStages));
                release(int((it + interval - 1) % kStages));
                it += interval;
#pragma unroll
                for (int i = 0; i < kAcc; ++i) acc[0][i] += part[i];
              }
            }
          }
        }
      }

      if (stamps) HOPPER_TIMELINE_STAMP(mainloop_end, local);
      if (p.sk_tiles > 0) {
        // Stream-K (cooperative schedules only). A slot holds one warpgroup's accumulators (its kSlices 64-row
        // slices) in register order, float4-interleaved across its 128 threads (coalesced).
        constexpr int kSlotFloats = kSlices * 128 * kAcc;
        auto slot = [&](int c) { return p.sk_partials + ((std::int64_t(c) * cluster_size + rank) * 2 + wg) * kSlotFloats; };
        auto flag = [&](int c) { return p.sk_flags + (c * cluster_size + rank) * 2 + wg; };
        // A warpgroup whose rows all lie past M (decode: M = 64 leaves the second 64-row slice empty) has nothing
        // to hand over: its contributors and its owner skip the slot and the flag alike (same tile, same rows).
        const bool rows_live = m0 + first_slice * 64 < p.m;
        if (unit.contribute_slot >= 0) {
          if (!rows_live) continue;
          float4* out = reinterpret_cast<float4*>(slot(unit.contribute_slot));
#pragma unroll
          for (int h = 0; h < kSlices; ++h)
#pragma unroll
            for (int i = 0; i < kAcc / 4; ++i)
              __stcg(out + (h * kAcc / 4 + i) * 128 + tid,
                     make_float4(acc[h][4 * i], acc[h][4 * i + 1], acc[h][4 * i + 2], acc[h][4 * i + 3]));
          named_barrier(1 + wg, 128);
          if (tid == 0) {
            __threadfence();
            atomicExch(flag(unit.contribute_slot), 1);
          }
          continue;
        }
        if (unit.contributors > 0 && rows_live) {
          if (tid == 0)
            for (int c = unit.first_contributor; c < unit.first_contributor + unit.contributors; ++c) {
              while (load_acquire(flag(c)) == 0) {
              }
              *flag(c) = 0;   // ready for the next launch: each slot is written once per launch
            }
          named_barrier(1 + wg, 128);
          // (p.sk_skip_fixup: the test hook that proves the verification catches a missing fix-up.)
          for (int c = unit.first_contributor; c < unit.first_contributor + unit.contributors && !p.sk_skip_fixup;
               ++c) {
            const float4* in = reinterpret_cast<const float4*>(slot(c));
#pragma unroll
            for (int h = 0; h < kSlices; ++h)
#pragma unroll
              for (int i = 0; i < kAcc / 4; ++i) {
                const float4 v = __ldcg(in + (h * kAcc / 4 + i) * 128 + tid);
                acc[h][4 * i] += v.x;
                acc[h][4 * i + 1] += v.y;
                acc[h][4 * i + 2] += v.z;
                acc[h][4 * i + 3] += v.w;
              }
          }
        }
      }

      // Accumulator layout of wgmma m64nN (fp32): register 4j + 2h + e of lane l in warp w holds
      // row 16 w + l/4 + 8 h, column 8 j + 2 (l % 4) + e.
      const int row_in_slice = warp * 16 + lane / 4;
      if constexpr (!kBiasEarly) load_bias();
#pragma unroll
      for (int slice = 0; slice < kSlices; ++slice) {
        const float (&d)[kAcc] = acc[slice];
        const int row0 = m0 + (first_slice + slice) * 64;   // first row of this 64-row slice
        if (p.splits > 1) {
          float* out = p.partials + (std::int64_t(t.split) * p.batch + t.batch) * std::int64_t(p.m) * p.n;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int row = row0 + row_in_slice + 8 * h, col = n0 + 8 * j + 2 * (lane % 4);
              if (row < p.m && col < p.n) {   // n is even (16-byte rows), so col + 1 < n as well
                *reinterpret_cast<float2*>(out + std::int64_t(row) * p.n + col) =
                    make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
              }
            }
          continue;
        }
#pragma unroll
        for (int c = 0; c < kChunks; ++c, ++chunk_counter) {
          // Each warp stores its own 16 rows of the chunk (a kCols x 16 TMA box from its part of the buffer), so the
          // chunk needs no warpgroup barrier: a warp waits for its own stores and syncs its own lanes (two
          // warpgroup barriers a chunk waited for the slowest warp: NOTES.md step 42).
          const std::uint32_t buf_addr = chunks_addr + std::uint32_t((wg * 2 + (chunk_counter & 1)) * kChunkBytes);
          if (lane == 0) tma_store_wait_read<1>();   // this warp's store that last used this buffer has read it
          __syncwarp();
          constexpr int kGroups = kCols / 8;   // 8-column groups of the chunk
          // The chunk is 2 x kGroups 8x8 matrices per warp (8-column group jj, 8-row half h), whose fragments the
          // accumulators already hold in stmatrix's layout (register 4j + 2h, 4j + 2h + 1: row l/4, columns
          // 2 (l % 4) and + 1): one stmatrix.x4 per two groups instead of four 4-byte stores each (NOTES.md step
          // 33). Each lane gives one matrix row's address: matrix l/8 of the four, its row l % 8. The 16-byte groups
          // of a row are swizzled as the TMA store expects: 128-byte rows by the row's index mod 8, 64-byte rows by
          // bits 1-2 of it (the pattern repeats every 1024 and 512 bytes, and every warp's rows start on such a
          // boundary).
          // The epilogue (GELU or not, a bias or not) is decided once per chunk, outside the element loop: tested
          // per element pair (a branch around each pair's GELU), the chunk compiled into 16 small blocks the
          // scheduler could not interleave, and packing it took ~570 cycles, the largest part of an epilogue that
          // cost 6.5 % of the 4096^3 kernel (NOTES.md step 42). Without a bias a bf16 chunk neither shuffles bias
          // pairs nor adds them (NOTES.md step 86, after step 85 found a third of the epilogue was neither packing
          // nor storing: the ping-pong tile 4 % faster at K = 512).
          // (fp8 keeps one chunk body for both, its bias pairs zero where there is no bias: a third body spilled
          // one of its instances.)
          constexpr bool kNoBiasBody = !Fp8;
          // The chunk's bias pairs: columns 8 jj + 2 (l % 4) and + 1 of the chunk, held by lane 4 jj + l % 4 (zero
          // past N and without a bias epilogue).
          float2 bias[kGroups];
          if (!kNoBiasBody || p.epilogue != 0) {
#pragma unroll
            for (int jj = 0; jj < kGroups; ++jj) {
              const std::uint32_t pair = __shfl_sync(0xffffffffu, bias_pairs[c], 4 * jj + lane % 4);
              bias[jj] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&pair));
            }
          }
          auto pack_and_store = [&](auto gelu, auto with_bias) {
#pragma unroll
            for (int q = 0; q < kGroups / 2; ++q) {
              std::uint32_t packed[4];
#pragma unroll
              for (int m = 0; m < 4; ++m) {   // matrix m of this stmatrix: group jj = 2q + m/2, half h = m % 2
                const int jj = 2 * q + m / 2, h = m % 2, j = chunk_col0(c) / 8 + jj;
                float v0, v1;
                if constexpr (decltype(with_bias)::value) {
                  v0 = scale * d[4 * j + 2 * h] + bias[jj].x;
                  v1 = scale * d[4 * j + 2 * h + 1] + bias[jj].y;
                } else {
                  v0 = scale * d[4 * j + 2 * h];
                  v1 = scale * d[4 * j + 2 * h + 1];
                }
                if constexpr (decltype(gelu)::value) {
                  v0 = gelu_tanh_fast(v0);
                  v1 = gelu_tanh_fast(v1);
                }
                packed[m] = pack_bf16x2(v0, v1);
              }
              const int m = lane / 8, jj = 2 * q + m / 2, r = warp * 16 + 8 * (m % 2) + lane % 8;
              const int swizzled = kCRowBytes == 128 ? jj ^ (r & 7) : jj ^ ((r >> 1) & 3);
              stmatrix_x4(buf_addr + r * kCRowBytes + (swizzled << 4), packed);
            }
          };
          if (p.epilogue == 2)
            pack_and_store(std::true_type{}, std::true_type{});
          else if (!kNoBiasBody || p.epilogue == 1)
            pack_and_store(std::false_type{}, std::true_type{});
          else if constexpr (kNoBiasBody)
            pack_and_store(std::false_type{}, std::false_type{});
          // (The timeline stamps the steps of each unit's first chunk.)
          const bool stamp_chunk = stamps && slice == 0 && c == 0;
          if (stamp_chunk) HOPPER_TIMELINE_STAMP(chunk_packed, local);
          fence_proxy_async_smem();
          __syncwarp();
          if (stamp_chunk) HOPPER_TIMELINE_STAMP(chunk_fenced, local);
          if (lane == 0) {
            tma_store(&map_c, buf_addr + std::uint32_t(warp * kStoreRows * kCRowBytes), n0 + chunk_col0(c),
                      row0 + warp * kStoreRows, t.batch);
            tma_store_commit();
          }
          if (stamp_chunk) HOPPER_TIMELINE_STAMP(chunk_stored, local);
        }
      }
      if (stamps) HOPPER_TIMELINE_STAMP(epilogue_end, local);
    }
    if (lane == 0) tma_store_wait_all<0>();
    if (stamps) HOPPER_TIMELINE_STAMP(exit, 0);
  }
  // No CTA may leave while a peer can still multicast into its shared memory or arrive on its barriers: the
  // producer's tail above waits for that, in place of a cluster barrier here.
#endif
}

// Host side of one instance: sets its shared-memory limit (outside any graph capture), launches it, and asks
// how many clusters of a size can be co-resident (the persistent grid's size).
template <bool Fp8, int BM, int BN, bool BMnMajor, bool PingPong, int PromoteEvery = 1>
HopperInstance hopper_instance_of() {
  HopperInstance inst;
  inst.smem_bytes = HopperShape<Fp8, BM, BN>::kSmemBytes;
  inst.stages = HopperShape<Fp8, BM, BN>::kStages;
  inst.block_k = HopperShape<Fp8, BM, BN>::kBlockK;
  inst.prepare = [] {
    AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(hopper_gemm_kernel<Fp8, BM, BN, BMnMajor, PingPong, PromoteEvery>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             HopperShape<Fp8, BM, BN>::kSmemBytes));
  };
  inst.max_clusters = [](int cluster_size) {
    const ClusterLaunchConfig cfg(unsigned(cluster_size) * 132, kThreads, HopperShape<Fp8, BM, BN>::kSmemBytes,
                                  unsigned(cluster_size), true);
    int clusters = 0;
    AISPFLOW_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, hopper_gemm_kernel<Fp8, BM, BN, BMnMajor, PingPong, PromoteEvery>, cfg.get()));
    return clusters;
  };
  inst.launch = [](const HopperLaunchArgs& args, cudaStream_t stream) {
    // A 1x1 configuration launches without the cluster attribute, as a plain grid (as CUTLASS launches its 1x1
    // kernels). The hardware places the CTAs of a cluster launch, even one of single-CTA clusters, otherwise than
    // a plain grid's, and consecutive CTAs, which take tiles that share A or B rows, then miss in L2 far more:
    // 1x1 tiles ran 5-33 % slower with the attribute (NOTES.md step 72; steps 36-37 had measured the extra DRAM
    // traffic without finding its cause). The kernel sees a cluster of one either way. (The test hook's override
    // keeps the attribute: it launches a pair's parameters as clusters of one, which the kernel must stop.)
    const int configured = args.params.cluster_m * args.params.cluster_n;
    const int cluster_ctas = args.cluster_ctas_override > 0 ? args.cluster_ctas_override : configured;
    const ClusterLaunchConfig cfg(unsigned(args.ctas), kThreads, HopperShape<Fp8, BM, BN>::kSmemBytes,
                                  unsigned(cluster_ctas), configured != 1, stream);
    AISPFLOW_CUDA_CHECK(
        cudaLaunchKernelEx(cfg.get(), hopper_gemm_kernel<Fp8, BM, BN, BMnMajor, PingPong, PromoteEvery>, *args.a, *args.b, *args.c, args.params));
  };
  return inst;
}

#ifdef AISPFLOW_HOPPER_TIMELINE
}  // namespace timeline
#endif
}  // namespace aispflow::kernels::cuda::ours
