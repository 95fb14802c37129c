// The `alltoall` node's MPI transport end to end through the real `aispflow` binary and mpirun: 2 and 4 ranks
// with verified data; one corrupted byte fails its point and the run (exit 3); an impossible threshold exits 3,
// from cache too; a rank that dies fails the node with mpirun's message and leaves a cache the next run uses.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

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

class AlltoallRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(AISPFLOW_BIN).parent_path() / "aispflow-comm-worker"))
      GTEST_SKIP() << "this build has no MPI (aispflow-comm-worker missing): install OpenMPI (.ci/install-deps.sh)";
    if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on PATH";
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-alltoall-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void write_workflow(const std::string& params) {
    std::ofstream(dir_ / "wf.yaml") << "name: a2a\nnodes:\n  probe:\n    type: alltoall\n    params: " << params << "\n";
  }
  aispflow::test::CommandResult run(const std::string& env = "") {
    return aispflow::test::run_in(dir_, env + " timeout 300 " + quote(AISPFLOW_BIN) +
                                            " run wf.yaml --backend cpu --cache cache --out out");
  }
  json probe() { return json::parse(read_file(dir_ / "out" / "nodes" / "probe" / "artifact.json"))["data"]; }
  fs::path dir_;
};

TEST_F(AlltoallRun, TwoAndFourRanksMoveVerifiedDataUnderEverySkew) {
  for (int ranks : {2, 4}) {
    write_workflow("{ranks: " + std::to_string(ranks) + ", sizes: [32KiB, 512KiB], skews: [0, 1.35], dtypes: [bf16, fp32]}");
    const auto r = run();
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const json data = probe();
    ASSERT_EQ(data["points"].size(), 8u);
    for (const auto& p : data["points"]) {
      EXPECT_EQ(p["ranks"], ranks);
      EXPECT_EQ(p["wrong"], 0) << p.dump();
      EXPECT_EQ(p["status"], "ok");
      EXPECT_EQ(p["verdict"], "PASS");
      EXPECT_GE(p["iterations"].get<int>(), 30);
      EXPECT_LE(p["p50_ms"].get<double>(), p["p99_ms"].get<double>());
      // busbw = algbw * (n-1)/n: the definition, checked on the record itself.
      EXPECT_NEAR(p["busbw_gbps"].get<double>(), p["algbw_gbps"].get<double>() * (ranks - 1) / ranks, 1e-9);
      if (p["skew"] == 0) EXPECT_NEAR(p["split_gini"].get<double>(), 0.0, 1e-3);
      else EXPECT_GT(p["split_gini"].get<double>(), 0.1);
    }
    for (const char* f : {"alltoall.csv", "alltoall.md", "heatmap_p99_bf16.svg", "heatmap_busbw_fp32.svg"})
      EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "probe" / f)) << f;
    fs::remove_all(dir_ / "cache");
  }
}

TEST_F(AlltoallRun, OneCorruptedByteFailsItsPointAndTheRun) {
  write_workflow("{ranks: 2, sizes: [32KiB], skews: [0], dtypes: [bf16]}");
  const auto r = run("AISPFLOW_COMM_TEST_CORRUPT=1");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  const json p = probe()["points"][0];
  EXPECT_EQ(p["wrong"], 1) << "exactly the one flipped byte is caught";
  EXPECT_EQ(p["status"], "failed");
  EXPECT_EQ(p["verdict"], "FAIL");
}

TEST_F(AlltoallRun, AnImpossibleThresholdExitsThreeAlsoFromCache) {
  write_workflow("{ranks: 2, sizes: [32KiB], skews: [0], thresholds: {max_p99_ms: 0.000000001}}");
  auto r = run();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(probe()["points"][0]["verdict_reason"].get<std::string>().find("max_p99_ms"), std::string::npos);
  r = run();
  EXPECT_EQ(r.code, 3) << "the verdict comes from the cached artifact too: " << r.out << r.err;
  EXPECT_NE(r.out.find("cached"), std::string::npos) << r.out;
}

TEST_F(AlltoallRun, ADeadRankFailsTheNodeCleanlyAndTheNextRunWorks) {
  write_workflow("{ranks: 2, sizes: [32KiB], skews: [0], timeout_s: 60}");
  auto r = run("AISPFLOW_COMM_TEST_ABORT_RANK=1");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("no result recorded"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "nodes" / "probe" / "artifact.json")) << "a partial result is never recorded";
  r = run();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(probe()["points"][0]["wrong"], 0);
}

}  // namespace
