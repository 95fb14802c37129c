// ours.cluster's default pick (kernels/common/gemm_pick_model.hpp) against the committed H100 autotune
// evidence, and the model's direction on synthetic shapes. No GPU: the evidence is the records' candidate times.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/gemm_pick_fit.hpp"

namespace aispflow::kernels {
namespace {

const std::string kEvidenceDir = std::string(AISPFLOW_SOURCE_DIR) + "/bench/results/h100";

PickConfig config(int bn, int cm, int cn, int bk = 64) {
  PickConfig c;
  c.name = "128x" + std::to_string(bn) + "_c" + std::to_string(cm) + "x" + std::to_string(cn);
  c.block_n = bn;
  c.block_k = bk;
  c.cluster_m = cm;
  c.cluster_n = cn;
  return c;
}

// Records whose pick is known to miss 3% with the committed constants (their path under bench/results/h100 and
// case), each with the ratio it must still reach: the measured gap, a little rounded down (docs/kernels.md lists
// them). A record that misses and is not listed fails the test (re-fit with bench/tools/fit_pick_model --fit, or
// list it here with its gap and say so in docs/kernels.md), and so does a listed one that falls below its floor.
// Misses of the committed constants with step 136's primed interleaved samples (run-bdadb1c, held out; the
// constants were fitted on earlier runs of the same kernel, gemm_pick_fit.cpp), on step 143's kernel (run-6b87410,
// held out) and on step 145's (run-bb21035, held out). Of the 43 records of the two workflows the issue names, one
// misses (run-6b87410's square_4096 bf16 nt).
const std::map<std::string, double> kKnownMisses = {
    // fp8 3000 x 5000 x 2001: 128x192 promote8 without a cluster picked, a 2x1 pair wins by 3.6-5.9 % (the same
    // miss in every run since step 80; in run-8cb4315, now archived, the winner was a stream-K pair, compared in
    // screening; run-018f591's, 0.948, is archived too).
    {"issue22/run-bdadb1c/unaligned/run/nodes/fp8/artifact.json: m3000_n5000_k2001 fp8_e4m3 nt none", 0.935},
    {"issue22/run-6b87410/unaligned/run/nodes/fp8/artifact.json: m3000_n5000_k2001 fp8_e4m3 nt none", 0.95},
    // Step 143's kernel (run-6b87410, held out): a 2x1 pair of 128 x 64 tiles now wins the 1000 x 1000 rows in
    // layout nn, where the model keeps the lone tile (0.929 and 0.966 of the winner), and square_4096 bf16 nt went
    // to a stream-K pair in screening, the pick at 0.961 of it (within 3 % in rerun-6b87410).
    {"issue22/run-6b87410/unaligned/run/nodes/aligned/artifact.json: m1000_n1000_k1008 bf16 nn none", 0.92},
    {"issue22/run-6b87410/unaligned/run/nodes/bf16/artifact.json: m1000_n1000_k1001 bf16 nn none", 0.96},
    {"issue22/run-6b87410/kernel_selector/run/nodes/select/artifact.json: square_4096 bf16 nt none", 0.955},
    // Step 145's kernel (run-bb21035, held out): the same two unaligned.yaml misses, nothing else.
    {"issue22/run-bb21035/unaligned/run/nodes/fp8/artifact.json: m3000_n5000_k2001 fp8_e4m3 nt none", 0.935},
    {"issue22/run-bb21035/unaligned/run/nodes/aligned/artifact.json: m1000_n1000_k1008 bf16 nn none", 0.945},
};

// The records the model is held to: those of the kernel it picks for (h100_pick_evidence_runs()).
std::vector<PickEvidence> evidence() { return read_h100_pick_evidence(kEvidenceDir); }

// A record's source without the checkout's own path: what kKnownMisses names.
std::string relative_source(const std::string& source) {
  return source.rfind(kEvidenceDir + "/", 0) == 0 ? source.substr(kEvidenceDir.size() + 1) : source;
}

// Every way `evidence` fails the pick target under `constants`: a record whose pick is below 3 % of its winner
// (below its floor, where `known` lists it), a record with no round that timed both, and a `known` entry that
// names no record. Prints each record's pick.
std::vector<std::string> pick_failures(const std::vector<PickEvidence>& evidence, const PickConstants& constants,
                                       const std::map<std::string, double>& known) {
  std::vector<std::string> failures;
  int within = 0;
  double worst = 1;
  std::set<std::string> listed_found;
  for (const auto& e : evidence) {
    const PickOutcome o = evaluate_pick(e, constants);
    if (!o.round) {
      failures.push_back(e.source + ": no round timed both the pick and the winner");
      continue;
    }
    within += o.ratio() >= 0.97 ? 1 : 0;
    worst = std::min(worst, o.ratio());
    std::printf("%s: pick %s, winner %s, %s ratio %.3f\n", e.source.c_str(), e.candidates[o.pick].config.name.c_str(),
                e.candidates[e.winner].config.name.c_str(), o.round->round.c_str(), o.ratio());
    const auto listed = known.find(relative_source(e.source));
    if (listed != known.end()) listed_found.insert(listed->first);
    const double floor = listed == known.end() ? 0.97 : listed->second;
    if (o.ratio() < floor)
      failures.push_back(e.source + ": the model picks " + e.candidates[o.pick].config.name + ", the winner is " +
                         e.candidates[e.winner].config.name + " (ratio " + std::to_string(o.ratio()) +
                         " below " + std::to_string(floor) + ")");
  }
  std::printf("%d of %zu records within 3%%; worst ratio %.3f\n", within, evidence.size(), worst);
  for (const auto& [source, floor] : known)
    if (!listed_found.count(source)) failures.push_back("a listed miss names no committed record: " + source);
  return failures;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(GemmPickModel, EveryCommittedAutotunePickWithin3PercentOfTheWinner) {
  const auto records = evidence();
  // 61 records a run (its cluster_gemm, kernel_selector and unaligned), for each of h100_pick_evidence_runs().
  ASSERT_GE(records.size(), 61 * h100_pick_evidence_runs().size())
      << "the committed autotune evidence was not found under " << kEvidenceDir;
  const auto failures = pick_failures(records, h100_pick_constants(), kKnownMisses);
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

// The known-miss list can fail the test both ways: a record listed with a floor above its ratio fails, one listed
// at or below its ratio passes; and an entry that names no record fails (a renamed file cannot silently unlist a
// miss). Shown on the record whose pick is furthest from its winner.
TEST(GemmPickModel, KnownMissesAreHeldToTheirFloorsAndMustExist) {
  const auto records = evidence();
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(pick_failures(records, h100_pick_constants(), kKnownMisses).size(), 0u);
  EXPECT_EQ(pick_failures(records, h100_pick_constants(), {}).size(), kKnownMisses.size());
  const PickEvidence* worst = nullptr;
  double worst_ratio = 2;
  for (const auto& e : records)
    if (const double r = evaluate_pick(e, h100_pick_constants()).ratio(); r < worst_ratio) {
      worst_ratio = r;
      worst = &e;
    }
  ASSERT_LT(worst_ratio, 0.999) << "every pick is its winner: no record to list";
  // The list with one entry set (added, or its floor moved).
  auto listing = [](const std::string& name, double floor) {
    auto known = kKnownMisses;
    known[name] = floor;
    return known;
  };
  const std::string name = relative_source(worst->source);
  const auto above = pick_failures(records, h100_pick_constants(), listing(name, worst_ratio + 0.001));
  ASSERT_EQ(above.size(), 1u) << joined(above);
  EXPECT_NE(above[0].find(worst->source), std::string::npos) << above[0];
  EXPECT_TRUE(pick_failures(records, h100_pick_constants(), listing(name, worst_ratio - 0.01)).empty());
  const auto unknown = pick_failures(records, h100_pick_constants(),
                                     listing("issue22/no-such-run/artifact.json: square_4096 bf16 nt none", 0.9));
  ASSERT_EQ(unknown.size(), 1u) << joined(unknown);
  EXPECT_NE(unknown[0].find("names no committed record"), std::string::npos) << unknown[0];
}

// The check above can fail: with the 128x64 tile priced as fast per FLOP as 128x256 (it is a third as fast), the
// model takes it where it fills the GPU better and the evidence shows it losing.
TEST(GemmPickModel, TheEvidenceCheckCatchesAWrongModel) {
  PickConstants wrong = h100_pick_constants();
  wrong.tile_efficiency_64 = 1.0;
  int misses = 0;
  for (const auto& e : evidence()) misses += evaluate_pick(e, wrong).ratio() < 0.97 ? 1 : 0;
  EXPECT_GE(misses, 2);
}

// The co-resident count of 2x2 clusters decides where 2x2 wins: 3000 x 5000 x 2008 makes 120 cluster tiles, 4 full
// waves of 30-31 (measured: 2x2 6-7 % ahead of 2x1), 4096^3 makes 128, a fifth wave (measured: 2x2 more than 15 %
// behind). Priced as 132 / 4 = 33 slots, the fitted model takes 2x2 at 4096^3 too and the evidence check misses.
TEST(GemmPickModel, TheSlotCountOf2x2ClustersDecidesWhere2x2Wins) {
  const auto& c = h100_pick_constants();
  PickConfig two_by_two = config(256, 2, 2);
  const PickConfig two_by_one = config(256, 2, 1);
  EXPECT_EQ(pick_argmin({3000, 5000, 2008}, "bf16", {two_by_one, two_by_two}, c), 1u);
  EXPECT_EQ(pick_argmin({4096, 4096, 4096}, "bf16", {two_by_one, two_by_two}, c), 0u);
  // A configuration that carries its device's count (co_resident_clusters, in records since 2026-11-26) is
  // priced with it, not with the constant.
  two_by_two.slots = 33;
  EXPECT_EQ(pick_argmin({4096, 4096, 4096}, "bf16", {two_by_one, two_by_two}, c), 1u);

  // The records carry the count; priced with 132 / 4 = 33 slots instead, the model misses on them.
  int misses = 0;
  for (auto e : evidence()) {
    for (auto& candidate : e.candidates)
      if (candidate.config.cluster_m * candidate.config.cluster_n == 4) candidate.config.slots = 33;
    misses += evaluate_pick(e, c).ratio() < 0.97 ? 1 : 0;
  }
  EXPECT_GE(misses, 1);
}

// Tile quantization: at m = 2048, n = 6144 a 128x256 tile makes 384 tiles (2.91 waves of 132) and wins; at
// n = 6336 it makes 400 (3.03 waves: a fourth wave almost empty) while 128x192 makes exactly 528 = 4 waves.
TEST(GemmPickModel, ATileThatSpillsIntoAnotherWaveLosesToOneThatFillsItsWaves) {
  const std::vector<PickConfig> configs = {config(256, 1, 1), config(192, 1, 1)};
  const auto& c = h100_pick_constants();
  EXPECT_EQ(pick_argmin({2048, 6144, 4096, 1}, "bf16", configs, c), 0u);
  EXPECT_EQ(pick_argmin({2048, 6336, 4096, 1}, "bf16", configs, c), 1u);
  const auto spill = predict_pick({2048, 6336, 4096, 1}, "bf16", configs[0], c);
  EXPECT_NEAR(spill.waves, 400.0 / 132.0, 1e-9);
}

TEST(GemmPickModel, FourMoreTilesThanAWaveCostFarMoreThanTheirWork) {
  const PickConfig c = config(256, 1, 1);
  const double full = predict_pick({128 * 12, 256 * 11, 4096, 1}, "bf16", c, h100_pick_constants()).time;   // 132
  const double over = predict_pick({128 * 8, 256 * 17, 4096, 1}, "bf16", c, h100_pick_constants()).time;    // 136
  // 3% more tiles, a second (almost empty) wave: the fit says such a wave costs 0.38 of a full one (its few tiles
  // run with the whole L2 and HBM to themselves), so about 1.4x for 1.03x the work.
  EXPECT_GT(over / full, 1.3);
}

// An MN-major B (bf16, layout nn) is loaded in whole 64-column boxes: a 240-wide tile's stages carry the 256
// columns a 256-wide tile's do, so in nn it costs at least as much as in nt, and more where loads weigh (a 128-row
// box of 16 extra columns per k-tile); tiles of whole boxes cost the same either way.
TEST(GemmPickModel, AnMnMajorBIsPricedInWholeBoxes) {
  const auto& c = h100_pick_constants();
  for (const PickShape s : {PickShape{4096, 2880, 2880, 1}, PickShape{128, 8192, 8192, 1}}) {
    PickShape nn = s;
    nn.b_mn_major = true;
    EXPECT_GT(predict_pick(nn, "bf16", config(240, 1, 1), c).time, predict_pick(s, "bf16", config(240, 1, 1), c).time);
    EXPECT_EQ(predict_pick(nn, "bf16", config(256, 1, 1), c).time, predict_pick(s, "bf16", config(256, 1, 1), c).time);
  }
  EXPECT_TRUE(b_stored_mn_major("nn", false));
  EXPECT_FALSE(b_stored_mn_major("nn", true));   // fp8 in layout nn stores B N x K
  EXPECT_FALSE(b_stored_mn_major("nt", false));
}

TEST(GemmPickModel, ClustersAndTileSizesGoTheExpectedWay) {
  const auto& c = h100_pick_constants();
  // One row of tiles: a 2x1 cluster pairs every tile with an empty one.
  EXPECT_EQ(pick_argmin({64, 8192, 8192, 1}, "bf16", {config(256, 2, 1), config(256, 1, 1)}, c), 1u);
  // A big square, whole waves either way: the wider tile re-reads less per FLOP.
  EXPECT_EQ(pick_argmin({8192, 8192, 8192, 1}, "bf16", {config(128, 1, 1), config(256, 1, 1)}, c), 1u);
  // ... and a 2x1 cluster shares B: worth it for bf16 128x256 (issue22/run-655c061, cluster_gemm, lab_square_8192:
  // 1.371 ms in 2x1 against 1.395 alone), no longer for fp8 128x192, whose lone CTAs keep their L2 locality since
  // NOTES.md step 72 launched them as a plain grid (0.774 ms alone against 0.794 in 2x1; run-1a24669, before,
  // had 0.923 against 0.895).
  EXPECT_EQ(pick_argmin({8192, 8192, 8192, 1}, "bf16", {config(256, 1, 1), config(256, 2, 1)}, c), 1u);
  EXPECT_EQ(pick_argmin({8192, 8192, 8192, 1}, "fp8_e4m3", {config(192, 1, 1, 128), config(192, 2, 1, 128)}, c), 0u);
}

TEST(GemmPickModel, SplitKFollowsTheKernelsAutoRule) {
  // Decode row, 32 tiles of 128x256: about one wave of 132 -> 4 splits; a full GPU of tiles: no split.
  EXPECT_EQ(auto_split_k({128, 8192, 8192, 1}, 128, 256, 64, 132), 4);
  EXPECT_EQ(auto_split_k({4096, 4096, 4096, 1}, 128, 256, 64, 132), 1);
  // Each split keeps >= 4 k-tiles: K = 512 is 8 k-tiles, at most 2 splits.
  EXPECT_EQ(auto_split_k({64, 2048, 512, 1}, 128, 256, 64, 132), 2);
  const auto p = predict_pick({128, 8192, 8192, 1}, "bf16", config(256, 1, 1), h100_pick_constants());
  EXPECT_EQ(p.splits, 4);
  EXPECT_EQ(p.work_items, 4 * 32);
}

// Stream-K's rule (shared by the kernel and the model): on when the last wave leaves more idle time than twice
// the fix-up's price, off when the last wave is nearly full or the ranges would be too short; measured cases.
TEST(GemmPickModel, StreamKEngagesOnlyWhereTheIdleWaveOutweighsTheFixUp) {
  // bf16 4096^3, 128x256 tiles in 2x1 clusters: 256 items on 66 clusters, the last wave 88 % full: the gain
  // (7.7 k-tile-times) is under twice the price (5.3): off (on the H100 sharing was 8 % slower).
  EXPECT_NEAR(stream_k_price_ktiles(128, 256), 2.0 * 128 * 256 * 4 / (384.0 * 128), 1e-12);
  EXPECT_EQ(stream_k_tiles(256, 66, 64, 128, 256), 0);
  // fp8 4096^3, 128x192 tiles without a cluster: 704 items on 132, the last wave 33 % full: the last 44 + 132
  // items are shared (measured 5.6 % faster).
  EXPECT_EQ(stream_k_tiles(704, 132, 32, 128, 192), 44 + 132);
  EXPECT_EQ(stream_k_tiles(660, 132, 32, 128, 192), 0);   // whole waves
  EXPECT_EQ(stream_k_tiles(100, 132, 32, 128, 192), 0);   // under one wave: split-K's domain
  EXPECT_EQ(stream_k_tiles(133, 132, 4, 128, 192), 0);    // ranges of 4 k-tiles: too short to fill the pipeline
  // The model prices it: a stream-K configuration wins where its rule engages and ties (the plain one first)
  // where it does not.
  PickConfig plain = config(192, 1, 1, 128), shared = plain;
  shared.stream_k = true;
  shared.name += "_sk";
  const auto& c = h100_pick_constants();
  EXPECT_EQ(pick_argmin({4096, 4096, 4096, 1}, "fp8_e4m3", {plain, shared}, c), 1u);
  EXPECT_EQ(pick_argmin({4096, 3840, 4096, 1}, "fp8_e4m3", {plain, shared}, c), 0u);   // 32 x 20 = 640: 4.85 waves
  EXPECT_DOUBLE_EQ(predict_pick({4096, 3840, 4096, 1}, "fp8_e4m3", plain, c).time,
                   predict_pick({4096, 3840, 4096, 1}, "fp8_e4m3", shared, c).time);
}

TEST(GemmPickModel, ConfigFromTheProvidersJson) {
  const auto j = nlohmann::json::parse(R"({"name": "128x128x64_pingpong", "tile": [128, 128, 64], "stages": 6,
      "cluster": [2, 1], "persistent": true, "raster_group": 8, "split_k": "auto", "schedule": "pingpong"})");
  const PickConfig c = pick_config_from_json(j);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.cluster_m, 2);
  EXPECT_EQ(c.split_k, 0);
  EXPECT_EQ(c.tiles_in_flight_per_cta, 2);
  auto cooperative = j;
  cooperative.erase("schedule");
  cooperative["split_k"] = 3;
  EXPECT_EQ(pick_config_from_json(cooperative).tiles_in_flight_per_cta, 1);
  EXPECT_EQ(pick_config_from_json(cooperative).split_k, 3);
  EXPECT_FALSE(pick_config_from_json(cooperative).stream_k);
  EXPECT_EQ(pick_config_from_json(cooperative).promotion_interval, 1);
  cooperative["stream_k"] = true;
  cooperative["promotion_interval"] = 4;
  EXPECT_TRUE(pick_config_from_json(cooperative).stream_k);
  EXPECT_EQ(pick_config_from_json(cooperative).promotion_interval, 4);
  EXPECT_EQ(pick_config_from_json(cooperative).slots, 0);
  cooperative["co_resident_clusters"] = 31;
  EXPECT_EQ(pick_config_from_json(cooperative).slots, 31);
  EXPECT_EQ(pick_config_from_json(cooperative).promotion_stagger, 0);
  cooperative["promotion_stagger"] = 2;
  EXPECT_EQ(pick_config_from_json(cooperative).promotion_stagger, 2);
  auto no_tile = j;
  no_tile.erase("tile");
  try {
    pick_config_from_json(no_tile);
    FAIL() << "a configuration without a tile was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'tile'"), std::string::npos) << e.what();
  }
  auto odd = j;
  odd["schedule"] = "stream";
  EXPECT_THROW(pick_config_from_json(odd), std::invalid_argument);
}

