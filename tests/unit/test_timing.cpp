// The shared sampling loop and its statistics: exact values on known samples, and the stopping rules
// (settled spread, max_samples, time budget) each observed on purpose-built sample sequences.
#include "kernels/common/timing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

namespace aispflow::kernels {
namespace {

TEST(Summarize, OddCountMedianMinMaxMean) {
  const TimingStats s = summarize({5.0, 1.0, 3.0}, 0.5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 5.0);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3.0);
  EXPECT_EQ(s.samples, 3);
  // Sample standard deviation of {1,3,5} is 2; relative to the mean 3.
  EXPECT_NEAR(s.stdrel, 2.0 / 3.0, 1e-12);
  EXPECT_FALSE(s.converged);   // 0.667 > 0.5
}

TEST(Summarize, EvenCountMedianIsMeanOfMiddlePair) {
  const TimingStats s = summarize({4.0, 1.0, 2.0, 10.0}, 1.0);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
  EXPECT_TRUE(s.converged);
}

TEST(Summarize, IdenticalSamplesHaveZeroSpreadAndConverge) {
  const TimingStats s = summarize({2.5, 2.5, 2.5, 2.5}, 0.01);
  EXPECT_DOUBLE_EQ(s.stdrel, 0.0);
  EXPECT_TRUE(s.converged);
}

TEST(Summarize, EmptyAndSingleSample) {
  EXPECT_EQ(summarize({}, 0.1).samples, 0);
  const TimingStats one = summarize({7.0}, 0.1);
  EXPECT_EQ(one.samples, 1);
  EXPECT_DOUBLE_EQ(one.median_ms, 7.0);
  EXPECT_FALSE(one.converged) << "one sample says nothing about spread";
}

TEST(Summarize, JsonUsesRecordFieldNames) {
  const auto j = summarize({1.0, 2.0, 3.0}, 0.5).to_json();
  EXPECT_DOUBLE_EQ(j.at("median").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.at("min").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j.at("max").get<double>(), 3.0);
  EXPECT_TRUE(j.contains("stdrel"));
}

TEST(Measure, WarmupRunsAreNotSampledAndBetweenPrecedesEverySample) {
  TimingPolicy p;
  p.warmup = 3;
  p.min_samples = 4;
  p.max_samples = 4;
  int calls = 0, betweens = 0;
  const TimingStats s = measure(
      p,
      [&] {
        ++calls;
        EXPECT_EQ(betweens, calls) << "between() must run before each run";
        return calls <= 3 ? 1000.0 : 1.0;   // warm-up runs report absurd times: they must not be counted
      },
      [&] { ++betweens; });
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.max_ms, 1.0);
}

TEST(Measure, StopsAtMinSamplesWhenSpreadIsSettled) {
  TimingPolicy p;
  p.warmup = 0;
  p.min_samples = 5;
  p.max_samples = 100;
  p.target_stdrel = 0.02;
  int calls = 0;
  const TimingStats s = measure(p, [&] { ++calls; return 1.0; });
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(s.converged);
}

TEST(Measure, NoisySamplesRunToMaxSamples) {
  TimingPolicy p;
  p.warmup = 0;
  p.min_samples = 3;
  p.max_samples = 17;
  p.target_stdrel = 0.01;
  p.budget_s = 100;
  int calls = 0;
  const TimingStats s = measure(p, [&] { return (++calls % 2) ? 1.0 : 3.0; });
  EXPECT_EQ(s.samples, 17);
  EXPECT_FALSE(s.converged);
}

TEST(Measure, BudgetEndsSamplingOfNoisyWork) {
  TimingPolicy p;
  p.warmup = 0;
  p.min_samples = 2;
  p.max_samples = 100000;
  p.target_stdrel = 0.0001;
  p.budget_s = 0.05;
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  const TimingStats s = measure(p, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return (++calls % 2) ? 1.0 : 2.0;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(s.samples, 2);
  EXPECT_LT(s.samples, 100000);
  EXPECT_LT(seconds, 2.0);
  EXPECT_FALSE(s.converged);
}

TEST(TimingPolicy, JsonRoundTripAndMissingFieldsKeepDefaults) {
  TimingPolicy p;
  p.warmup = 7;
  p.min_samples = 9;
  p.max_samples = 50;
  p.target_stdrel = 0.05;
  p.budget_s = 3.5;
  p.flush_cache = false;
  const TimingPolicy q = TimingPolicy::from_json(p.to_json());
  EXPECT_EQ(q.warmup, 7);
  EXPECT_EQ(q.min_samples, 9);
  EXPECT_EQ(q.max_samples, 50);
  EXPECT_DOUBLE_EQ(q.target_stdrel, 0.05);
  EXPECT_DOUBLE_EQ(q.budget_s, 3.5);
  EXPECT_FALSE(q.flush_cache);

  const TimingPolicy d = TimingPolicy::from_json({{"warmup", 1}});
  EXPECT_EQ(d.warmup, 1);
  EXPECT_EQ(d.min_samples, TimingPolicy{}.min_samples);
}

TEST(TimingPolicy, ClampsNonsensicalCounts) {
  const TimingPolicy p = TimingPolicy::from_json({{"min_samples", 0}, {"max_samples", -3}});
  EXPECT_EQ(p.min_samples, 1);
  EXPECT_GE(p.max_samples, p.min_samples);
}

}  // namespace
}  // namespace aispflow::kernels

