// alltoall: which parameter combinations the node accepts, and what it asks of the machine (no MPI, no GPU
// needed: check_params and requirements only). The end-to-end runs are tests/integration/test_alltoall_mpi.cpp
// and tests/gpu/test_alltoall_nccl.cpp.
#include <gtest/gtest.h>

#include "nodes/mpi_launch.hpp"
#include "nodes/node_factories.hpp"

namespace aispflow {
namespace {

TEST(AlltoallParams, TransportAndLaunch) {
  auto node = make_alltoall_node();
  EXPECT_EQ(node->check_params({{"transport", "mpi"}, {"ranks", 2}}), "");
  EXPECT_EQ(node->check_params({{"transport", "nccl"}}), "");
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"launch", "process"}}), "");
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"launch", "mpirun"}, {"ranks", 16},
                                {"hosts", {"nodeA:8", "nodeB:8"}}}),
            "");
  EXPECT_NE(node->check_params({{"transport", "gloo"}}).find("transport: expected mpi or nccl"), std::string::npos);
  EXPECT_NE(node->check_params({{"transport", "nccl"}, {"launch", "ssh"}}).find("launch: expected process, mpirun or srun"),
            std::string::npos);
  // srun (Slurm's launcher) applies to both transports.
  EXPECT_EQ(node->check_params({{"transport", "mpi"}, {"launch", "srun"}}), "");
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"launch", "srun"}}), "");
  EXPECT_NE(node->check_params({{"transport", "mpi"}, {"launch", "mpirun"}}).find("applies to transport nccl"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"iterations", 10}}).find("at least 30"), std::string::npos);
}

TEST(AlltoallParams, BackToBackLocalCopyAndPairBandwidth) {
  auto node = make_alltoall_node();
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"local_copy", true}, {"window_exchanges", 50}, {"windows", 5}}), "");
  EXPECT_NE(node->check_params({{"transport", "mpi"}, {"local_copy", true}}).find("local_copy: applies to transport nccl"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"window_exchanges", 0}}).find("window_exchanges"), std::string::npos);
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"pair_gbps", 450}}), "");
  EXPECT_EQ(node->check_params({{"transport", "nccl"}, {"pair_gbps", {{0, 400}, {390, 0}}}}), "");
  EXPECT_NE(node->check_params({{"pair_gbps", 0}}).find("pair_gbps: expected a number > 0"), std::string::npos);
  EXPECT_NE(node->check_params({{"pair_gbps", {{0, 400}}}}).find("square matrix"), std::string::npos);
  EXPECT_NE(node->check_params({{"pair_gbps", {{0, -1}, {1, 0}}}}).find(">= 0"), std::string::npos);
}

TEST(AlltoallParams, OnlyTheNcclTransportNeedsAGpu) {
  auto node = make_alltoall_node();
  EXPECT_EQ(node->requirements({{"transport", "mpi"}}).gpus, 0);
  EXPECT_EQ(node->requirements({{"transport", "nccl"}}).gpus, 1);
  EXPECT_EQ(node->requirements({{"transport", "nccl"}, {"launch", "mpirun"}}).gpus, 1);
  EXPECT_TRUE(node->traits().exclusive) << "it measures: the measurement lock applies";
}

}  // namespace
// launch: srun: Slurm places the ranks (PMIx), one GPU per rank for nccl; the user's args go before the program.
TEST(AlltoallParams, SrunCommandLine) {
  MpiLaunch launch;
  launch.ranks = 4;
  launch.srun = true;
  launch.extra_args = {"--cpu-bind=cores"};
  launch.program = {"/opt/aispflow-comm-rank", "plan.json", "result.json"};
  EXPECT_EQ(srun_command("/usr/bin/srun", launch),
            (std::vector<std::string>{"/usr/bin/srun", "--mpi=pmix", "--ntasks=4", "--kill-on-bad-exit=1",
                                      "--cpu-bind=cores", "/opt/aispflow-comm-rank", "plan.json", "result.json"}));
  launch.gpu_per_rank = true;
  const auto with_gpus = srun_command("/usr/bin/srun", launch);
  EXPECT_EQ(with_gpus[4], "--gpus-per-task=1");
}

}  // namespace aispflow