// On how many of `shapes` the model picks configs[1] over configs[0] (the unpriced-guard tests below).
int second_picked(const std::vector<PickShape>& shapes, const std::vector<PickConfig>& configs, const PickConstants& c,
                  const std::string& dtype = "bf16") {
  int taken = 0;
  for (const auto& s : shapes) taken += pick_argmin(s, dtype, configs, c) == 1 ? 1 : 0;
  return taken;
}

// A tile no committed record has run (256x128: its efficiency constant is 0, unfitted) is never the default pick;
// priced as a guess (the 128x256 tile's rate) it would be, on decode, where its 128-column tiles double the
// work items that fill the wave: the guard is what keeps it out.
TEST(GemmPickModel, AnUnfittedTileIsNeverTheDefaultPick) {
  PickConfig tall = config(128, 1, 1);
  tall.block_m = 256;
  const std::vector<PickConfig> configs = {config(256, 1, 1), tall};
  PickConstants c = h100_pick_constants();
  c.tile_efficiency_256x128 = 0;   // unfitted (as before 2026-11-26's records)
  const std::vector<PickShape> shapes = {{4096, 4096, 4096}, {64, 8192, 8192}, {128, 4096, 4096}, {8192, 1024, 4096}};
  EXPECT_EQ(second_picked(shapes, configs, c), 0);
  PickConstants guessed = c;
  guessed.tile_efficiency_256x128 = 1.2;   // an optimistic guess: the top of its range
  EXPECT_GE(second_picked(shapes, configs, guessed), 1) << "with a guessed rate the 256-row tile is never picked: this test no longer shows the guard";
}

