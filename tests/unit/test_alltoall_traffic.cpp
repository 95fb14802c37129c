// The all-to-all traffic model and statistics (kernels/common/alltoall.hpp): splits sum exactly, follow Zipf by
// destination with the documented remainder rule, alpha 0 is uniform; Gini and max/mean; the pattern tells
// senders, receivers and positions apart; percentiles interpolate linearly; busbw's factor.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "kernels/common/alltoall.hpp"

namespace aispflow::kernels::comm {
using nlohmann::json;
namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t(0)); }

TEST(AlltoallTraffic, SplitsSumExactlyAndFollowZipf) {
  for (int ranks : {1, 2, 3, 4, 8})
    for (double alpha : {0.0, 1.0, 1.15, 1.35})
      for (std::int64_t payload : {0LL, 1LL, 7LL, 16384LL, 1048573LL}) {
        const auto split = zipf_split(payload, ranks, alpha);
        ASSERT_EQ(int(split.size()), ranks);
        EXPECT_EQ(sum(split), payload) << ranks << " " << alpha << " " << payload;
        for (std::size_t d = 1; d < split.size(); ++d) EXPECT_GE(split[d - 1], split[d]) << "rank 0 is hottest";
      }
  // alpha 0: uniform; the remainder goes one each to the lowest ranks (all fractions tie).
  EXPECT_EQ(zipf_split(10, 4, 0.0), (std::vector<std::int64_t>{3, 3, 2, 2}));
  // alpha 1, 4 ranks, 25 elements: exact shares 25 * (1, 1/2, 1/3, 1/4) / (25/12) = 12, 6, 4, 3: no remainder.
  EXPECT_EQ(zipf_split(25, 4, 1.0), (std::vector<std::int64_t>{12, 6, 4, 3}));
  // alpha 1, 3 ranks, 10 elements: shares 5.4545, 2.7273, 1.8182 -> floors 5, 2, 1; the two left over go to the
  // largest fractional parts (0.8182 of rank 2, 0.7273 of rank 1), not to rank 0's 0.4545.
  EXPECT_EQ(zipf_split(10, 3, 1.0), (std::vector<std::int64_t>{5, 3, 2}));
  EXPECT_THROW(zipf_split(10, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(zipf_split(10, 2, -1.0), std::invalid_argument);
}

TEST(AlltoallTraffic, InequalityMeasures) {
  EXPECT_DOUBLE_EQ(gini({5, 5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(max_over_mean({5, 5, 5, 5}), 1.0);
  EXPECT_NEAR(gini({4, 0, 0, 0}), 0.75, 1e-12);   // all to one of n: (n - 1) / n
  EXPECT_DOUBLE_EQ(max_over_mean({4, 0, 0, 0}), 4.0);
  EXPECT_GT(gini(zipf_split(1 << 20, 8, 1.35)), gini(zipf_split(1 << 20, 8, 1.0)));
}

TEST(AlltoallTraffic, PatternSeparatesSendersReceiversAndPositions) {
  std::set<std::uint8_t> distinct;
  int same_as_other_sender = 0, same_as_other_receiver = 0, same_as_next = 0;
  for (int i = 0; i < 4096; ++i) {
    distinct.insert(pattern_byte(1, 2, i));
    same_as_other_sender += pattern_byte(1, 2, i) == pattern_byte(3, 2, i);
    same_as_other_receiver += pattern_byte(1, 2, i) == pattern_byte(1, 3, i);
    same_as_next += pattern_byte(1, 2, i) == pattern_byte(1, 2, i + 1);
  }
  EXPECT_GT(distinct.size(), 250u);
  // A wrong block matches by chance about 1 byte in 256, so whole blocks from the wrong place are always caught.
  for (int same : {same_as_other_sender, same_as_other_receiver, same_as_next}) EXPECT_LT(same, 64);
}

TEST(AlltoallTraffic, PercentilesInterpolateLinearly) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 1.0), 4.0);
  std::vector<double> v(101);
  std::iota(v.begin(), v.end(), 0.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 99.0);
  EXPECT_NEAR(percentile({0, 10}, 0.99), 9.9, 1e-12);
  EXPECT_THROW(percentile({}, 0.5), std::invalid_argument);
}

TEST(AlltoallTraffic, PointRecordsBandwidthAndFailsOnWrongBytes) {
  AlltoallPoint p;
  p.transport = "mpi";
  p.dtype = "bf16";
  p.ranks = 4;
  p.element_bytes = 2;
  p.split_elements = zipf_split(1 << 19, 4, 0.0);
  p.payload_bytes = 1 << 20;
  p.times_ms = std::vector<double>(30, 1.0);
  json j = p.to_json();
  EXPECT_NEAR(j["algbw_gbps"].get<double>(), double(1 << 20) / 1e-3 / 1e9, 1e-9);
  EXPECT_NEAR(j["busbw_gbps"].get<double>(), j["algbw_gbps"].get<double>() * 0.75, 1e-9);
  EXPECT_EQ(j["moved_bytes"], 4LL * (1 << 20) * 3 / 4);   // every rank keeps a quarter for itself
  EXPECT_EQ(j["status"], "ok");
  p.wrong = 1;
  j = p.to_json();
  EXPECT_EQ(j["status"], "failed");
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(1), 0.0);
}

}  // namespace
}  // namespace aispflow::kernels::comm
