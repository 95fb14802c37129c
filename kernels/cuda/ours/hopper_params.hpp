#pragma once
// What the host passes to the Hopper GEMM kernel (hopper_gemm.cuh) and how it launches one compiled instance.
// Host-and-device plain data; no device code here.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "kernels/common/work_schedule.hpp"

namespace aispflow::kernels::cuda::ours {

constexpr int kRowBytes = 128;        // bytes of K per operand row in a stage: one 128-byte swizzle row
constexpr int kThreads = 384;         // producer + 2 consumer warpgroups
constexpr int kChunkCols = 64;        // epilogue chunk: 64 x 64 bf16 = one 128-byte-swizzled 8 KB tile
constexpr int kChunkBytes = 64 * kChunkCols * 2;
constexpr int kStoreRows = 16;        // rows of C one TMA store writes: one warp's rows of a chunk
// Columns of an epilogue chunk for a tile block_n wide: 64 (128-byte rows, 128-byte swizzle), or the whole tile where
// it is narrower (128 x 32: 64-byte rows, 64-byte swizzle). The kernel packs chunks of this width and the host's C
// tensor map stores boxes of it.
constexpr int epilogue_chunk_cols(int block_n) { return block_n < kChunkCols ? block_n : kChunkCols; }
constexpr int kSmemLimit = 232448;    // 227 KB: the most one Hopper CTA can have
constexpr int kMaxPlaces = 256;       // clusters a place table covers (HopperParams::cluster_place)

// Runtime parameters of one launch.
struct HopperParams {
  int m = 0, n = 0, k = 0, batch = 1;
  int m_tiles = 0, n_tiles = 0, k_tiles = 0;
  int splits = 1, k_tiles_per_split = 0;
  int cluster_m = 1, cluster_n = 1;
  int cm_tiles = 0, cn_tiles = 0;     // cluster tiles along M and N
  int total_work = 0;                 // splits x batch x cm_tiles x cn_tiles
  int raster_group = 8;               // cluster-rows per band of the rasterization
  WorkDivisors divisors;              // decode_work's divisions by the four above, as multiplies
  const float* scale_a = nullptr;     // fp8 per-tensor scales on the device; nullptr = 1
  const float* scale_b = nullptr;
  const void* bias = nullptr;         // bf16 [n] for the bias / bias_gelu epilogues
  int epilogue = 0;                   // 0 none, 1 bias, 2 bias_gelu (gemm_data.hpp's Epilogue)
  float* partials = nullptr;          // split-K: [splits][batch][m][n] fp32
  // Stream-K (hopper_gemm.cuh, WorkSchedule): the last sk_tiles work items are shared out by k-iterations.
  int sk_tiles = 0;
  float* sk_partials = nullptr;       // [clusters][cluster CTA][consumer warpgroup][128 threads x BM x BN / 256] fp32
  int* sk_flags = nullptr;            // [clusters][cluster CTA][consumer warpgroup]: 1 = that slot is written
  int sk_skip_fixup = 0;              // test hook (KernelSabotage): owners ignore the contributions
  // fp8 with a promotion interval: consumer warpgroup 1 promotes its first this many k-tiles of each work unit
  // one at a time, so that its interval ends fall half an interval after warpgroup 0's (0 = in step).
  int promotion_stagger = 0;
  // Rows of A one stage loads (0: the whole tile). At M <= 64 only the 64 rows M can fill (NOTES.md step 26: the
  // TMA's zero fill of the other 64 cost decode about a quarter of its time); consumer warpgroup 1's rows then lie
  // past M in every tile, so it computes and stores nothing (the stage barriers count one reader). In a 1x2
  // cluster each CTA loads a_box_rows / 2 of them and multicasts them.
  int a_box_rows = 0;
  // The work order's geometry (NOTES.md step 126). raster_along_n: bands of raster_group cluster-columns walked row
  // by row (consecutive work items share A rows), instead of bands of cluster-rows walked column by column (they
  // share B columns). places > 0: cluster i of the launch takes place cluster_place[i] in the work order (a
  // permutation, kernels/common/cluster_places.hpp: GPC order), else place i.
  int raster_along_n = 0;
  int places = 0;
  std::uint8_t cluster_place[kMaxPlaces] = {};
};

struct HopperLaunchArgs {
  const CUtensorMap* a = nullptr;     // host copies, passed by value as __grid_constant__ parameters
  const CUtensorMap* b = nullptr;
  const CUtensorMap* c = nullptr;
  HopperParams params;
  int ctas = 0;                       // grid size: a multiple of the cluster size
  // Test hook (KernelSabotage::What::launch_without_cluster): launch with clusters of one CTA whatever the
  // parameters say, the launch the kernel's guard must stop (NOTES.md step 41). 0: the parameters' cluster.
  int cluster_ctas_override = 0;
};

// One compiled instance (dtype x BM x BN x B's major mode x schedule).
struct HopperInstance {
  int smem_bytes = 0, stages = 0, block_k = 0;
  void (*prepare)() = nullptr;                                    // raises the dynamic shared-memory limit
  int (*max_clusters)(int cluster_size) = nullptr;                // co-resident clusters of that size
  void (*launch)(const HopperLaunchArgs&, cudaStream_t) = nullptr;
};

// Which compiled instance: the kernel template's parameters (hopper_gemm.cuh).
struct HopperInstanceKey {
  bool fp8 = false;
  int block_m = 128;        // 128, or 256 (bf16, cooperative, block N 128)
  int block_n = 256;
  bool b_mn_major = false;  // B stored K x N (layout nn, bf16)
  bool ping_pong = false;   // the consumers take whole tiles in turn (bf16, block N 128) instead of sharing each
  int promote_every = 1;    // fp8: partial sums promoted into fp32 every this many k-tiles (1 or 4)
  bool operator==(const HopperInstanceKey&) const = default;
};

// The instances compiled into this build (hopper_instances_*.cu); nullptr-free, throws for an unknown one.
HopperInstance hopper_instance(const HopperInstanceKey& key);

// Probe hook: while one lives, hopper_instance(key) returns `instance` for its key instead of the library's, so
// that a probe runs its own build of the kernel (bench/tools/hopper_timeline.cu: the timeline build) through the
// same bind(), verification and timing as every configuration. One override per key at a time.
class HopperInstanceOverride {
 public:
  HopperInstanceOverride(const HopperInstanceKey& key, const HopperInstance& instance);
  ~HopperInstanceOverride();
  HopperInstanceOverride(const HopperInstanceOverride&) = delete;
  HopperInstanceOverride& operator=(const HopperInstanceOverride&) = delete;

 private:
  HopperInstanceKey key_;
};

}  // namespace aispflow::kernels::cuda::ours