// The 128 x 32 decode tile is unpriced until records have run it (tile_efficiency_32 = 0): never the default pick.
// Priced as a guess (the top of its range) it would take decode, where its 90 tiles fill a wave without split-K.
TEST(GemmPickModel, AnUnfittedNarrowTileIsNeverTheDefaultPick) {
  PickConfig wide = config(64, 1, 1), narrow = config(32, 1, 1);
  wide.a_box_trim = narrow.a_box_trim = true;
  const std::vector<PickConfig> configs = {wide, narrow};
  PickConstants c = h100_pick_constants();
  c.tile_efficiency_32 = 0;
  const std::vector<PickShape> decode = {{64, 2880, 4096}, {64, 5120, 2880}, {32, 2880, 4096}};
  EXPECT_EQ(second_picked(decode, configs, c), 0);
  PickConstants guessed = c;
  guessed.tile_efficiency_32 = 1.2;
  EXPECT_GE(second_picked(decode, configs, guessed), 1) << "with a guessed rate the 128x32 tile is never picked: this test no longer shows the guard";
}

// Small-grid stream-K (a `_sk` configuration where split-K would run) is unpriced until records have run it: the
// default keeps the plain configuration there; priced as a guess (the data-parallel rate) it would take over decode.
TEST(GemmPickModel, UnpricedSmallGridStreamKIsNeverTheDefaultPick) {
  const PickConfig plain = config(128, 1, 1);
  PickConfig shared = plain;
  shared.stream_k = true;
  shared.stream_k_small_grid = true;
  const std::vector<PickConfig> configs = {plain, shared};
  PickConstants c = h100_pick_constants();
  c.stream_k_small_grid_slowdown = 0;   // unfitted (as before 2026-11-26's records)
  const std::vector<PickShape> decode = {{64, 2880, 4096}, {64, 5120, 2880}, {1, 8192, 8192}};
  EXPECT_EQ(second_picked(decode, configs, c), 0);
  PickConstants guessed = c;
  guessed.stream_k_small_grid_slowdown = 0.5;   // an optimistic guess: twice the data-parallel rate
  EXPECT_GE(second_picked(decode, configs, guessed), 1) << "priced as a guess it is never picked: this test no longer shows the guard";
  // Records before 2026-11-26 (no stream_k_small_grid) split K there: priced as the plain configuration.
  shared.stream_k_small_grid = false;
  EXPECT_EQ(predict_pick(decode[0], "bf16", shared, c).time, predict_pick(decode[0], "bf16", plain, c).time);
}

