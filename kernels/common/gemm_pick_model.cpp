#include "kernels/common/gemm_pick_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/common/fp8_promotion.hpp"

namespace aispflow::kernels {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr double kSlabBytes = 128.0 * 128.0;    // one operand slab: 128 rows x 128 bytes of K
constexpr double kUnitArea = 128.0 * 256.0;     // the time unit's tile: 128 x 256

// Math rate of a tile relative to 128x256 (1): by width, the fitted 192 and 128, linear in between; 64 and 32 have
// constants of their own (the kernel has no other widths today), and so has the 256-row tile.
double tile_efficiency(int block_m, int block_n, const PickConstants& c) {
  if (block_m >= 256) return c.tile_efficiency_256x128;
  if (block_n >= 256) return 1.0;
  if (block_n >= 192) return c.tile_efficiency_192 + (1.0 - c.tile_efficiency_192) * (block_n - 192) / 64.0;
  if (block_n >= 128)
    return c.tile_efficiency_128 + (c.tile_efficiency_192 - c.tile_efficiency_128) * (block_n - 128) / 64.0;
  if (block_n >= 64) return c.tile_efficiency_64;
  return c.tile_efficiency_32;
}

double cluster_cost(int cluster_size, bool fp8, const PickConstants& c) {
  if (cluster_size <= 1) return 0.0;
  if (cluster_size == 2) return fp8 ? c.cluster2_cost_fp8 : c.cluster2_cost_bf16;
  return fp8 ? c.cluster4_cost_fp8 : c.cluster4_cost_bf16;
}

}  // namespace

const std::vector<PickConstantRef>& pick_constant_refs() {
  static const std::vector<PickConstantRef> refs = {
      {"tile_efficiency_192", &PickConstants::tile_efficiency_192, 0.5, 1.2, "math rate of 128x192 vs 128x256"},
      {"tile_efficiency_128", &PickConstants::tile_efficiency_128, 0.5, 1.2, "math rate of 128x128 vs 128x256"},
      {"tile_efficiency_64", &PickConstants::tile_efficiency_64, 0.3, 1.2, "math rate of 128x64 vs 128x256"},
      {"tile_efficiency_32", &PickConstants::tile_efficiency_32, 0.15, 1.2, "math rate of 128x32 vs 128x256"},
      {"tile_efficiency_256x128", &PickConstants::tile_efficiency_256x128, 0.5, 1.2, "math rate of 256x128 vs 128x256"},
      {"pingpong_efficiency", &PickConstants::pingpong_efficiency, 0.5, 1.5,
       "math rate of a ping-pong tile vs a cooperative one of its size"},
      {"load_cost", &PickConstants::load_cost, 0.05, 2.0, "time per 16 KB slab issued per CTA per k-tile"},
      {"dram_weight", &PickConstants::dram_weight, 0.0, 10.0, "DRAM slabs (compulsory bytes per FLOP) vs L2 slabs"},
      {"overlap_sharpness", &PickConstants::overlap_sharpness, 2.0, 16.0, "p of the smooth max of math and load"},
      {"cluster2_cost_bf16", &PickConstants::cluster2_cost_bf16, -0.2, 0.5, "2-CTA cluster: extra math, bf16"},
      {"cluster4_cost_bf16", &PickConstants::cluster4_cost_bf16, -0.2, 0.6, "2x2 cluster: extra math, bf16"},
      {"cluster2_cost_fp8", &PickConstants::cluster2_cost_fp8, -0.2, 0.5, "2-CTA cluster: extra math, fp8"},
      {"cluster4_cost_fp8", &PickConstants::cluster4_cost_fp8, -0.2, 0.6, "2x2 cluster: extra math, fp8"},
      {"cluster_1x2_extra", &PickConstants::cluster_1x2_extra, -0.2, 0.5, "extra math of a 1x2 pair over a 2x1 one"},
      {"item_overhead_ktiles", &PickConstants::item_overhead_ktiles, 0.0, 16.0,
       "fixed cost per work item, in its k-tiles"},
      {"cluster_item_overhead_ktiles", &PickConstants::cluster_item_overhead_ktiles, 0.0, 16.0,
       "extra fixed cost per work item of a cluster, in k-tiles"},
      {"partial_wave_floor", &PickConstants::partial_wave_floor, 0.6, 1.0,
       "cost of an almost empty last wave vs a full one"},
      {"splitk_cost_per_mb", &PickConstants::splitk_cost_per_mb, 0.0, 20.0, "time per MB of split-K traffic"},
      {"promote4_efficiency", &PickConstants::promote4_efficiency, 0.5, 1.5,
       "math rate of fp8 promoting every 4 k-tiles vs every k-tile"},
      {"promote8_efficiency", &PickConstants::promote8_efficiency, 0.7, 1.5,
       "math rate of fp8 promoting every 8 k-tiles vs every 4"},
      {"stagger_efficiency", &PickConstants::stagger_efficiency, 0.7, 1.5,
       "math rate of promote4 with the consumers promoting half an interval apart vs in step"},
      {"stream_k_slowdown", &PickConstants::stream_k_slowdown, 1.0, 3.0,
       "stream-K phase: time per k-iteration vs data-parallel"},
      {"stream_k_small_grid_slowdown", &PickConstants::stream_k_small_grid_slowdown, 1.0, 3.0,
       "small-grid stream-K: time per k-iteration vs data-parallel"},
      {"cluster4_slots", &PickConstants::cluster4_slots, 24.0, 33.0,
       "co-resident 2x2 clusters when the device's count is not given (H100 records do not carry it)"},
  };
  return refs;
}

