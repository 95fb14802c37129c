// ours.cluster's work order (kernels/common/work_schedule.hpp) walked on the CPU for every cluster of a grid:
// every k-iteration of every tile is done exactly once, each shared tile has one owner that waits for exactly the
// clusters that contributed to it, and running the waits to completion never deadlocks; for the data-parallel
// phase, the rasterization visits every tile once. The stream-K regimes are the last wave's (the last R + C tiles)
// and the small grid's (every tile, more clusters than tiles: decode). A grid with an empty k-range is fed to the
// same checks and must be caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/common/gemm_pick_model.hpp"
#include "kernels/common/work_schedule.hpp"

namespace aispflow::kernels {
namespace {

struct Params {
  int batch = 1, cm_tiles = 1, cn_tiles = 1, raster_group = 8, raster_along_n = 0;
  int total_work = 0, sk_tiles = 0, k_tiles = 1, k_tiles_per_split = 1;
  WorkDivisors divisors;
};

Params grid(int batch, int cm_tiles, int cn_tiles, int k_tiles, int splits = 1, int sk_tiles = 0, int raster = 8,
            bool along_n = false) {
  Params p;
  p.raster_along_n = along_n ? 1 : 0;
  p.batch = batch;
  p.cm_tiles = cm_tiles;
  p.cn_tiles = cn_tiles;
  p.raster_group = raster;
  p.k_tiles = k_tiles;
  p.k_tiles_per_split = (k_tiles + splits - 1) / splits;
  p.total_work = splits * batch * cm_tiles * cn_tiles;
  p.sk_tiles = sk_tiles;
  // (Bands across N: the host prepares the divisors with the two tile counts swapped, as bind() does.)
  p.divisors = along_n ? WorkDivisors::of(batch, cn_tiles, cm_tiles, raster) : WorkDivisors::of(batch, cm_tiles, cn_tiles, raster);
  return p;
}

using TileKey = std::tuple<int, int, int, int>;   // split, batch, cm, cn
TileKey key(const WorkTile& t) { return {t.split, t.batch, t.cm, t.cn}; }

// Every cluster's units, in the order of their places: `place` maps launch index to place (a permutation, as in
// GPC order; empty: launch order). The kernel builds each cluster's schedule from its place.
std::vector<std::vector<WorkUnit>> walk(const Params& p, int clusters, const std::vector<int>& place = {}) {
  std::vector<std::vector<WorkUnit>> units(static_cast<std::size_t>(clusters));
  for (int c = 0; c < clusters; ++c) {
    // (Indexed by place, the id that stream-K's slots and flags use; a repeated place leaves another one empty.)
    const int id = place.empty() ? c : place[std::size_t(c)];
    WorkSchedule<Params> schedule(p, id, clusters);
    WorkUnit u;
    units[std::size_t(id)].clear();
    while (schedule.next(u)) units[std::size_t(id)].push_back(u);
  }
  return units;
}

// Executes the units as the kernel would, one cluster step at a time: an owner with contributors waits until each
// of them has written its flag. Returns "" when every cluster finishes, else what is stuck.
std::string run_to_completion(const std::vector<std::vector<WorkUnit>>& units) {
  const std::size_t clusters = units.size();
  std::vector<std::size_t> next(clusters, 0);
  std::set<int> flags;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t c = 0; c < clusters; ++c) {
      while (next[c] < units[c].size()) {
        const WorkUnit& u = units[c][next[c]];
        bool ready = true;
        for (int f = u.first_contributor; f < u.first_contributor + u.contributors; ++f) ready &= flags.count(f) > 0;
        if (!ready) break;
        if (u.contribute_slot >= 0) flags.insert(u.contribute_slot);
        ++next[c];
        progress = true;
      }
    }
  }
  for (std::size_t c = 0; c < clusters; ++c)
    if (next[c] < units[c].size())
      return "cluster " + std::to_string(c) + " waits at unit " + std::to_string(next[c]) + " of " +
             std::to_string(units[c].size());
  return "";
}