namespace aispflow::kernels {
namespace {

// timing.rest: the default 2x, back to back, or a factor; recorded in the policy's JSON; nonsense is refused with
// the accepted forms.
TEST(TimingRest, ParsesTheDocumentedFormsAndRefusesOthers) {
  EXPECT_DOUBLE_EQ(TimingPolicy{}.rest_factor, 2.0);
  EXPECT_DOUBLE_EQ(TimingPolicy::parse_rest("2x"), 2.0);
  EXPECT_DOUBLE_EQ(TimingPolicy::parse_rest("0"), 0.0);
  EXPECT_DOUBLE_EQ(TimingPolicy::parse_rest(0), 0.0);
  EXPECT_DOUBLE_EQ(TimingPolicy::parse_rest("1.5x"), 1.5);
  EXPECT_DOUBLE_EQ(TimingPolicy::parse_rest(0.5), 0.5);
  for (const nlohmann::json& bad : {nlohmann::json("fast"), nlohmann::json("-1x"), nlohmann::json(-2), nlohmann::json("2xx"),
                                   nlohmann::json(true), nlohmann::json(1000)}) {
    try {
      TimingPolicy::parse_rest(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("timing.rest"), std::string::npos) << e.what();
    }
  }
  const TimingPolicy sustained = TimingPolicy::from_json({{"rest", "0"}});
  EXPECT_DOUBLE_EQ(sustained.rest_factor, 0.0);
  EXPECT_EQ(sustained.to_json()["rest"], "0 (back to back)");
  EXPECT_EQ(TimingPolicy{}.to_json()["rest"], "2x");
}

// timing.code: warm (the default) or cold; in the policy's JSON only when cold, so that the policies of existing
// workflows, which their cache keys hold, are unchanged; anything else is refused with the accepted forms.
TEST(TimingCode, ParsesWarmAndColdAndRefusesOthers) {
  EXPECT_FALSE(TimingPolicy{}.cold_code);
  EXPECT_FALSE(TimingPolicy{}.to_json().contains("code"));
  EXPECT_FALSE(TimingPolicy::parse_code("warm"));
  EXPECT_TRUE(TimingPolicy::parse_code("cold"));
  const TimingPolicy cold = TimingPolicy::from_json({{"code", "cold"}});
  EXPECT_TRUE(cold.cold_code);
  EXPECT_EQ(cold.to_json()["code"], "cold");
  EXPECT_TRUE(TimingPolicy::from_json(cold.to_json()).cold_code);
  EXPECT_FALSE(TimingPolicy::from_json({{"code", "warm"}}).cold_code);
  for (const nlohmann::json& bad : {nlohmann::json("hot"), nlohmann::json(true), nlohmann::json(1), nlohmann::json("Cold")}) {
    try {
      TimingPolicy::parse_code(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("timing.code"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("\"cold\""), std::string::npos) << e.what();
    }
  }
}

// Interleaved rounds (NOTES.md step 132): each round is a permutation, and a predecessor's carry-over no longer
// lands on one candidate. Simulated: A and B take 1.00 ms, C 1.00 ms, and whatever is sampled right after C runs
// 5 % slower (on the H100, the kernel after a stream-K candidate did). A and B must then measure alike.
std::vector<double> simulated_medians(const std::function<std::vector<std::size_t>(int)>& order_of_round) {
  std::vector<std::vector<double>> samples(3);
  std::size_t previous = 99;
  for (int round = 1; round <= 100; ++round)
    for (std::size_t i : order_of_round(round)) {
      samples[i].push_back(previous == 2 ? 1.05 : 1.00);
      previous = i;
    }
  std::vector<double> medians;
  for (auto& s : samples) medians.push_back(summarize(s, 0.01).median_ms);
  return medians;
}

TEST(InterleavedRoundOrder, EveryRoundIsAPermutation) {
  for (std::size_t n : {1, 2, 3, 4, 7})
    for (int round = 1; round <= 50; ++round) {
      std::vector<std::size_t> order = interleaved_round_order(round, n);
      std::sort(order.begin(), order.end());
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(order[i], i) << "n " << n << " round " << round;
    }
  EXPECT_EQ(interleaved_round_order(5, 4), interleaved_round_order(5, 4));   // deterministic
}

TEST(InterleavedRoundOrder, ACarryOverIsSharedOutNotPinnedOnOneCandidate) {
  // Fixed order A, B, C: A always follows C and takes the whole 5 % (the case the shuffle exists for).
  const auto fixed = simulated_medians([](int) { return std::vector<std::size_t>{0, 1, 2}; });
  EXPECT_GT(fixed[0] / fixed[1], 1.04);
  // Shuffled: A and B follow C about equally often, so their medians (each a 1.00 or a 1.05) agree, and the
  // rounds where each followed C are counted to show it is not luck.
  const auto shuffled = simulated_medians([](int round) { return interleaved_round_order(round, 3); });
  int a_after_c = 0, b_after_c = 0;
  std::size_t previous = 99;
  for (int round = 1; round <= 100; ++round)
    for (std::size_t i : interleaved_round_order(round, 3)) {
      a_after_c += previous == 2 && i == 0;
      b_after_c += previous == 2 && i == 1;
      previous = i;
    }
  EXPECT_NEAR(double(a_after_c) / double(b_after_c), 1.0, 0.35) << a_after_c << " against " << b_after_c;
  EXPECT_LT(a_after_c, 50);   // a fixed order gives A all 100 rounds after C (99 counted here)
  EXPECT_EQ(shuffled[0], shuffled[1]);
}

}  // namespace
}  // namespace aispflow::kernels