nlohmann::json to_json(const PickConstants& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : pick_constant_refs()) j[r.name] = c.*r.member;
  return j;
}

// Fitted by bench/tools/fit_pick_model (kernels/common/gemm_pick_fit.cpp) on the records of issue22/run-655c061
// (2026-11-27, `fit_pick_model --fit --penalty 50 --restarts 40 --seed 11`, cluster_gemm, kernel_selector and
// unaligned: 61 records), the kernel of NOTES.md step 80, whose work decoding multiplies where it divided: a tile's
// fixed cost shrank by ~0.3 us, so the short-K and many-tile shapes re-ranked (ping-pong now wins K <= 512) and the
// constants fitted on step 72's kernel picked within 3 % on 57 of these 61 records (41 of the two workflows' 43).
// These pick within 3 % on 60 of the 61 (all 43 of the two workflows); the miss, listed in the test with its floor:
// unaligned.yaml's fp8 3000 x 5000 x 2001 (4.7 %: stream-K 2x1 wins, promote8 1x1 is picked). item_overhead_ktiles
// sits on the edge of its range. Held out on the same kernel's rerun (issue22/run-f5af5e8, now archived): 60 of 61,
// all 43 of the two workflows, the same fp8 3000 x 5000 x 2001 miss (4.4 %); on step 86's kernel
// (issue22/run-4b2a545, bf16 chunks without bias work; fp8 unchanged): 59 of 61, 42 of 43 (fp8 4096 x 2880 x 2880 at
// 0.961); on step 93's (issue22/run-f36b47f, the bf16 128 x 64 tiles in bands of 2 rows): 60 of 61, all 43 (the same
// fp8 miss, 5.1 %); on step 97's (issue22/run-b979f0c, 128-byte L2 fills for misaligned rows): 60 of 61, 42 of 43
// (fp8 4096 x 2880 x 2880 at 0.960 again; fp8 3000 x 5000 x 2001 at 0.970); and on step 100's (issue22/run-de0ae52,
// promote8's interval of 4 past its last interval of 8, which the model prices): 59 of 61, 42 of 43 (fp8 moe_down at
// 0.96998; fp8 3000 x 5000 x 2001 at 0.958); and on the same kernel's rerun with step 101's CUTLASS row
// (issue22/run-9b8b889): 60 of 61, all 43 (fp8 3000 x 5000 x 2001 at 0.956); and on step 105's (issue22/run-3a70431,
// a cluster's start and exit without release barriers, which moved 15 winners to 2x1 pairs): 59 of 61, all 43 (fp8
// 3000 x 5000 x 2001 at 0.953; fp8 1000 x 1000 x 1001, where a pair now beats the lone tile, at 0.943); on its rerun
// (issue22/rerun-ea657ed): 57 of 61, 41 of 43 (fp8 MoE up_gate and down at 0.957 and 0.965, where exact promotion
// beats the deferred one picked: NOTES.md step 107). Re-fits on run-3a70431 (penalties 50 and 100, seeds 11 and 12)
// reach 57 of its 61, and on both runs 110 of their 122 against these constants' 116, so these stay. On step 108's
// (fp8 128 x 192 intervals release each stage at once; issue22/run-cb3b65f, rerun-cb3b65f, run-71c87f0): 58 of 61 and
// 42 of 43 in each (fp8 decode_mlp at 0.970 and 0.964; fp8 4096 x 2880 x 2880 at 0.965); a re-fit on run-cb3b65f
// picks 59 of the rerun's 61 with the same workflow miss, and 52-54 of 61 on the earlier kernels' runs, so these
// stay. On step 114's (a lone CTA fills at most 4 stages before its barrier; issue22/run-9e57c21): 60 of 61 and 42
// of 43 (bf16 4096 x 2880 x 2880 nn at 0.969). Step 127 (GPC order: the clusters of one GPC take neighbouring
// tiles) made 1x2 pairs 1-26 % faster and 2x1 pairs 0-4 %: with cluster_1x2_extra at its fit of 0.041, 58 of
// issue22/run-8a141a2's 61 (41 of 43: bf16 moe_down and 4096 x 2880 x 2880 nn, both won by a 1x2 pair); scanned
// alone (fit_pick_model --scan), -0.05 to -0.003 pick 60 of 61 (all 43), so it is -0.0125: a 1x2 pair in GPC order
// costs no more than a 2x1. Held out on rerun-8a141a2: 60 of 61, all 43 (fp8 3000 x 5000 x 2001 at 0.960). Every
// run named here but run-8a141a2 is archived (issue22/README.md; rerun-8a141a2 in superseded-runs-16.tar.xz).
// Earlier fits had several basins (penalties 20-100, seeds 11-12: tile efficiencies up to 15 % apart, 54-56 of 61).
const PickConstants& h100_pick_constants() {
  static const PickConstants c = [] {
    PickConstants k;
    k.tile_efficiency_192 = 0.94861586353429206;
    k.tile_efficiency_128 = 0.90053349756423018;
    // The 128x64 tile (NOTES.md step 22): slower per FLOP, but it fills grids that 128-column tiles leave half
    // empty (128 x 8192 x 8192, 1000^3, decode).
    k.tile_efficiency_64 = 0.35012951538507581;
    // The 128x32 tile (NOTES.md step 44): it wins fp8 decode at N = 2880 (one wave without split-K) and loses bf16
    // decode to 128x64 with split-K (its 64 k-tiles are a chain of short wgmma groups).
    k.tile_efficiency_32 = 0.19335986011766543;
    // The 256x128 tile (NOTES.md step 18).
    k.tile_efficiency_256x128 = 1.0032144792550615;
    // Co-resident 2x2 clusters where a record does not carry the count (none of the fitted ones: they all do).
    // The H100's occupancy query says 30: a cluster lives in one GPC, and the H100's GPCs are not all multiples
    // of 4 SMs.
    k.cluster4_slots = 30.363610755065778;
    // Small-grid stream-K (NOTES.md step 20).
    k.stream_k_small_grid_slowdown = 1.8828482339144843;
    // Staggered fp8 promotion (NOTES.md step 21).
    k.stagger_efficiency = 0.99999999999977163;
    k.pingpong_efficiency = 0.84165603691225765;
    k.load_cost = 0.28772672099487467;
    k.dram_weight = 2.2573714063315764;
    k.overlap_sharpness = 2;
    // A pair's extra math against lone CTAs, which since NOTES.md step 72 keep their L2 locality (plain grids).
    k.cluster2_cost_bf16 = 0.073933622307118821;
    k.cluster4_cost_bf16 = 0.067362790824737492;
    k.cluster2_cost_fp8 = 0.12742133265402772;
    k.cluster4_cost_fp8 = 0.20339043831955275;
    k.cluster_1x2_extra = -0.0125;   // re-fitted on step 127's kernel (above)
    k.item_overhead_ktiles = 16;   // the top of its range
    // A cluster's work item starts later than a lone CTA's (its cluster barrier; a lone CTA issues its first
    // loads before its CTA barrier, NOTES.md step 40): what decode's short items show.
    k.cluster_item_overhead_ktiles = 5.9744590420994621;
    k.partial_wave_floor = 0.97971741271005119;
    k.splitk_cost_per_mb = 2.2354226471753709;
    k.promote4_efficiency = 1.009647731404798;
    // fp8 promote8 (NOTES.md step 43), relative to promote4, on the k-tiles in whole intervals of 8.
    k.promote8_efficiency = 1.0648603372391221;
    k.stream_k_slowdown = 1.4325255519839548;
    return k;
  }();
  return c;
}