// Staggered fp8 promotion likewise: unpriced, never the default; priced as a gain, it would be.
TEST(GemmPickModel, UnpricedStaggeredPromotionIsNeverTheDefaultPick) {
  PickConfig in_step = config(192, 2, 1, 128);
  in_step.promotion_interval = 4;
  PickConfig staggered = in_step;
  staggered.promotion_stagger = 2;
  const std::vector<PickConfig> configs = {in_step, staggered};
  PickConstants c = h100_pick_constants();
  c.stagger_efficiency = 0;
  const std::vector<PickShape> squares = {{4096, 4096, 4096}, {8192, 8192, 8192}};
  EXPECT_EQ(second_picked(squares, configs, c, "fp8_e4m3"), 0);
  c.stagger_efficiency = 1.05;
  EXPECT_EQ(second_picked(squares, configs, c, "fp8_e4m3"), 2) << "a 5% faster rate does not win: this test no longer shows the guard";
}

// The k-tiles of a work item outside whole promotion intervals run as the kernel runs them (fp8_promotion.hpp):
// promote8 one interval of 4 where 4 are left, then single k-tiles, each at promote1's rate. So promote8 loses ground
// to promote4 where K leaves single k-tiles: 2880 in fp8 is 23 k-tiles (two intervals of 8, one of 4 and three
// single ones; five of 4 and three single ones), 4096 is 32 (whole intervals either way). Without that term both
// ratios are the same. At K = 512 (four k-tiles) promote8 runs exactly promote4's one interval: priced as single
// k-tiles (before NOTES.md step 100), it came out 1 % slower. Unpriced, promote8 is never the pick.
TEST(GemmPickModel, KTilesOutsideWholePromotionIntervalsArePricedAsTheKernelRunsThem) {
  PickConfig every4 = config(192, 2, 1, 128);
  every4.promotion_interval = 4;
  PickConfig every8 = every4;
  every8.promotion_interval = 8;
  const PickConstants& c = h100_pick_constants();
  auto ratio = [&](std::int64_t k) {
    const PickShape s{4096, 2880, k};
    return predict_pick(s, "fp8_e4m3", every8, c).time / predict_pick(s, "fp8_e4m3", every4, c).time;
  };
  EXPECT_LT(ratio(4096), 1.0) << "promote8 is the faster rate where every k-tile lies in a whole interval";
  EXPECT_GT(ratio(2880), ratio(4096) + 0.01);
  EXPECT_NEAR(ratio(512), 1.0, 1e-9) << "four k-tiles: promote8's tail interval is promote4's one interval";
  PickConstants unfitted = c;
  unfitted.promote8_efficiency = 0;
  EXPECT_FALSE(std::isfinite(predict_pick({4096, 4096, 4096}, "fp8_e4m3", every8, unfitted).time));
}

