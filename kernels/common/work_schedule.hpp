#pragma once
// The order in which ours.cluster's persistent clusters take their work (kernels/cuda/ours/hopper_gemm.cuh): the
// rasterized data-parallel tiles, then stream-K's shared k-iterations. Host-and-device, and templated on the
// parameter block (HopperParams on the GPU), so that a plain unit test can walk every cluster's sequence on the
// CPU and check what the kernel relies on: each k-iteration of each tile is done once, every shared tile has one
// owner, and no wait can close a cycle (tests/unit/test_work_schedule.cpp).
//
// Params needs: batch, cm_tiles, cn_tiles, raster_group, raster_along_n, total_work, sk_tiles, k_tiles,
// k_tiles_per_split, and `divisors` (WorkDivisors::of the first four).
#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace aispflow::kernels {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 as one 32 x 32 -> 64-bit multiply and a shift. The GPU has no integer
// divider: a division by a run-time value is ~25 instructions in a dependent chain (I2F, MUFU.RCP, F2I, fix-ups), and
// decode_work made four of them per work unit, on the consumers' critical path between one tile's epilogue and the
// next tile's mainloop: ~0.5 us a tile with the tensor pipe idle (NOTES.md step 80's per-tile timeline).
// The multiplier is Granlund and Montgomery's rounded-up reciprocal: with s = 31 + ceil(log2 d) and
// m = ceil(2^s / d) (< 2^32), m d = 2^s + e with 0 <= e < d, so n m / 2^s = n / d + n e / (d 2^s), and
// n e / 2^s < 2^31 d / 2^s <= 1: the excess never carries floor(n / d) to the next integer.
struct FastDivisor {
  int d = 1;
  std::uint32_t mul = 1u << 31;   // ceil(2^shift / d)
  std::uint32_t shift = 31;       // 31 + ceil(log2 d)
  static FastDivisor of(int divisor) {
    FastDivisor f;
    f.d = divisor < 1 ? 1 : divisor;   // tile counts, >= 1 for any shape verify accepts; never a division by 0
    int log2_ceil = 0;
    while ((std::int64_t(1) << log2_ceil) < f.d) ++log2_ceil;
    f.shift = std::uint32_t(31 + log2_ceil);
    f.mul = std::uint32_t(((std::uint64_t(1) << f.shift) + std::uint64_t(f.d) - 1) / std::uint64_t(f.d));
    return f;
  }
  AISPFLOW_HOST_DEVICE int div(int n) const {
    return int((std::uint64_t(std::uint32_t(n)) * mul) >> shift);
  }
};

// The divisions decode_work makes, prepared once on the host (rows: a band's cluster-rows; the last band has only
// what is left of cm_tiles, which last_rows divides by).
struct WorkDivisors {
  FastDivisor per_split, per_batch, band, rows, last_rows;
  static WorkDivisors of(int batch, int cm_tiles, int cn_tiles, int raster_group) {
    WorkDivisors v;
    v.per_split = FastDivisor::of(batch * cm_tiles * cn_tiles);
    v.per_batch = FastDivisor::of(cm_tiles * cn_tiles);
    v.band = FastDivisor::of(raster_group * cn_tiles);
    v.rows = FastDivisor::of(raster_group);
    const int left = cm_tiles % raster_group;
    v.last_rows = FastDivisor::of(left == 0 ? raster_group : left);
    return v;
  }
};

// The band width of GPC order's bands (HopperConfig::balanced_bands, NOTES.md step 130): of the widths from `base`
// to 2 * base - 1, the one whose last band is fullest (a width that divides `extent` leaves no short band; ties go
// to the narrower). Fixed bands of `base` leave a short last band wherever base does not divide the extent
// (12 cluster-columns in bands of 8: 8 + 4), and the clusters that walk it share less of the operand their GPC-mates
// read: at N = 2880 one band of 12 measured 1-1.5 % faster than 8 + 4, where at 16 columns bands of 8 beat one of 16
// (step 128). An extent of at most `base` keeps `base` (one band either way).
inline int balanced_band_width(int base, int extent) {
  if (base < 1) base = 1;
  if (extent <= base) return base;
  int best = base, best_last = extent % base == 0 ? base : extent % base;
  for (int width = base + 1; width < 2 * base; ++width) {
    const int last = extent % width == 0 ? width : extent % width;
    if (std::int64_t(last) * best > std::int64_t(best_last) * width) {   // last / width > best_last / best
      best = width;
      best_last = last;
    }
  }
  return best;
}

// Work item -> (split, batch, cluster row, cluster column), rasterized in bands of `raster_group` cluster-rows,
// each band walked column by column, or (raster_along_n) in bands of cluster-columns, walked row by row.
struct WorkTile {
  int split, batch, cm, cn;
};