bool is_fp8(const std::string& dtype) { return dtype.rfind("fp8", 0) == 0; }

// The same rule as the kernel's (hopper_kernels.cu calls this one): split only when the output tiles cannot
// fill half the GPU; then about one wave of splits, each keeping at least 4 k-tiles (a shorter mainloop cannot
// hide its pipeline fill), at most 16.
int auto_split_k(const PickShape& s, int block_m, int block_n, int block_k, int sms) {
  const std::int64_t tiles = ceil_div(s.m, block_m) * ceil_div(s.n, block_n) * s.batch;
  const std::int64_t k_tiles = ceil_div(s.k, block_k);
  if (tiles * 2 > sms) return 1;
  const std::int64_t want = sms / std::max<std::int64_t>(tiles, 1);
  return int(std::clamp<std::int64_t>(std::min(want, k_tiles / 4), 1, 16));
}

// time = waves x (tiles_in_flight x k-tiles per split + item overhead) x t_k  [+ split-K reduce]
//   waves  = full waves + (floor + (1 - floor) x fill) for a partial last one, over work items = splits x batch x
//            cluster tiles (edge tiles cost a whole tile: TMA zero-fills them) and slots x tiles in flight;
//   t_k    = smooth max of math and load per k-tile:
//            math = tile area / (128 x 256) / efficiency(block_n) x (1 + cluster cost),
//            load = load_cost x (slabs issued per CTA + dram_weight x DRAM slabs per k-tile of the shape).
// The price: each cluster writes one fp32 partial tile (block_m x block_n x 4 bytes) and reads one, at about
// the rate the mainloop streams its operands (a k-tile's stage is (block_m + block_n) rows of 128 bytes), so
// 2 x tile bytes / stage bytes k-tile-times. The gain: with T work items on C clusters and R = T mod C, the
// data-parallel waves take ceil(T / C) tile-times; sharing the last R + C items (a full wave and the partial one,
// so that each cluster's range is longer than a tile and holds at most one contribution) brings that to T / C,
// a gain of (1 - R / C) x k_tiles k-tile-times. On the H100 (NOTES.md step 12) a gain of 7.7 against a price of
// 5.3 (bf16 4096^3, 128x256) came out 8% slower and a gain of 21 against 4.8 (fp8 4096^3, 128x192) 5.6% faster:
// stream-K is used when the gain is at least twice the price, and each range is at least 8 k-tiles.
double stream_k_price_ktiles(int block_m, int block_n) {
  return 2.0 * (double(block_m) * block_n * 4.0) / (double(block_m + block_n) * 128.0);
}

