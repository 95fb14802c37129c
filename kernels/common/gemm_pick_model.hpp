#pragma once
// The default pick of `ours.cluster` without autotune: a small model of a persistent tiled GEMM's time per
// configuration (waves and the last wave's fill, tile quantization at the M/N edges, per-tile math efficiency,
// operand traffic per k-tile, cluster coupling, the fixed cost of each work item against its K, split-K's
// reduce). Pure C++ (no CUDA), so that CI can test it against the committed autotune evidence
// (kernels/common/gemm_pick_fit.hpp) without a GPU. docs/kernels.md writes the model down.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::kernels {

// Whether a GEMM case's B is stored K x N, which ours.cluster reads MN-major: bf16 in layout nn (fp8 in layout nn
// stores B N x K, K-major, as cuBLASLt's fp8 does).
inline bool b_stored_mn_major(const std::string& layout, bool fp8) { return layout == "nn" && !fp8; }

struct PickShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool b_mn_major = false;   // B stored K x N (bf16 layout nn): the kernel loads it in boxes of 64 columns
};

// One configuration as the model sees it.
struct PickConfig {
  std::string name;
  int block_m = 128;                    // rows one work item covers (128, or 256 at block_n 128)
  int block_n = 256;
  int block_k = 64;                     // elements of K per k-tile (128 bytes: 64 bf16, 128 fp8)
  int cluster_m = 1, cluster_n = 1;     // CTAs per cluster along M (they share B) and N (they share A)
  std::string schedule = "cooperative";   // "cooperative" | "pingpong"
  int tiles_in_flight_per_cta = 1;      // 1 cooperative; 2 ping-pong (each consumer warpgroup its own tile)
  int split_k = 0;                      // 0 = auto (auto_split_k)
  bool stream_k = false;                // the last wave's tiles shared out by k-iterations (stream_k_tiles)
  bool stream_k_small_grid = false;     // ... and, where split-K would run (the tiles cannot fill the GPU), every
                                        // tile shared instead (stream_k_small_grid_tiles); records since 2026-11-26
  int promotion_interval = 1;           // fp8: k-tiles between promotions into fp32
  int promotion_stagger = 0;            // fp8: k-tiles the second consumer warpgroup's promotions lag (0 = in step)
  int slots = 0;                        // co-resident clusters (the kernel's occupancy query, which its grid
                                        // uses); 0 = unknown: sms / cluster size, 2x2: cluster4_slots
  bool a_box_trim = false;              // at M <= 64 a stage loads a 64-row A box instead of block_m rows, most of
                                        // them zero-filled (cooperative 128-row tiles since NOTES.md step 26; 1x2
                                        // clusters since step 30); records before say nothing, and paid the fill
};

// The model's constants (their meaning: docs/kernels.md and gemm_pick_model.cpp). Time unit: one 128x256
// k-tile of math on one SM.
struct PickConstants {
  double tile_efficiency_192 = 1;   // math rate of a 128x192 tile relative to 128x256 (wider wgmma: more reuse)
  double tile_efficiency_128 = 1;   // ... of a 128x128 tile
  double tile_efficiency_64 = 1;    // ... of a 128x64 tile (decode)
  double tile_efficiency_32 = 0;    // ... of a 128x32 tile (decode without split-K); 0 = unfitted (never picked)
  double tile_efficiency_256x128 = 1;   // ... of a 256x128 tile (two m64n128 wgmmas per consumer and k-step)
  double pingpong_efficiency = 1;   // math rate of a ping-pong tile relative to a cooperative one of its size
  double promote4_efficiency = 1;   // math rate of fp8 promoting every 4 k-tiles relative to every k-tile
  double promote8_efficiency = 0;   // ... every 8 k-tiles relative to every 4; 0 = unfitted (never picked)
  double stagger_efficiency = 0;    // math rate of promote4 with the consumers half an interval apart vs in step;
                                    // 0 = unfitted (no record has run it: never picked)
  double load_cost = 0;             // time of one 16 KB operand slab (128 rows x 128 B) issued per CTA per k-tile
  double dram_weight = 0;           // DRAM slabs per k-tile (the shape's compulsory bytes per FLOP) vs L2 slabs
  double overlap_sharpness = 8;     // p of the smooth max (math^p + load^p)^(1/p): how well loads hide
  double cluster2_cost_bf16 = 0;    // extra math time per k-tile of a 2-CTA cluster (barrier coupling), bf16
  double cluster4_cost_bf16 = 0;    // ... of a 2x2 cluster, bf16
  double cluster2_cost_fp8 = 0;     // ... of a 2-CTA cluster, fp8 (promotion stalls couple the pair)
  double cluster4_cost_fp8 = 0;     // ... of a 2x2 cluster, fp8
  double cluster_1x2_extra = 0;     // extra math of a 1x2 pair (A shared) over a 2x1 one (B shared)
  double item_overhead_ktiles = 0;  // fixed cost of a work item (pipeline fill, epilogue), in its k-tiles
  double cluster_item_overhead_ktiles = 0;   // ... and the extra of a cluster's item (its CTAs fill together)
  double partial_wave_floor = 1;    // a partial last wave costs floor + (1 - floor) x fill of a full one
  double splitk_cost_per_mb = 0;    // split-K: time per MB of fp32 partial traffic (written, read) + output
  double stream_k_slowdown = 1;     // stream-K phase time per k-iteration vs a data-parallel one (its clusters run
                                    // at different K offsets, so they share no operand k-slice in L2)
  double stream_k_small_grid_slowdown = 0;   // time per k-iteration of a small grid's stream-K vs a data-parallel
                                           // one; 0 = unfitted (no record has run it: never picked)
  double cluster4_slots = 0;        // co-resident 2x2 clusters where the caller does not know (a cluster lives in one
                                    // GPC, and the H100's GPCs are not all a multiple of 4 SMs); 0 = sms / 4
};