template <class Params>
AISPFLOW_HOST_DEVICE inline WorkTile decode_work(const Params& p, int w) {
  const WorkDivisors& v = p.divisors;
  WorkTile t;
  t.split = v.per_split.div(w);
  int rest = w - t.split * v.per_split.d;
  t.batch = v.per_batch.div(rest);
  rest -= t.batch * v.per_batch.d;
  const int band = v.band.div(rest);
  const int first = band * p.raster_group;
  const int local = rest - band * v.band.d;
  // Bands across M (cluster-rows, the default) or across N (p.raster_along_n: cluster-columns; the host's divisors
  // are then WorkDivisors::of(batch, cn_tiles, cm_tiles, ...)).
  const bool along_n = p.raster_along_n != 0;
  const bool full_band = first + p.raster_group <= (along_n ? p.cn_tiles : p.cm_tiles);
  // Chosen field by field: choosing a reference to either struct instead changed the SASS of every kernel
  // (bench/tools/sass_diff.sh), unmeasured; this form is the one NOTES.md step 80 timed.
  const FastDivisor rows{full_band ? v.rows.d : v.last_rows.d, full_band ? v.rows.mul : v.last_rows.mul,
                         full_band ? v.rows.shift : v.last_rows.shift};
  const int along = rows.div(local);                // position along the band
  const int across = first + local - along * rows.d;  // row (or column) of the band
  t.cm = along_n ? along : across;
  t.cn = along_n ? across : along;
  return t;
}

// One unit of a cluster's work: k-tiles [k_begin, k_end) of tile `t`, and what to do with the result.
struct WorkUnit {
  WorkTile t;
  int k_begin = 0, k_end = 0;
  int contribute_slot = -1;     // stream-K: >= 0: a partial tile, written to this cluster's slot, not stored
  int first_contributor = 0;    // stream-K owner: clusters [first, first + count) hold the rest of the tile
  int contributors = 0;
  bool has_next = false;        // another unit follows on this cluster
};

// The sequence of units a cluster works on; the kernel's producer and consumers walk the same one.
// Data-parallel phase: whole work items w = cluster_id, cluster_id + clusters, ... below dp_work. cluster_id is the
// cluster's place in the order: its launch index, or its place in GPC order (kernels/common/cluster_places.hpp), in
// both phases (NOTES.md step 127: GPC order's partial last wave and stream-K ranges ran 1-7 % slower by launch index).
// Stream-K phase (p.sk_tiles > 0: the last sk_tiles tiles, which would otherwise leave the last wave partly empty,
// or every tile of a grid they cannot fill): their sk_tiles x k_tiles k-iterations are cut into `clusters` equal
// contiguous ranges, one per cluster. A range crosses tile boundaries: the piece of a tile that does not start at
// the tile's first k-tile is a contribution (fp32 partial, written to the cluster's slot, flagged); the piece that
// does is the owner's, which waits for the flags of the clusters that continue the tile, adds their partials and
// runs the epilogue. A cluster's contribution is always the first piece of its range and ownership always comes
// later, so every wait is on a unit that its cluster reaches without waiting: no cycle, provided every cluster is
// co-resident (a persistent grid) and no range is empty (the host keeps sk_tiles x k_tiles >= clusters; an empty
// range inside a tile would be counted as a contributor that never writes).
template <class Params>
struct WorkSchedule {
  const Params& p;
  int cluster_id, clusters;
  int w;                        // next data-parallel item
  int pos, end;                 // this cluster's stream-K range of k-iterations (tile-major, k-minor); the host
                                // keeps sk_tiles x k_tiles below 2^31

  AISPFLOW_HOST_DEVICE WorkSchedule(const Params& params, int id, int count)
      : p(params), cluster_id(id), clusters(count), w(id), pos(range_begin(id)), end(range_begin(id + 1)) {}
  AISPFLOW_HOST_DEVICE int dp_work() const { return p.total_work - p.sk_tiles; }
  // (No stream-K: no 64-bit division, which every thread of the kernel would pay at its start.)
  AISPFLOW_HOST_DEVICE int range_begin(int c) const {
    return p.sk_tiles == 0 ? 0 : int(std::int64_t(p.sk_tiles) * p.k_tiles * c / clusters);
  }

  AISPFLOW_HOST_DEVICE bool next(WorkUnit& u) {
    if (w < dp_work()) {
      u.t = decode_work(p, w);
      u.k_begin = u.t.split * p.k_tiles_per_split;
      u.k_end = u.k_begin + p.k_tiles_per_split < p.k_tiles ? u.k_begin + p.k_tiles_per_split : p.k_tiles;
      u.contribute_slot = -1;
      u.contributors = 0;
      w += clusters;
      u.has_next = w < dp_work() || pos < end;
      return true;
    }
    if (pos >= end) return false;
    const int q = pos / p.k_tiles;                      // stream-K tile
    u.t = decode_work(p, dp_work() + q);
    u.k_begin = pos - q * p.k_tiles;
    u.k_end = u.k_begin + (end - pos) < p.k_tiles ? u.k_begin + (end - pos) : p.k_tiles;
    u.contribute_slot = u.k_begin > 0 ? cluster_id : -1;
    u.contributors = 0;
    if (u.k_begin == 0 && u.k_end < p.k_tiles) {
      // The clusters whose ranges start inside this tile's remaining k-iterations.
      const int tile_end = (q + 1) * p.k_tiles;
      u.first_contributor = cluster_id + 1;
      int c = cluster_id + 1;
      while (c < clusters && range_begin(c) < tile_end) ++c;
      u.contributors = c - u.first_contributor;
    }
    pos += u.k_end - u.k_begin;
    u.has_next = pos < end;
    return true;
  }
};

}  // namespace aispflow::kernels
