// The shared sampling loop and its statistics: exact values on known samples, and the stopping rules
// (settled spread, max_samples, time budget) each observed on purpose-built sample sequences.
#include "kernels/common/timing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

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

}  // namespace
}  // namespace aispflow::kernels
