// The alltoall node's mpi transport end to end through `aispflow run` (real mpirun, real ranks): 2 and 4
// ranks with verified data; one corrupted element fails the point and the run (exit 3); an impossible
// threshold exits 3, also when served from the cache; a rank that dies mid-run, or hangs past timeout_s,
// fails the node cleanly and the next run works.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using aispflow::test::quote;
using aispflow::test::read_file;
using Result = aispflow::test::CommandResult;

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

class AlltoallMpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)";
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-alltoall-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void write_workflow(const std::string& params) {
    std::ofstream(dir_ / "a2a.yaml") << "name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: " << params << "\n";
  }
  Result run(const std::string& env = "") {
    return aispflow::test::run_in(dir_, env + " timeout 300 " + quote(AISPFLOW_BIN) +
                                            " run a2a.yaml --backend cpu --progress lines --cache cache --out out");
  }
  json data() {
    json a = json::parse(read_file(dir_ / "out" / "nodes" / "a2a" / "artifact.json"));
    return a.contains("data") ? a["data"] : a;
  }
  json report() { return json::parse(read_file(dir_ / "out" / "run.json")); }
  fs::path dir_;
};

std::string why(const Result& r) { return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

const char* kSmall = "{transport: mpi, ranks: %d, sizes: [4096, 65536], skews: [0, 1.35], dtypes: [bf16, fp8], "
                     "warmup: 2, iterations: 30%s}";
std::string small(int ranks, const std::string& extra = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf, kSmall, ranks, extra.c_str());
  return buf;
}

TEST_F(AlltoallMpiTest, TwoAndFourRanksVerifiedAndMeasured) {
  for (int ranks : {2, 4}) {
    write_workflow(small(ranks));
    const Result r = run();
    ASSERT_EQ(r.code, 0) << why(r);
    const json d = data();
    EXPECT_EQ(d["ranks"], ranks);
    EXPECT_EQ(d["verdict"], "ok");
    ASSERT_EQ(d["points"].size(), 8u);   // 2 dtypes x 2 sizes x 2 skews
    for (const auto& p : d["points"]) {
      EXPECT_EQ(p["status"], "ok") << p.dump();
      EXPECT_EQ(p["wrong"], 0);
      EXPECT_GT(p["p50_ms"].get<double>(), 0);
      EXPECT_GE(p["p99_ms"].get<double>(), p["p50_ms"].get<double>());
      EXPECT_GE(p["max_ms"].get<double>(), p["p99_ms"].get<double>());
      EXPECT_NEAR(p["busbw_gbps"].get<double>(), p["algbw_gbps"].get<double>() * (ranks - 1) / ranks, 1e-9);
      if (p["skew"].get<double>() == 0) {
        EXPECT_NEAR(p["split_gini"].get<double>(), 0, 1e-3);
      } else {
        EXPECT_GT(p["split_gini"].get<double>(), 0.1);
      }
      EXPECT_EQ(p["bytes_moved"].get<double>(), p["size_bytes"].get<double>() * ranks);
      // The back-to-back measure beside the per-exchange one (3 windows of 20 exchanges by default).
      EXPECT_EQ(p["b2b_exchanges"], 20);
      EXPECT_EQ(p["b2b_windows"], 3);
      EXPECT_GT(p["b2b_time_ms"].get<double>(), 0);
      EXPECT_NEAR(p["b2b_busbw_gbps"].get<double>(), p["b2b_algbw_gbps"].get<double>() * (ranks - 1) / ranks, 1e-9);
      EXPECT_FALSE(p.contains("link_bound_ms")) << "no pair bandwidth given";
    }
    EXPECT_TRUE(d["pair_bandwidth"].contains("unavailable")) << d["pair_bandwidth"].dump();
    ASSERT_EQ(d["heatmaps"].size(), 6u);   // (p99, busbw, b2b busbw) x 2 dtypes, skew rows x size columns
    for (const auto& h : d["heatmaps"]) {
      ASSERT_EQ(h["values"].size(), 2u);
      EXPECT_EQ(h["values"][0].size(), 2u);
      EXPECT_TRUE(h["values"][1][1].is_number()) << h.dump();
    }
    EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "a2a" / "alltoall.csv"));
    EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "a2a" / "alltoall.md"));
  }
}

// The link-bound ideal from pair_gbps: 2 ranks at 1 GB/s per direction; at Zipf 1.35 the hot direction carries
// more than half of each payload, so its ideal is longer than uniform's, and each efficiency is ideal / measured.
TEST_F(AlltoallMpiTest, LinkBoundIdealFromPairBandwidth) {
  write_workflow("{transport: mpi, ranks: 2, sizes: [65536], skews: [0, 1.35], dtypes: [fp32], warmup: 2, "
                 "iterations: 30, window_exchanges: 5, windows: 2, pair_gbps: 1}");
  const Result r = run();
  ASSERT_EQ(r.code, 0) << why(r);
  const json d = data();
  EXPECT_EQ(d["pair_bandwidth"]["source"], "param pair_gbps: 1 GB/s for every pair");
  ASSERT_EQ(d["points"].size(), 2u);
  const json& uniform = d["points"][0];
  const json& skewed = d["points"][1];
  EXPECT_NEAR(uniform["link_bound_ms"].get<double>(), 32768 / 1e9 * 1e3, 1e-9) << "half of 64 KiB crosses at 1 GB/s";
  EXPECT_GT(skewed["link_bound_ms"].get<double>(), 1.3 * uniform["link_bound_ms"].get<double>());
  for (const json& p : {uniform, skewed}) {
    EXPECT_EQ(p["b2b_exchanges"], 5);
    EXPECT_NEAR(p["link_bound_efficiency"].get<double>(), p["link_bound_ms"].get<double>() / p["p50_ms"].get<double>(), 1e-12);
    EXPECT_NEAR(p["b2b_link_bound_efficiency"].get<double>(),
                p["link_bound_ms"].get<double>() / p["b2b_time_ms"].get<double>(), 1e-12);
  }
}