// Every invariant the kernel relies on; "" when all hold, else the first that does not.
std::string check(const Params& p, int clusters, const std::vector<int>& place = {}) {
  const auto units = walk(p, clusters, place);
  std::map<TileKey, std::vector<int>> done;   // per tile: how often each k-tile was computed
  std::map<TileKey, std::set<int>> contributed;
  std::map<TileKey, std::set<int>> waited_for;
  std::map<TileKey, int> owners;
  for (int c = 0; c < clusters; ++c) {
    const auto& list = units[std::size_t(c)];
    bool owned_before = false;
    int contributions = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const WorkUnit& u = list[i];
      if (u.has_next != (i + 1 < list.size())) return "has_next wrong on cluster " + std::to_string(c);
      if (u.k_begin < 0 || u.k_end > p.k_tiles || u.k_begin >= u.k_end) return "an empty or out-of-range unit";
      auto& ks = done[key(u.t)];
      ks.resize(std::size_t(p.k_tiles), 0);
      for (int k = u.k_begin; k < u.k_end; ++k) ++ks[std::size_t(k)];
      if (u.contribute_slot >= 0) {
        if (u.contribute_slot != c) return "a contribution to another cluster's slot";
        if (owned_before) return "cluster " + std::to_string(c) + " contributes after owning: it could wait first";
        if (++contributions > 1) return "two contributions from one cluster (one slot each)";
        contributed[key(u.t)].insert(c);
      } else if (u.contributors > 0) {
        owned_before = true;
        if (u.k_begin != 0) return "an owner that does not start at the tile's first k-tile";
        ++owners[key(u.t)];
        for (int f = u.first_contributor; f < u.first_contributor + u.contributors; ++f) {
          if (f <= c) return "an owner waiting on itself or an earlier cluster";
          waited_for[key(u.t)].insert(f);
        }
      }
    }
  }
  // Every k-tile of every work item, exactly once (splits cover their own ranges).
  for (int w = 0; w < p.total_work; ++w) {
    const WorkTile t = decode_work(p, w);
    const auto it = done.find(key(t));
    if (it == done.end()) return "work item " + std::to_string(w) + " never visited";
    const int k0 = t.split * p.k_tiles_per_split, k1 = std::min(p.k_tiles, k0 + p.k_tiles_per_split);
    for (int k = 0; k < p.k_tiles; ++k) {
      const int want = (k >= k0 && k < k1) ? 1 : 0;
      if (it->second[std::size_t(k)] != want)
        return "work item " + std::to_string(w) + " k-tile " + std::to_string(k) + " computed " +
               std::to_string(it->second[std::size_t(k)]) + " times";
    }
  }
  if (int(done.size()) != p.total_work) return "visited tiles that are not work items";
  for (const auto& [tile, who] : contributed) {
    if (owners[tile] != 1) return "a shared tile with " + std::to_string(owners[tile]) + " owners";
    if (waited_for[tile] != who) return "an owner waits for other clusters than those that contributed";
  }
  return run_to_completion(units);
}

TEST(WorkSchedule, DataParallelVisitsEveryTileOnceInAnyRasterAndSplit) {
  for (bool along_n : {false, true})
    for (int raster : {1, 3, 8})
      for (int splits : {1, 3})
        for (int clusters : {1, 7, 66, 132}) {
          const Params p = grid(2, 11, 5, 12, splits, 0, raster, along_n);
          EXPECT_EQ(check(p, clusters), "") << "raster " << raster << " splits " << splits << " clusters " << clusters
                                            << (along_n ? " bands across N" : "");
        }
}