// The fit gives a constant a value only where records exercise it: fitted on evidence without a 256-row candidate
// it stays unfitted (a random restart's draw would otherwise stick); with one, the fit prices it.
TEST(GemmPickModel, TheFitLeavesUnexercisedConstantsUnfitted) {
  auto evidence_with = [](bool tall_candidate) {
    PickEvidence e;
    e.source = "synthetic";
    e.shape = {4096, 4096, 4096};
    e.dtype = "bf16";
    PickConfig tall = config(128, 1, 1);
    tall.block_m = 256;
    const std::vector<std::pair<PickConfig, double>> measured = {
        {config(256, 1, 1), 1.00}, {config(192, 1, 1), 1.06}, {config(128, 1, 1), 1.20}, {tall, 0.97}};
    for (const auto& [cfg, ms] : measured) {
      if (cfg.block_m == 256 && !tall_candidate) continue;
      e.candidates.push_back({cfg, RoundTimes{ms, std::nullopt}, true});
    }
    e.winner = tall_candidate ? e.candidates.size() - 1 : 0;
    return std::vector<PickEvidence>{e};
  };
  FitOptions quick;
  quick.restarts = 2;
  quick.sweeps = 20;
  PickConstants start = h100_pick_constants();
  start.tile_efficiency_256x128 = 0;   // unfitted, as before any record ran the tile
  const PickConstants without = fit_pick_constants(evidence_with(false), start, quick);
  EXPECT_EQ(without.tile_efficiency_256x128, 0.0);
  const auto tall_won = evidence_with(true);
  const PickConstants with = fit_pick_constants(tall_won, start, quick);
  EXPECT_GT(with.tile_efficiency_256x128, 0.5);
  const std::vector<PickConfig> pair = {tall_won[0].candidates[0].config, tall_won[0].candidates.back().config};
  EXPECT_EQ(pick_argmin(tall_won[0].shape, "bf16", pair, with), 1u)
      << "fitted on a record the 256-row tile won, the model picks it";
}