int stream_k_tiles(std::int64_t tiles, int clusters, int k_tiles, int block_m, int block_n) {
  if (clusters <= 0 || tiles <= clusters) return 0;
  const std::int64_t rest = tiles % clusters;
  if (rest == 0) return 0;
  const double gain = (1.0 - double(rest) / clusters) * k_tiles;
  if (gain < 2.0 * stream_k_price_ktiles(block_m, block_n)) return 0;
  const std::int64_t shared = std::min<std::int64_t>(tiles, rest + clusters);
  if (shared * k_tiles / clusters < 8) return 0;
  if (shared * k_tiles >= (std::int64_t(1) << 31)) return 0;   // the kernel counts k-iterations in 32 bits
  return int(shared);
}

int stream_k_small_grid_tiles(std::int64_t tiles, int k_tiles, int clusters) {
  if (clusters <= 0 || tiles <= 0) return 0;
  if (tiles * k_tiles < 4 * std::int64_t(clusters)) return 0;
  if (tiles * k_tiles >= (std::int64_t(1) << 31)) return 0;   // the kernel counts k-iterations in 32 bits
  return int(tiles);
}

int small_grid_stream_k_tiles(const PickShape& s, int block_m, int block_n, int block_k, int cluster_m,
                              int cluster_n, int sms, int clusters) {
  if (auto_split_k(s, block_m, block_n, block_k, sms) <= 1) return 0;
  const std::int64_t tiles =
      s.batch * ceil_div(ceil_div(s.m, block_m), cluster_m) * ceil_div(ceil_div(s.n, block_n), cluster_n);
  return stream_k_small_grid_tiles(tiles, int(ceil_div(s.k, block_k)), clusters);
}