// GPC order (NOTES.md step 127): the clusters take their work by place. Any permutation of places must still visit
// every item once, with or without stream-K, and keep stream-K free of deadlock; a table that repeats a place must
// not pass.
TEST(WorkSchedule, PlacesInAnyOrderVisitEveryTileOnce) {
  for (int clusters : {7, 64, 66}) {
    std::vector<int> reversed(static_cast<std::size_t>(clusters)), strided(reversed.size());
    for (int c = 0; c < clusters; ++c) {
      reversed[std::size_t(c)] = clusters - 1 - c;
      strided[std::size_t(c)] = (c % 8) * ((clusters + 7) / 8) + c / 8;   // GPC-like: every 8th cluster together
    }
    if (clusters % 8 != 0) strided = reversed;   // (the strided map is a permutation only for multiples of 8)
    for (const auto& place : {reversed, strided})
      for (const Params& p : {grid(1, 16, 16, 64), grid(2, 11, 5, 12, 3, 0, 3, true), grid(1, 16, 16, 64, 1, 3)}) {
        EXPECT_EQ(check(p, clusters, place), "") << "clusters " << clusters;
      }
  }
  std::vector<int> repeated(66);
  for (int c = 0; c < 66; ++c) repeated[std::size_t(c)] = c;
  repeated[1] = 0;
  EXPECT_NE(check(grid(1, 16, 16, 64), 66, repeated), "");
}

TEST(WorkSchedule, LastWaveStreamKIsExactOwnedOnceAndDeadlockFree) {
  // 4096^3 at 128x256 in 2x1 clusters: 256 cluster tiles on 66 clusters; 3000 x 5000 at 128x192 on 132.
  for (const auto& [p, clusters] : {std::pair{grid(1, 16, 16, 64), 66}, std::pair{grid(1, 24, 27, 32), 132},
                                    std::pair{grid(3, 5, 7, 9), 20}, std::pair{grid(1, 10, 10, 45), 33}}) {
    Params q = p;
    const int rest = q.total_work % clusters;
    q.sk_tiles = std::min(q.total_work, rest + clusters);
    EXPECT_EQ(check(q, clusters), "") << q.total_work << " tiles, " << q.sk_tiles << " shared, " << clusters;
  }
}

TEST(WorkSchedule, SmallGridStreamKSharesEveryTileAmongMoreClustersThanTiles) {
  // Decode: 64 x 2880 x 4096 at 128x128 (23 tiles x 64 k-tiles) on 132 clusters; 64 x 5120 x 2880 at 128x256
  // (20 x 45) on 66 pairs; a single tile over 132 clusters; 4 k-tiles a cluster, the least the rule allows.
  for (const auto& [p, clusters] : {std::pair{grid(1, 1, 23, 64), 132}, std::pair{grid(1, 1, 20, 45), 66},
                                    std::pair{grid(1, 1, 1, 1024), 132}, std::pair{grid(1, 1, 33, 16), 132}}) {
    Params q = p;
    q.sk_tiles = stream_k_small_grid_tiles(q.total_work, q.k_tiles, clusters);
    ASSERT_EQ(q.sk_tiles, q.total_work) << q.total_work << " tiles x " << q.k_tiles << " on " << clusters;
    EXPECT_EQ(check(q, clusters), "") << q.total_work << " tiles x " << q.k_tiles << " on " << clusters;
  }
}

// The check can fail: with more clusters than k-iterations some ranges are empty, and an owner counts an empty
// range that never writes its flag as a contributor. The rule refuses that grid; fed to the schedule anyway, the
// walk deadlocks and the check says so.
TEST(WorkSchedule, AnEmptyRangeIsRefusedByTheRuleAndCaughtByTheCheck) {
  Params p = grid(1, 1, 3, 20);   // 60 k-iterations
  EXPECT_EQ(stream_k_small_grid_tiles(p.total_work, p.k_tiles, 132), 0);
  EXPECT_EQ(stream_k_small_grid_tiles(p.total_work, p.k_tiles, 15), 3);   // exactly 4 a cluster
  p.sk_tiles = p.total_work;
  const std::string verdict = check(p, 132);
  EXPECT_NE(verdict.find("waits"), std::string::npos) << verdict;
  EXPECT_EQ(check(p, 15), "");
}

