// GPC order's place table (kernels/common/cluster_places.hpp): from a calibration's placement to a permutation
// that gives the clusters of one GPC consecutive places, and the check bind() makes of any table.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/cluster_places.hpp"

namespace aispflow::kernels {
namespace {

// A GPU of 4 GPCs with 3 TPCs each, where the SM ids interleave the GPCs (TPC t is SMs 2t and 2t + 1, in GPC
// t mod 4), as on the H100 (NOTES.md step 94), and a pair launch that fills the TPCs in SM order.
std::vector<int> interleaved_groups() {
  std::vector<int> group(24);
  for (int sm = 0; sm < 24; ++sm) group[std::size_t(sm)] = (sm / 2) % 4;
  return group;
}

TEST(ClusterPlaces, TheClustersOfOneGpcTakeConsecutivePlaces) {
  std::vector<int> cluster_sm;
  for (int tpc = 0; tpc < 12; ++tpc) cluster_sm.push_back(2 * tpc);
  const std::vector<int> place = gpc_cluster_places(cluster_sm, interleaved_groups());
  ASSERT_EQ(place_table_error(place), "");
  // GPC 0 holds clusters 0, 4, 8; GPC 1 clusters 1, 5, 9; ...: in that order, three places each.
  EXPECT_EQ(place, (std::vector<int>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  for (int c = 0; c < 12; ++c) EXPECT_EQ(place[std::size_t(c)] / 3, c % 4) << "cluster " << c;
}

TEST(ClusterPlaces, ClustersOnSmsOfUnknownGpcComeLastInLaunchOrder) {
  std::vector<int> group = interleaved_groups();
  group[20] = group[21] = -1;   // TPC 10 (GPC 2) was not reached by the calibration's big clusters
  std::vector<int> cluster_sm;
  for (int tpc = 0; tpc < 12; ++tpc) cluster_sm.push_back(2 * tpc);
  const std::vector<int> place = gpc_cluster_places(cluster_sm, group);
  ASSERT_EQ(place_table_error(place), "");
  EXPECT_EQ(place[10], 11);
  EXPECT_EQ(place[2], 6);   // GPC 2 now has two clusters, 2 and 6, at places 6 and 7
  EXPECT_EQ(place[6], 7);
}

TEST(ClusterPlaces, LaunchOrderWhereNothingIsKnown) {
  const std::vector<int> place = gpc_cluster_places({5, 1, 3}, std::vector<int>(8, -1));
  EXPECT_EQ(place, (std::vector<int>{0, 1, 2}));
}

TEST(ClusterPlaces, AnSmOutsideTheCalibrationIsAnError) {
  EXPECT_THROW(gpc_cluster_places({0, 30}, interleaved_groups()), std::invalid_argument);
  EXPECT_THROW(gpc_cluster_places({-1}, interleaved_groups()), std::invalid_argument);
}

TEST(ClusterPlaces, TheCheckRejectsARepeatedOrOutOfRangePlace) {
  EXPECT_EQ(place_table_error({2, 0, 1}), "");
  EXPECT_NE(place_table_error({0, 0, 1}).find("place 0 is given to two clusters"), std::string::npos);
  EXPECT_NE(place_table_error({0, 3, 1}).find("outside 0..2"), std::string::npos);
  EXPECT_NE(place_table_error({0, -1, 1}).find("outside"), std::string::npos);
}

}  // namespace
}  // namespace aispflow::kernels
