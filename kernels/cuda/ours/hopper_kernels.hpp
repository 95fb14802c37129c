#pragma once
// ours.wgmma and ours.cluster: the configurations of our Hopper GEMM kernel (hopper_gemm.cuh) as OurKernels.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/ours/hopper_params.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda::ours {

// One configuration. The tile is block_m x block_n x (128 bytes of K); stages follow from shared memory.
struct HopperConfig {
  std::string family;        // "ours.wgmma" | "ours.cluster": the provider it belongs to
  bool fp8 = false;          // fp8 e4m3 inputs (else bf16); the output is bf16 either way
  int block_n = 256;         // 32 | 64 | 128 | 192 | 256 (192 divides the gpt-oss width 2880; 64 fills small grids;
                             // 32 is decode's tile, K-major B only)
  int cluster_m = 1;         // CTAs per cluster along M (share B) ...
  int cluster_n = 1;         // ... and along N (share A)
  bool persistent = false;   // one CTA per SM slot walking a rasterized tile order
  int raster_group = 8;      // cluster-rows per band of that order (L2 reuse)
  int split_k = 1;           // K splits; 0 = chosen per shape (skinny shapes split until a wave is full)
  // "cooperative": both consumer warpgroups share each 128 x block_n tile (64 rows each). "pingpong": each
  // takes whole tiles in turn, one's epilogue under the other's mainloop (bf16, block_n 128).
  // (fp8 is cooperative only: NOTES.md steps 12-16.)
  std::string schedule = "cooperative";
  // Stream-K (cooperative schedules): when the tiles leave the last wave partly empty, the last tiles'
  // k-iterations are shared out evenly among all clusters; where the tiles cannot fill the GPU at all (decode,
  // where split-K would run), every tile's are, by every co-resident cluster. Partial tiles are fixed up in the
  // kernel (no second reduce kernel).
  bool stream_k = false;
  // fp8: promote the tensor cores' partial sums into fp32 every this many k-tiles (128 K each): 1 (the most
  // exact), 4 or 8 (the pipe drains a quarter or an eighth as often; more rounding, still verified against the fp8
  // tolerance).
  int promotion_interval = 1;
  // Rows of a tile: 128, or 256 (bf16, cooperative, block_n 128: each consumer warpgroup 128 rows, two m64n128
  // wgmmas per k-step, cuBLASLt's bf16 tile; listed last so that positional initializers above stay valid).
  int block_m = 128;
  // fp8 with promotion_interval > 1: the two consumer warpgroups promote half an interval apart, so that one
  // warpgroup's drain (wait for its wgmmas, add into fp32) falls while the other still has wgmmas queued.
  // Without it both drain at the same k-tile and the tensor pipe idles (NOTES.md step 21).
  bool staggered_promotion = false;
  // The work order of persistent clusters of two or more CTAs (NOTES.md steps 126-127). In GPC order, the clusters
  // that share a GPC take consecutive places in the order (a calibration launch learns where the hardware puts
  // them: kernels/common/cluster_places.hpp), and the bands run so that consecutive places share the operand the
  // cluster does not multicast: bands of cluster-columns, walked row by row, where the cluster shares B (2x1),
  // else bands of cluster-rows walked column by column. GPC-mates then ask the L2 for the same lines at the same
  // time, and the L2 serves fewer requests (cuBLASLt's nvjet kernels are ordered so). false: launch order, bands of
  // cluster-rows (the order before step 127; "_launchorder" in the name).
  bool gpc_order = true;
  // In GPC order, the band width is chosen per shape: of the widths from raster_group to twice it less one, the one
  // whose last band is fullest, so no short band is left where another width avoids it (balanced_band_width in
  // kernels/common/work_schedule.hpp, NOTES.md step 130). false: bands of exactly raster_group, the last one what
  // is left ("_fixedbands").
  bool balanced_bands = true;
  // Whether GPC order applies: persistent clusters of two or more (a 1x1 configuration launches as a plain grid,
  // whose CTAs the hardware already places GPC by GPC: NOTES.md step 94).
  bool ordered_by_gpc() const { return gpc_order && persistent && cluster_m * cluster_n > 1; }
  // The bands' direction that GPC order takes (above): across N where the cluster shares B.
  bool bands_across_n() const { return ordered_by_gpc() && cluster_m > cluster_n; }
  // Cluster-rows (or, across N, cluster-columns) per band of the work order for an m_tiles x n_tiles grid.
  int band_for(int m_tiles, int n_tiles) const;
  bool ping_pong() const { return schedule == "pingpong"; }
  // Elements of K per k-tile: one 128-byte row (128 fp8 or 64 bf16).
  int block_k() const { return fp8 ? 128 : 64; }
  // The compiled instance this configuration runs where B is stored MN-major (b_mn_major: bf16 in layout nn; fp8's B
  // is always stored N x K) or K-major: what bind() looks up, and what a probe overrides or sizes.
  HopperInstanceKey instance_key(bool b_mn_major) const {
    return {fp8, block_m, block_n, b_mn_major, ping_pong(), promotion_interval};
  }

  // "128x256x64_c2x1_persistent" (+ "_pingpong", "_sk", "_promote4", "_stagger", "_launchorder", "_fixedbands"):
  // how options and tables name it.
  std::string name() const;
};

std::unique_ptr<OurKernel> make_hopper_kernel(const HopperConfig& config);
// The configuration of a kernel make_hopper_kernel (or wgmma_kernels(), cluster_kernels()) made; nullptr for any
// other OurKernel. For probes that look at the instance a configuration runs.
const HopperConfig* hopper_config_of(const OurKernel& kernel);

// Test hook: while one is alive, launches bound from then on are broken on purpose, in a way the verification
// must reject (tests/gpu/test_hopper_kernels.cpp):
//   skip_stream_k_fix_up: a stream-K tile's owner stores only its own k-range;
//   launch_without_cluster: a cluster configuration is launched with clusters of one CTA (the kernel must trap
//                         rather than wait for peers that do not exist);
//   trim_live_rows_of_a:  a stage loads A's first 64 rows even where M > 64 makes rows 64-127 live (the trim of
//                         NOTES.md step 26 applied where it is wrong: consumer warpgroup 1 reads stale rows).
//   repeat_a_place:       in GPC order, cluster 1 takes cluster 0's place in the work order (a place table that is
//                         not a permutation: one place's tiles are done twice, another's never).
class KernelSabotage {
 public:
  enum class What { skip_stream_k_fix_up, trim_live_rows_of_a, launch_without_cluster, repeat_a_place };
  explicit KernelSabotage(What what);
  ~KernelSabotage();
  KernelSabotage(const KernelSabotage&) = delete;
  KernelSabotage& operator=(const KernelSabotage&) = delete;
  static bool active(What what);

 private:
  What what_;
};

// The configuration lists of the two providers, default first per dtype (docs/nodes.md lists them).
std::vector<std::unique_ptr<OurKernel>> wgmma_kernels();
std::vector<std::unique_ptr<OurKernel>> cluster_kernels();
// ours.cluster's list as configurations (cluster_kernels() makes one kernel of each), for probes that vary them.
std::vector<HopperConfig> cluster_configs();
// The configuration each provider runs for a case without autotuning: an index into the list above.
std::size_t pick_wgmma(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c);
std::size_t pick_cluster(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c);

}  // namespace aispflow::kernels::cuda::ours