// How often `f`, prepared for divisor d, disagrees with the hardware's division on the values where a rounded
// reciprocal goes wrong first (around multiples of d, and up to 2^31 - 1) and on random ones; the first few
// disagreements are reported as failures when `report` is set.
long division_mismatches(const FastDivisor& f, int d, std::mt19937& rng, bool report) {
  std::vector<std::int64_t> ns = {0, 1, d - 1, d, d + 1, 2147483647, 2147483646, 2147483647 - d};
  const std::int64_t top = 2147483647 / d;   // the largest quotient
  for (std::int64_t q : {std::int64_t(1), std::int64_t(2), top / 2, top - 1, top})
    for (std::int64_t off : {-1, 0, 1}) ns.push_back(q * d + off);
  for (int i = 0; i < 64; ++i) ns.push_back(std::uniform_int_distribution<std::int64_t>(0, 2147483647)(rng));
  long mismatches = 0;
  for (const std::int64_t n : ns) {
    if (n < 0 || n > 2147483647) continue;
    if (f.div(int(n)) != int(n / d) && ++mismatches < 5 && report)
      ADD_FAILURE() << n << " / " << d << ": " << f.div(int(n)) << ", not " << n / d;
  }
  return mismatches;
}

std::vector<int> divisors_to_check() {
  std::vector<int> divisors;
  for (int d = 1; d <= 3000; ++d) divisors.push_back(d);
  for (int d : {4095, 4096, 4097, 65535, 65536, 65537, (1 << 30) - 1, 1 << 30, (1 << 30) + 1, 2147483646, 2147483647})
    divisors.push_back(d);
  return divisors;
}

// FastDivisor against the hardware's division: every divisor up to 3000 and the largest ones.
TEST(FastDivisor, MatchesIntegerDivisionOverTheWholeRange) {
  std::mt19937 rng(7);
  long mismatches = 0;
  for (const int d : divisors_to_check()) mismatches += division_mismatches(FastDivisor::of(d), d, rng, true);
  EXPECT_EQ(mismatches, 0);
}

// The check above can fail: the classic mistakes, a multiplier rounded down instead of up and a shift one short,
// disagree with the hardware on every divisor that is not a power of two, and the values it tries find them.
TEST(FastDivisor, ARoundedDownOrShortShiftedReciprocalIsCaught) {
  std::mt19937 rng(7);
  for (const int d : divisors_to_check()) {
    if ((d & (d - 1)) == 0) continue;   // powers of two: the reciprocal is exact either way
    FastDivisor rounded_down = FastDivisor::of(d);
    rounded_down.mul -= 1;              // floor(2^s / d): d is not a power of two, so the ceiling was 1 above it
    EXPECT_GT(division_mismatches(rounded_down, d, rng, false), 0) << "rounded down, d = " << d;
    FastDivisor short_shift = FastDivisor::of(d);
    short_shift.shift -= 1;
    EXPECT_GT(division_mismatches(short_shift, d, rng, false), 0) << "shift one short, d = " << d;
  }
}