TEST(GemmPickModel, SameRoundPrefersTheInterleavedRounds) {
  const RoundTimes finalist{1.10, 1.00}, screened{0.90, std::nullopt}, winner{1.05, 0.95};
  const auto both = same_round(finalist, winner);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->round, "interleaved");
  EXPECT_DOUBLE_EQ(both->ratio_to_winner(), 0.95);
  const auto screen = same_round(screened, winner);
  ASSERT_TRUE(screen);
  EXPECT_EQ(screen->round, "screen");
  EXPECT_DOUBLE_EQ(screen->pick_ms, 0.90);
  EXPECT_FALSE(same_round(RoundTimes{std::nullopt, std::nullopt}, winner));
}

// The A-box trim (NOTES.md step 26) is priced where a configuration trims: at M <= 64 a stage loads 64 rows of A
// instead of 128 (less load, a shorter predicted time); at M = 65 nothing changes. The rule is the kernel's
// (a_box_trimmed); a configuration says it trims in its config() JSON, and records written before that in their
// `kernel` string, which the evidence reader recognises.
TEST(GemmPickModel, TheTrimmedABoxIsPricedWhereAConfigurationTrims) {
  const PickConfig plain = config(128, 1, 1);
  PickConfig trims = plain;
  trims.a_box_trim = true;
  const auto& c = h100_pick_constants();
  EXPECT_LT(predict_pick({64, 2880, 4096}, "bf16", trims, c).time, predict_pick({64, 2880, 4096}, "bf16", plain, c).time);
  EXPECT_EQ(predict_pick({65, 2880, 4096}, "bf16", trims, c).time, predict_pick({65, 2880, 4096}, "bf16", plain, c).time);
  EXPECT_TRUE(a_box_trimmed(64, 128, false));
  EXPECT_FALSE(a_box_trimmed(65, 128, false));
  EXPECT_FALSE(a_box_trimmed(64, 256, false));
  EXPECT_FALSE(a_box_trimmed(64, 128, true));

  auto j = nlohmann::json::parse(R"({"name": "t", "tile": [128, 128, 64], "cluster": [1, 1]})");
  EXPECT_FALSE(pick_config_from_json(j).a_box_trim);
  j["a_box_trim"] = true;
  EXPECT_TRUE(pick_config_from_json(j).a_box_trim);

  const auto path = std::filesystem::temp_directory_path() / "aispflow_pick_evidence_trim.json";
  auto candidate = [](const char* name, int cluster_n, const std::string& kernel, double ms) {
    return nlohmann::json{{"config", {{"name", name}, {"tile", {128, 128, 64}}, {"cluster", {1, cluster_n}}}},
                          {"status", "ok"}, {"kernel", kernel}, {"time_ms", {{"median", ms}}}};
  };
  const nlohmann::json record = {
      {"provider", "ours.cluster"}, {"status", "ok"}, {"dtype", "bf16"}, {"config", {{"name", "a"}}},
      {"shape", {{"name", "s"}, {"m", 64}, {"n", 2880}, {"k", 4096}}},
      {"candidates",
       {candidate("a", 1, std::string("ours.cluster bf16 ...; ") + kATrimKernelNote + " (M <= 64)", 1.0),
        candidate("b", 2, "ours.cluster bf16 ...", 1.1)}}};
  std::ofstream(path) << nlohmann::json{{"records", {record}}}.dump();
  const auto read = read_pick_evidence(path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(read.size(), 1u);
  ASSERT_EQ(read[0].candidates.size(), 2u);
  EXPECT_TRUE(read[0].candidates[0].config.a_box_trim);
  EXPECT_FALSE(read[0].candidates[1].config.a_box_trim);
}

TEST(GemmPickModel, AMalformedEvidenceRecordNamesItsFile) {
  const auto path = std::filesystem::temp_directory_path() / "aispflow_pick_evidence_bad.json";
  std::ofstream(path) << R"({"records": [{"provider": "ours.cluster", "status": "ok", "dtype": "bf16",
      "shape": {"name": "s", "m": 1, "n": 1, "k": 1}, "candidates": [{"config": {"name": "x"}, "status": "ok"}]}]})";
  try {
    read_pick_evidence(path.string());
    FAIL() << "a candidate without a tile was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// The reader drops the candidates main does not build (split-K over the cluster, branch clusterk: run-e89f7ea lists
// them) and refuses a record whose winner is none of the candidates it keeps, naming the file: taking another
// candidate as the winner would hold the model to the wrong record.
TEST(GemmPickModel, TheEvidenceReaderSkipsUnbuiltCandidatesAndRefusesALostWinner) {
  const auto path = std::filesystem::temp_directory_path() / "aispflow_pick_evidence_winner.json";
  auto write = [&](const char* winner) {
    std::ofstream(path) << R"({"records": [{"provider": "ours.cluster", "status": "ok", "dtype": "bf16",
        "shape": {"name": "s", "m": 64, "n": 2880, "k": 4096}, "config": {"name": ")"
                        << winner << R"("}, "candidates": [
        {"config": {"name": "lone", "tile": [128, 64, 64], "cluster": [1, 1]}, "status": "ok",
         "screen_time_ms": {"median": 0.0143}},
        {"config": {"name": "shared_k", "tile": [128, 64, 64], "cluster": [1, 1], "cluster_k": 2}, "status": "ok",
         "screen_time_ms": {"median": 0.0172}}]}]})";
  };
  write("lone");
  const auto kept = read_pick_evidence(path.string());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].candidates.size(), 1u) << "the cluster_k candidate was read as a plain 1x1 one";
  EXPECT_EQ(kept[0].candidates[kept[0].winner].config.name, "lone");
  for (const char* lost : {"shared_k", "renamed"}) {
    write(lost);
    try {
      read_pick_evidence(path.string());
      FAIL() << "a record whose winner '" << lost << "' is not a kept candidate was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace aispflow::kernels