bool a_box_trim_capable(int block_m, bool ping_pong) { return block_m == 128 && !ping_pong; }
bool a_box_trimmed(std::int64_t m, int block_m, bool ping_pong) { return m <= 64 && a_box_trim_capable(block_m, ping_pong); }

PickPrediction predict_pick(const PickShape& s, const std::string& dtype, const PickConfig& cfg,
                            const PickConstants& c, int sms) {
  const bool fp8 = is_fp8(dtype);
  const int cluster = cfg.cluster_m * cfg.cluster_n;
  const int tif = std::max(1, cfg.tiles_in_flight_per_cta);
  const std::int64_t m_tiles = ceil_div(s.m, cfg.block_m), n_tiles = ceil_div(s.n, cfg.block_n);
  const std::int64_t k_tiles = ceil_div(s.k, cfg.block_k);
  const std::int64_t slots = cfg.slots > 0                         ? cfg.slots
                             : cluster == 4 && c.cluster4_slots >= 1 ? std::int64_t(c.cluster4_slots)
                                                                     : std::max(1, sms / cluster);
  const std::int64_t cluster_tiles = s.batch * ceil_div(m_tiles, cfg.cluster_m) * ceil_div(n_tiles, cfg.cluster_n);
  const int auto_splits = auto_split_k(s, cfg.block_m, cfg.block_n, cfg.block_k, sms);
  // The kernel's rule (hopper_kernels.cu): a `_sk` configuration shares every tile where split-K would run.
  const int small_grid = cfg.stream_k && cfg.stream_k_small_grid && tif == 1 && cfg.split_k == 0
                             ? small_grid_stream_k_tiles(s, cfg.block_m, cfg.block_n, cfg.block_k, cfg.cluster_m,
                                                         cfg.cluster_n, sms, int(slots))
                             : 0;
  const int requested = cfg.split_k > 0 ? cfg.split_k : small_grid > 0 ? 1 : auto_splits;
  const std::int64_t per_split = ceil_div(k_tiles, requested);

  PickPrediction p;
  p.splits = int(ceil_div(k_tiles, per_split));
  p.work_items = p.splits * cluster_tiles;
  const std::int64_t concurrent = slots * tif;
  const double fill = double(p.work_items % concurrent) / double(concurrent);
  const double waves = double(p.work_items / concurrent) +
                       (fill > 0 ? c.partial_wave_floor + (1.0 - c.partial_wave_floor) * fill : 0.0);
  p.waves = double(p.work_items) / double(concurrent);

  // A constant at 0 is unfitted: no record has run what it prices, and a default pick must not rest on a guess,
  // so such a configuration is never picked (infinite time). Autotune still tries it.
  auto unpriced = [&p] {
    p.time = std::numeric_limits<double>::infinity();
    return p;
  };
  const double area = double(cfg.block_m) * cfg.block_n;
  double efficiency = tile_efficiency(cfg.block_m, cfg.block_n, c);
  if (efficiency <= 0) return unpriced();
  if (small_grid > 0 && c.stream_k_small_grid_slowdown <= 0) return unpriced();
  if (cfg.schedule == "pingpong") efficiency *= c.pingpong_efficiency;
  if (cfg.promotion_interval > 1) {
    // The kernel's rule (kernels/common/fp8_promotion.hpp): whole intervals at the interval's rate, one tail
    // interval where enough k-tiles are left, the rest one k-tile at a time at promote1's rate (K = 2880 in fp8 is
    // 23 k-tiles: five intervals of 4 and three single ones, or two of 8, one of 4 and three single ones).
    if (cfg.promotion_interval > 4 && c.promote8_efficiency <= 0) return unpriced();
    auto rate = [&](int interval) {   // promote4's rate, and promote8's relative to it
      return interval > 4 ? c.promote4_efficiency * c.promote8_efficiency : c.promote4_efficiency;
    };
    const int tail = promotion_tail_interval(cfg.promotion_interval);
    const double whole = double(per_split / cfg.promotion_interval * cfg.promotion_interval);
    const double tails = tail > 0 && per_split - whole >= tail ? double(tail) : 0.0;
    const double rest = double(per_split) - whole - tails;
    const double interval_rate = rate(cfg.promotion_interval);
    efficiency *= per_split > 0 ? double(per_split) / (whole / interval_rate + tails / rate(tail) + rest) : interval_rate;
  }
  if (cfg.promotion_stagger > 0) {
    if (c.stagger_efficiency <= 0) return unpriced();
    efficiency *= c.stagger_efficiency;
  }
  // A 1x2 pair shares A (the rows): its coupling is priced apart from a 2x1 pair's (decode, M = 64, is where
  // the two differ: A is a sliver there and sharing it buys little).
  const double pair_a = (cfg.cluster_m == 1 && cfg.cluster_n == 2) ? c.cluster_1x2_extra : 0.0;
  const double math = area / kUnitArea / efficiency * (1.0 + cluster_cost(cluster, fp8, c) + pair_a);
  const double ab_bytes = fp8 ? 1.0 : 2.0;
  // Rows of A a stage loads: the whole box, whose rows past the matrix's edge the TMA fills with zeros at about the
  // cost of loading them (NOTES.md step 26), unless the kernel trims the box to 64 rows at M <= 64.
  const bool trimmed = cfg.a_box_trim && a_box_trimmed(s.m, cfg.block_m, cfg.schedule == "pingpong");
  const double a_rows = trimmed ? 64.0 : double(cfg.block_m);
  // Rows of B a stage loads. An MN-major B comes in boxes of 64 columns, whole boxes even where the tile is
  // narrower: 128 x 240 loads 256.
  double b_rows = double(std::min<std::int64_t>(cfg.block_n, s.n));
  if (s.b_mn_major && cfg.block_n > 64 && cfg.block_n % 64 != 0)
    b_rows = double(std::min<std::int64_t>(ceil_div(cfg.block_n, 64) * 64, ceil_div(s.n, 64) * 64));
  const double l2_slabs = (a_rows / cfg.cluster_n + b_rows / cfg.cluster_m) / 128.0;
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  const double compulsory = (double(s.m) * s.k + double(s.k) * s.n) * ab_bytes + double(s.m) * s.n * 2.0;
  const double dram_slabs = compulsory / flops * (2.0 * area * cfg.block_k) / kSlabBytes;
  const double load = c.load_cost * (l2_slabs + c.dram_weight * dram_slabs);
  const double q = c.overlap_sharpness;
  const double t_k = std::pow(std::pow(math, q) + std::pow(load, q), 1.0 / q);

  // A cluster's work item also pays its coupling once (the pair's pipelines fill together): it shows where items
  // are short, as decode's split-K makes them.
  const double item_overhead = c.item_overhead_ktiles + (cluster > 1 ? c.cluster_item_overhead_ktiles : 0.0);
  p.time = waves * (double(tif) * double(per_split) + item_overhead) * t_k;
  if (small_grid > 0) {
    // Every tile's k-iterations spread evenly over the clusters, plus the fix-up.
    p.time = (double(small_grid) * double(k_tiles) / double(slots) * c.stream_k_small_grid_slowdown +
              item_overhead + stream_k_price_ktiles(cfg.block_m, cfg.block_n)) * t_k;
    return p;
  }
  const int shared = cfg.stream_k && p.splits == 1 && tif == 1
                         ? stream_k_tiles(p.work_items, int(slots), int(k_tiles), cfg.block_m, cfg.block_n)
                         : 0;
  if (shared > 0) {
    // The last wave's idle part is shared out: the data-parallel waves, then the shared tiles' k-iterations
    // spread evenly (at the stream-K phase's own rate), plus the fix-up.
    const double dp_waves = (double(p.work_items) - shared) / double(concurrent);
    p.time = (dp_waves * (double(k_tiles) + item_overhead) +
              double(shared) / double(concurrent) *
                  (double(k_tiles) * c.stream_k_slowdown + item_overhead) +
              stream_k_price_ktiles(cfg.block_m, cfg.block_n)) * t_k;
  }
  if (p.splits > 1) {
    // Partials written and read back in fp32, the output written once (bf16).
    const double bytes = double(s.m) * s.n * s.batch * (8.0 * p.splits + 2.0);
    p.time += c.splitk_cost_per_mb * bytes / 1e6;
  }
  return p;
}