// decode_work's order is the plain-division rasterization it replaced (bands of raster_group cluster-rows, each
// walked column by column; the last band keeps what is left of the rows), for every work item of many grids; with
// raster_along_n, the same with rows and columns exchanged (bands of cluster-columns walked row by row). The
// comparison can fail: divisors prepared for another raster band, or for the other direction, give another order,
// and it sees that.
WorkTile reference_decode(const Params& p, int w) {
  if (p.raster_along_n) {
    Params transposed = p;
    std::swap(transposed.cm_tiles, transposed.cn_tiles);
    transposed.raster_along_n = 0;
    WorkTile t = reference_decode(transposed, w);
    std::swap(t.cm, t.cn);
    return t;
  }
  const int per_split = p.batch * p.cm_tiles * p.cn_tiles, per_batch = p.cm_tiles * p.cn_tiles;
  WorkTile t;
  t.split = w / per_split;
  int rest = w % per_split;
  t.batch = rest / per_batch;
  rest %= per_batch;
  const int band = p.raster_group * p.cn_tiles;
  const int first = (rest / band) * p.raster_group;
  const int rows = std::min(p.raster_group, p.cm_tiles - first);
  const int local = rest % band;
  t.cm = first + local % rows;
  t.cn = local / rows;
  return t;
}

int decode_mismatches(const Params& p) {
  int bad = 0;
  for (int w = 0; w < p.total_work; ++w) bad += key(decode_work(p, w)) != key(reference_decode(p, w));
  return bad;
}

TEST(WorkSchedule, DecodeMatchesThePlainDivisionOrder) {
  for (int batch : {1, 3})
    for (int cm : {1, 2, 7, 8, 9, 16, 33, 64})
      for (int cn : {1, 5, 23, 64})
        for (int raster : {1, 2, 3, 8, 16})
          for (int splits : {1, 2, 5})
            for (bool along_n : {false, true})
              EXPECT_EQ(decode_mismatches(grid(batch, cm, cn, 10, splits, 0, raster, along_n)), 0)
                  << "batch " << batch << " cm " << cm << " cn " << cn << " raster " << raster << " splits " << splits
                  << (along_n ? " bands across N" : "");
  Params wrong = grid(2, 33, 23, 10, 2, 0, 8);
  wrong.divisors = WorkDivisors::of(2, 33, 23, 4);   // prepared for bands of 4
  EXPECT_GT(decode_mismatches(wrong), 0);
  Params unswapped = grid(2, 33, 23, 10, 2, 0, 8, true);
  unswapped.divisors = WorkDivisors::of(2, 33, 23, 8);   // bands across N with the divisors of bands across M
  EXPECT_GT(decode_mismatches(unswapped), 0);
}

// GPC order's balanced bands (NOTES.md step 130): the widths step 128 measured, and for every base and extent a
// width in [base, 2 base) whose last band no other width there fills better.
TEST(BalancedBands, TheMeasuredShapesGetTheirFastestWidth) {
  EXPECT_EQ(balanced_band_width(8, 12), 12);   // N = 2880, 128 x 256 2x1: one band, not 8 + 4
  EXPECT_EQ(balanced_band_width(8, 16), 8);    // 4096: 8 + 8, not one band of 16
  EXPECT_EQ(balanced_band_width(8, 32), 8);    // 8192
  EXPECT_EQ(balanced_band_width(8, 20), 10);   // 5120: 10 + 10 where fixed bands made 8 + 8 + 4
  EXPECT_EQ(balanced_band_width(16, 23), 23);  // fp8 128 x 128 at N = 2880 on a base of 16
  EXPECT_EQ(balanced_band_width(8, 5), 8);     // fewer columns than a band: one band, the base kept
  EXPECT_EQ(balanced_band_width(8, 8), 8);
}

TEST(BalancedBands, NoWidthInRangeLeavesAFullerLastBand) {
  auto fullness = [](int width, int extent) { return double(extent % width == 0 ? width : extent % width) / width; };
  for (int base = 1; base <= 32; ++base)
    for (int extent = base + 1; extent <= 600; ++extent) {
      const int w = balanced_band_width(base, extent);
      ASSERT_GE(w, base) << base << " " << extent;
      ASSERT_LT(w, 2 * base) << base << " " << extent;
      for (int other = base; other < 2 * base; ++other)
        ASSERT_LE(fullness(other, extent), fullness(w, extent) + 1e-12) << base << " " << extent << " " << other;
    }
}

}  // namespace
}  // namespace aispflow::kernels