TEST_F(AlltoallMpiTest, OneCorruptedElementFailsThePointAndTheRun) {
  write_workflow(small(2));
  const Result r = run("AISPFLOW_COMM_TEST_CORRUPT=1");
  EXPECT_EQ(r.code, 3) << why(r);
  const json d = data();
  EXPECT_EQ(d["verdict"], "expectations_not_met");
  for (const auto& p : d["points"]) {
    EXPECT_EQ(p["wrong"], 1) << p.dump();       // exactly the one element
    EXPECT_EQ(p["status"], "failed");
    EXPECT_FALSE(p.contains("p50_ms")) << "a failed point is never timed";
  }
}

TEST_F(AlltoallMpiTest, ImpossibleThresholdExitsThreeAlsoFromCache) {
  write_workflow(small(2, ", thresholds: {max_p99_ms: 0.0000001}"));
  const Result first = run();
  EXPECT_EQ(first.code, 3) << why(first);
  EXPECT_EQ(data()["summary"]["pass"], 0);
  const Result cached = run();
  EXPECT_EQ(cached.code, 3) << why(cached);
  EXPECT_EQ(report()["nodes"][0]["status"], "cached") << read_file(dir_ / "out" / "run.json");
}

TEST_F(AlltoallMpiTest, RankKilledMidRunFailsTheNodeAndTheCacheStaysConsistent) {
  write_workflow(small(4));
  const Result dead = run("AISPFLOW_COMM_TEST_DIE_RANK=2");
  EXPECT_NE(dead.code, 0) << why(dead);
  EXPECT_NE(dead.code, 3) << "a dead rank is a failed node, not a threshold verdict\n" << why(dead);
  EXPECT_NE((dead.out + dead.err).find("rank 2"), std::string::npos) << why(dead);
  const Result again = run();
  EXPECT_EQ(again.code, 0) << why(again);
  EXPECT_EQ(data()["verdict"], "ok");
}

TEST_F(AlltoallMpiTest, HungRankIsKilledAfterTimeout) {
  write_workflow(small(2, ", timeout_s: 5"));
  const Result hung = run("AISPFLOW_COMM_TEST_HANG_RANK=1");
  EXPECT_NE(hung.code, 0) << why(hung);
  EXPECT_NE((hung.out + hung.err).find("timeout_s"), std::string::npos) << why(hung);
  EXPECT_LT(hung.seconds, 60);
}

TEST_F(AlltoallMpiTest, CompareTableAndTheShippedWorkflowValidates) {
  std::ofstream(dir_ / "a2a.yaml") << "name: a2a\nnodes:\n"
                                   << "  two:\n    type: alltoall\n    params: " << small(2) << "\n"
                                   << "  four:\n    type: alltoall\n    params: " << small(4) << "\n"
                                   << "  table:\n    type: alltoall_compare\n    inputs: [two, four]\n";
  const Result r = run();
  ASSERT_EQ(r.code, 0) << why(r);
  const json t = json::parse(read_file(dir_ / "out" / "nodes" / "table" / "artifact.json"))["data"];
  EXPECT_EQ(t["baseline"], "two");
  ASSERT_EQ(t["rows"].size(), 8u);
  EXPECT_TRUE(t["rows"][0]["runs"][1]["busbw_over_base"].is_number()) << t.dump();
  EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "table" / "alltoall_compare.md"));

  const Result v = aispflow::test::run_in(dir_, quote(AISPFLOW_BIN) + " validate " +
                                                    quote(std::string(AISPFLOW_SOURCE_DIR) + "/workflows/moe_readiness.yaml") +
                                                    " --backend cpu");
  EXPECT_EQ(v.code, 0) << why(v);
}

}  // namespace

// The nccl transport under mpirun (`launch: mpirun`): its rank program, on a machine without a GPU, starts
// under mpirun, finds no GPU on every rank, says so for each rank and leaves no result behind (the node then
// fails with that output). On GPU machines the gpu-labelled tests run it for real.
TEST(AlltoallNcclUnderMpirun, RankProgramWithoutAGpuSaysSoAndWritesNoResult) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)";
  const fs::path worker = fs::path(AISPFLOW_BIN).parent_path() / "aispflow-comm-nccl-rank";
  if (!fs::exists(worker)) GTEST_SKIP() << "this build has no aispflow-comm-nccl-rank (it needs CUDA, nccl.h and MPI)";
  if (std::system("nvidia-smi -L > /dev/null 2>&1") == 0) GTEST_SKIP() << "a GPU is present: this is the no-GPU case";
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("aispflow-test-nccl-mpirun-" + std::to_string(rd()));
  fs::create_directories(dir);
  std::ofstream(dir / "plan.json") << R"({"warmup": 1, "iterations": 30, "points": [{"elements": 1024, "elem_bytes": 2, "skew": 0}]})";
  const Result r = aispflow::test::run_in(
      dir, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe -n 2 " +
               quote(worker.string()) + " plan.json result.json");
  EXPECT_NE(r.code, 0) << why(r);
  EXPECT_NE(r.err.find("rank 0: no CUDA device"), std::string::npos) << why(r);
  EXPECT_NE(r.err.find("rank 1: no CUDA device"), std::string::npos) << why(r);
  EXPECT_FALSE(fs::exists(dir / "result.json"));
  EXPECT_FALSE(fs::exists(dir / "result.json.partial"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}