std::size_t pick_argmin(const PickShape& shape, const std::string& dtype, const std::vector<PickConfig>& configs,
                        const PickConstants& constants, int sms) {
  if (configs.empty()) throw std::invalid_argument("pick_argmin: no configurations");
  std::size_t best = 0;
  double best_time = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const double t = predict_pick(shape, dtype, configs[i], constants, sms).time;
    if (i == 0 || t < best_time) {
      best = i;
      best_time = t;
    }
  }
  return best;
}

PickConfig pick_config_from_json(const nlohmann::json& j) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key))
      throw std::invalid_argument(std::string("configuration without '") + key + "': " + j.dump());
    return j[key];
  };
  PickConfig c;
  c.name = need("name").get<std::string>();
  const auto& tile = need("tile");
  const auto& cluster = need("cluster");
  if (!tile.is_array() || tile.size() != 3 || !cluster.is_array() || cluster.size() != 2)
    throw std::invalid_argument("configuration " + c.name + ": expected tile [bm, bn, bk] and cluster [cm, cn]");
  c.block_m = tile[0].get<int>();
  c.block_n = tile[1].get<int>();
  c.block_k = tile[2].get<int>();
  c.cluster_m = cluster[0].get<int>();
  c.cluster_n = cluster[1].get<int>();
  const auto split = j.value("split_k", nlohmann::json(0));
  c.split_k = split.is_number_integer() ? split.get<int>() : 0;   // "auto" = 0
  c.schedule = j.value("schedule", std::string("cooperative"));
  if (c.schedule != "cooperative" && c.schedule != "pingpong")
    throw std::invalid_argument("configuration " + c.name + ": schedule '" + c.schedule +
                                "' (expected cooperative or pingpong)");
  c.tiles_in_flight_per_cta = c.schedule == "pingpong" ? 2 : 1;
  c.stream_k = j.value("stream_k", false);
  c.promotion_interval = j.value("promotion_interval", 1);
  c.promotion_stagger = j.value("promotion_stagger", 0);   // absent before 2026-11-26's staggered configurations
  c.slots = j.value("co_resident_clusters", 0);   // absent in records written before 2026-11-26
  c.stream_k_small_grid = j.value("stream_k_small_grid", false);   // likewise: those `_sk` records split K there
  c.a_box_trim = j.value("a_box_trim", false);   // absent before 2026-11-26's step 30 (the fit reads the record's kernel)
  return c;
}

}  // namespace aispflow::kernels