// A named handle on each constant, with the range the fit may move it in (gemm_pick_fit.cpp, the docs table).
using PickConstantMember = double PickConstants::*;
struct PickConstantRef {
  const char* name;
  PickConstantMember member;
  double lo, hi;
  const char* meaning;
};
const std::vector<PickConstantRef>& pick_constant_refs();
nlohmann::json to_json(const PickConstants& c);

// The constants fitted on the committed H100 evidence (gemm_pick_model.cpp says which, and how to re-fit).
const PickConstants& h100_pick_constants();

// The K splits ours.cluster runs for `shape` when asked for split_k = 0 (auto): when the output tiles cannot
// fill half the GPU (decode, M <= 128), split K so that about one wave runs, each split keeping >= 4 k-tiles.
int auto_split_k(const PickShape& shape, int block_m, int block_n, int block_k, int sms);

// Stream-K for the last wave (ours.cluster's rule, used by the kernel and by the model): how many of the last
// `tiles` work items to share out by k-iterations among `clusters` co-resident clusters, or 0 when the idle part
// of the last wave is worth less than twice the fix-up's price (gemm_pick_model.cpp says how it is priced).
int stream_k_tiles(std::int64_t tiles, int clusters, int k_tiles, int block_m, int block_n);
// Stream-K for a grid the tiles cannot fill (where auto_split_k would split K: decode): all `tiles` cluster tiles'
// k-iterations shared by the `clusters` co-resident clusters and fixed up in the kernel, instead of split-K's
// fp32 partials and second reduce kernel. Returns `tiles`, or 0 when a cluster's range would hold fewer than 4
// k-tiles (no range may be empty: hopper_gemm.cuh's WorkSchedule) or the k-iterations overflow 32 bits.
int stream_k_small_grid_tiles(std::int64_t tiles, int k_tiles, int clusters);
// The same rule from a shape, as the kernel and the model apply it: where auto_split_k would split K, the cluster
// tiles (of cluster_m x cluster_n tiles) that stream_k_small_grid_tiles lets `clusters` share; else 0.
int small_grid_stream_k_tiles(const PickShape& shape, int block_m, int block_n, int block_k, int cluster_m,
                              int cluster_n, int sms, int clusters);
// The A-box trim (NOTES.md step 26): which configurations of ours.cluster can load only the 64 rows of A that
// M <= 64 fills (cooperative 128-row tiles), and whether one does for a shape. The kernel applies this rule, its
// config() reports the capability as `a_box_trim`, and the model prices it (PickConfig::a_box_trim).
bool a_box_trim_capable(int block_m, bool ping_pong);
bool a_box_trimmed(std::int64_t m, int block_m, bool ping_pong);
// What a trimming launch's `kernel` string says (and how the fit recognises records written before config()
// reported the capability).
inline constexpr const char* kATrimKernelNote = "A loads its 64 live rows";
// The fix-up's price in k-tile-times of the same tile: one fp32 partial tile written and one read per cluster.
double stream_k_price_ktiles(int block_m, int block_n);

struct PickPrediction {
  double time = 0;          // model time units
  int splits = 1;           // the K splits that run
  std::int64_t work_items = 0;
  double waves = 0;         // items / concurrent items (the last wave's fill as the fraction)
};

bool is_fp8(const std::string& dtype);
PickPrediction predict_pick(const PickShape& shape, const std::string& dtype, const PickConfig& config,
                            const PickConstants& constants, int sms = 132);
// The index of the configuration with the least predicted time (the first of equals); configs must not be empty.
std::size_t pick_argmin(const PickShape& shape, const std::string& dtype, const std::vector<PickConfig>& configs,
                        const PickConstants& constants, int sms = 132);

// An OurKernel's config() JSON ({name, tile [bm, bn, bk], cluster [cm, cn], split_k, schedule?, stream_k?,
// promotion_interval?, co_resident_clusters?}) as a PickConfig. Throws std::invalid_argument naming the missing field.
PickConfig pick_config_from_json(const nlohmann::json& config);

}  // namespace aispflow::kernels
