// The alltoall node's link-bound ideal (nodes/alltoall_link_bound.hpp): where the pair bandwidth comes from (an
// upstream p2p node's matrices, else pair_gbps), when there is none and why, and the fields added to a point.
#include <gtest/gtest.h>

#include "kernels/common/alltoall_traffic.hpp"
#include "nodes/alltoall_link_bound.hpp"
#include "pipeline/artifact.hpp"

namespace aispflow {
namespace {

// A p2p node's data for two GPUs: copy engines 0->1 380, 1->0 390; kernel reads 0->1 400, 1->0 null (no peer).
json two_gpu_p2p() {
  return {{"bytes", 256 << 20},
          {"matrices", {{"copy_engine", {{"values", {{1500, 380}, {390, 1500}}}}},
                        {"kernel_read", {{"values", {{1400, 400}, {nullptr, 1400}}}}}}}};
}

TEST(AlltoallLinkBound, FromAnUpstreamP2pNodeTheFasterMethodPerPair) {
  Artifact pairs;
  pairs.set_data(two_gpu_p2p());
  NodeContext ctx;
  ctx.inputs.push_back({"gpu_pairs", "gpu_pairs", &pairs});
  ctx.params = {{"pair_gbps", 1}};   // an input wins over the param
  const PairBandwidth bw = pair_bandwidth_for(ctx, 2, false);
  ASSERT_TRUE(bw.unavailable.empty()) << bw.unavailable;
  EXPECT_NE(bw.source.find("p2p node 'gpu_pairs' (256 MiB per copy)"), std::string::npos) << bw.source;
  EXPECT_DOUBLE_EQ(bw.gbps[0][1], 400);   // kernel read beat the copy engine
  EXPECT_DOUBLE_EQ(bw.gbps[1][0], 390);   // no kernel read: the copy engine's
  EXPECT_TRUE(pair_bandwidth_for(ctx, 3, false).unavailable.find("covers 2 GPU(s)") != std::string::npos);
  EXPECT_TRUE(pair_bandwidth_for(ctx, 2, true).unavailable.find("span several hosts") != std::string::npos);
}

TEST(AlltoallLinkBound, FromTheParamOrNone) {
  NodeContext ctx;
  EXPECT_NE(pair_bandwidth_for(ctx, 2, false).unavailable.find("no pair bandwidth"), std::string::npos);
  ctx.params = {{"pair_gbps", 450}};
  PairBandwidth bw = pair_bandwidth_for(ctx, 4, false);
  ASSERT_EQ(bw.gbps.size(), 4u);
  EXPECT_DOUBLE_EQ(bw.gbps[3][2], 450);
  ctx.params = {{"pair_gbps", {{0, 40}, {400, 0}}}};
  bw = pair_bandwidth_for(ctx, 2, true);   // a param describes any placement, hosts included
  EXPECT_DOUBLE_EQ(bw.gbps[0][1], 40);
  EXPECT_EQ(bw.to_json()["source"], "param pair_gbps (a matrix)");
}

TEST(AlltoallLinkBound, PointFieldsAreTheIdealAndItsRatios) {
  PairBandwidth bw;
  bw.gbps = {{0, 400}, {400, 0}};
  bw.source = "test";
  json r = {{"elements", 1 << 20}, {"skew", 1.15}, {"p50_ms", 0.01}, {"b2b_time_ms", 0.005}};
  add_link_bound(r, bw, 2, 2);
  const double want = comm::link_bound_seconds(comm::traffic_matrix(1 << 20, 2, 1.15), 2, bw.gbps) * 1e3;
  EXPECT_DOUBLE_EQ(r["link_bound_ms"].get<double>(), want);
  EXPECT_DOUBLE_EQ(r["link_bound_efficiency"].get<double>(), want / 0.01);
  EXPECT_DOUBLE_EQ(r["b2b_link_bound_efficiency"].get<double>(), want / 0.005);
  json one = {{"elements", 1 << 20}, {"skew", 0.0}, {"p50_ms", 0.01}};
  add_link_bound(one, bw, 1, 2);
  EXPECT_FALSE(one.contains("link_bound_ms")) << "one rank: nothing crosses a link";
  PairBandwidth gap;
  gap.gbps = {{0, 0}, {400, 0}};
  json r2 = {{"elements", 1 << 20}, {"skew", 0.0}, {"p50_ms", 0.01}};
  add_link_bound(r2, gap, 2, 2);
  EXPECT_NE(r2.value("link_bound_unavailable", std::string()).find("no measured bandwidth from GPU 0 to GPU 1"),
            std::string::npos) << r2.dump();
}

}  // namespace
}  // namespace aispflow
