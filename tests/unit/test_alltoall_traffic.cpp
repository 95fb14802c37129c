// The alltoall traffic model and statistics (kernels/common/alltoall_traffic.hpp).
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "kernels/common/alltoall_traffic.hpp"

using namespace aispflow::comm;

namespace {
std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t(0)); }
}  // namespace

TEST(AlltoallTraffic, UniformSplitIsEqualWithRemainderToLowRanks) {
  EXPECT_EQ(zipf_split(12, 4, 0), (std::vector<std::int64_t>{3, 3, 3, 3}));
  // 10 over 4: 2.5 each, floors 2, remainder 2 goes to the equal fractions in rank order.
  EXPECT_EQ(zipf_split(10, 4, 0), (std::vector<std::int64_t>{3, 3, 2, 2}));
}

TEST(AlltoallTraffic, ZipfFloorsAndGivesTheRemainderToTheLargestFractions) {
  // alpha 1, 4 ranks: weights 1, 1/2, 1/3, 1/4 (sum 25/12); 100 elements -> 48, 24, 16, 12 exactly.
  EXPECT_EQ(zipf_split(100, 4, 1.0), (std::vector<std::int64_t>{48, 24, 16, 12}));
  // 10 elements -> 4.8, 2.4, 1.6, 1.2: floors 4,2,1,1 (8); the 2 left go to .8 (rank 0) and .6 (rank 2).
  EXPECT_EQ(zipf_split(10, 4, 1.0), (std::vector<std::int64_t>{5, 2, 2, 1}));
}

TEST(AlltoallTraffic, SplitsSumToThePayloadAndAreMonotone) {
  for (int n : {1, 2, 3, 4, 7, 8})
    for (double a : {0.0, 1.0, 1.15, 1.35})
      for (std::int64_t e : {0, 1, 5, 1000, 1048577}) {
        const auto s = zipf_split(e, n, a);
        ASSERT_EQ(sum(s), e) << n << " " << a << " " << e;
        for (int d = 1; d < n; ++d) ASSERT_GE(s[d - 1], s[d]) << "rank 0 is the hottest";
      }
}

TEST(AlltoallTraffic, ReceiveCountsFollowFromWhatSendersSend) {
  const auto m = traffic_matrix(100, 4, 1.0);
  const auto r = receive_counts(m);
  EXPECT_EQ(r, (std::vector<std::int64_t>{192, 96, 64, 48}));
  EXPECT_EQ(sum(r), 400);
}

TEST(AlltoallTraffic, GiniAndMaxOverMean) {
  EXPECT_DOUBLE_EQ(gini({5, 5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(gini({0, 0, 0, 8}), 0.75);   // (n-1)/n for all in one
  EXPECT_DOUBLE_EQ(gini({}), 0.0);
  EXPECT_DOUBLE_EQ(max_over_mean({5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(max_over_mean({48, 24, 16, 12}), 1.92);
  EXPECT_GT(gini(zipf_split(1000, 8, 1.35)), gini(zipf_split(1000, 8, 1.0)));
}

TEST(AlltoallTraffic, PatternDependsOnSourceDestinationAndIndex) {
  EXPECT_NE(pattern_value(0, 1, 0), pattern_value(1, 0, 0));
  EXPECT_NE(pattern_value(0, 1, 0), pattern_value(0, 1, 1));
  EXPECT_NE(pattern_value(0, 1, 0), pattern_value(0, 2, 0));
  EXPECT_NE(pattern_value(0, 0, 0), 0u);
}

TEST(AlltoallTraffic, PercentileInterpolatesLinearly) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);
  // 1..100: p99 sits at position 98.01 -> 99.01.
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  EXPECT_NEAR(percentile(v, 0.99), 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.99), 7.0);
  EXPECT_THROW(percentile({}, 0.5), std::invalid_argument);
}

TEST(AlltoallTraffic, BusbwIsAlgbwTimesNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(busbw_from_algbw(100, 4), 75);
  EXPECT_DOUBLE_EQ(busbw_from_algbw(100, 2), 50);
  EXPECT_DOUBLE_EQ(busbw_from_algbw(100, 1), 0);   // one rank: nothing crosses a link
}

// The link-bound ideal: uniform over n GPUs at B GB/s is (n-1)/n of the payload over B (an ideal busbw of B);
// under skew the hot direction bounds it (2 ranks, Zipf 1.15: ~69% of each payload goes to rank 0).
TEST(AlltoallTraffic, LinkBoundIdealFollowsTheBusiestPort) {
  const std::vector<std::vector<double>> b2 = {{0, 400}, {400, 0}};
  const std::int64_t elements = 1 << 20;   // 4 MiB of fp32 per rank
  const double uniform = link_bound_seconds(traffic_matrix(elements, 2, 0), 4, b2);
  EXPECT_NEAR(uniform, 0.5 * elements * 4 / 400e9, 1e-15);
  const TrafficMatrix skewed = traffic_matrix(elements, 2, 1.15);
  const double hot = double(skewed[1][0]) * 4 / 400e9;   // 1 -> 0 carries the hot share
  EXPECT_DOUBLE_EQ(link_bound_seconds(skewed, 4, b2), hot);
  EXPECT_NEAR(link_bound_seconds(skewed, 4, b2) / uniform, 1.38, 0.02) << "the link alone predicts ~1.4x, not 2.4x";
  // A slower direction bounds its own traffic: 0 -> 1 at 40 GB/s carries 31% and becomes the bound.
  EXPECT_DOUBLE_EQ(link_bound_seconds(skewed, 4, {{0, 40}, {400, 0}}), double(skewed[0][1]) * 4 / 40e9);
  // 4 GPUs, uniform: each port moves 3/4 of the payload.
  const std::vector<std::vector<double>> b4(4, std::vector<double>(4, 100));
  EXPECT_NEAR(link_bound_seconds(traffic_matrix(elements, 4, 0), 4, b4), 0.75 * elements * 4 / 100e9, 1e-15);
  EXPECT_EQ(link_bound_seconds(traffic_matrix(elements, 1, 0), 4, {{0}}), 0) << "one rank: nothing crosses a link";
  EXPECT_THROW(link_bound_seconds(skewed, 4, {{0, 0}, {400, 0}}), std::invalid_argument) << "a pair without bandwidth";
  EXPECT_THROW(link_bound_seconds(traffic_matrix(elements, 4, 0), 4, b2), std::invalid_argument) << "matrix too small";
}
