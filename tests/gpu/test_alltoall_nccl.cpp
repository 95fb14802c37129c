// The alltoall node's nccl transport on every GPU of this machine, through `aispflow run --backend cuda`:
// every point verified (wrong == 0) and timed, ranks == the GPU count; with one GPU, n = 1 is recorded
// honestly (busbw 0). A second node asking for other NCCL settings in the same process is refused.
// Skips where there is no GPU (nvidia-smi lists none).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "support/gpus.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using aispflow::test::quote;
using aispflow::test::read_file;

class AlltoallNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = aispflow::test::nvidia_smi_gpu_count();
    if (gpus_ == 0) GTEST_SKIP() << "no GPU (nvidia-smi lists none): the nccl transport needs one";
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-a2a-nccl-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  aispflow::test::CommandResult run(const std::string& yaml, const std::string& env = "") {
    std::ofstream(dir_ / "a2a.yaml") << yaml;
    return aispflow::test::run_in(dir_, env + " timeout 600 " + quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) +
                                            " run a2a.yaml --backend cuda --progress lines --cache cache --out out");
  }
  json data(const std::string& node) {
    return json::parse(read_file(dir_ / "out" / "nodes" / node / "artifact.json"))["data"];
  }
  int gpus_ = 0;
  fs::path dir_;
};

TEST_F(AlltoallNcclTest, EveryGpuVerifiedAndTimed) {
  const auto r = run("name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: nccl, "
                     "sizes: [32768, 2097152], skews: [0, 1.35], dtypes: [bf16, fp8]}\n");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json d = data("a2a");
  EXPECT_EQ(d["ranks"], gpus_);
  EXPECT_FALSE(d["nccl_version"].get<std::string>().empty());
  ASSERT_EQ(d["points"].size(), 8u);
  for (const auto& p : d["points"]) {
    EXPECT_EQ(p["status"], "ok") << p.dump();
    EXPECT_EQ(p["wrong"], 0);
    EXPECT_GT(p["p50_ms"].get<double>(), 0);
    EXPECT_GT(p["algbw_gbps"].get<double>(), 0);
    EXPECT_GT(p["b2b_time_ms"].get<double>(), 0) << "the back-to-back measure beside the per-exchange one";
    if (gpus_ == 1) {
      EXPECT_EQ(p["busbw_gbps"].get<double>(), 0) << "n = 1: busbw = algbw x (n-1)/n = 0";
    }
  }
}

TEST_F(AlltoallNcclTest, DifferentNcclEnvInOneProcessIsRefused) {
  const auto r = run("name: a2a\nnodes:\n  base:\n    type: alltoall\n    params: {transport: nccl, sizes: [65536], "
                     "skews: [0], dtypes: [bf16]}\n  tuned:\n    type: alltoall\n    inputs: [base]\n"
                     "    params: {transport: nccl, sizes: [65536], skews: [0], dtypes: [bf16], "
                     "nccl_env: {NCCL_PROTO: Simple}}\n");
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("once per process"), std::string::npos) << r.out << r.err;
}

// Issue 24: nccl_env reaches NCCL for the exchange only; a command node that runs after it must not inherit it
// (its cache key does not hold it). The broken case is the old setenv on the aispflow process: the command would
// print the value.
TEST_F(AlltoallNcclTest, NcclEnvDoesNotLeakIntoLaterNodes) {
  const auto r = run("name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: nccl, sizes: [65536], "
                     "skews: [0], dtypes: [bf16], nccl_env: {NCCL_PROTO: Simple}}\n  after:\n    type: command\n"
                     "    inputs: [a2a]\n    params: {run: 'echo \"proto=[$NCCL_PROTO]\"'}\n",
                     "env -u NCCL_PROTO");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(data("a2a")["nccl_env"]["NCCL_PROTO"], "Simple");
  const std::string out = data("after").value("stdout_tail", std::string());
  EXPECT_NE(out.find("proto=[]"), std::string::npos) << out;
}

// The broken case of the data check, for both launches: rank 0 sends one wrong element to the last rank
// (the AISPFLOW_COMM_TEST_CORRUPT hook); every point then counts it, fails and is never timed, and the run exits 3.
TEST_F(AlltoallNcclTest, OneWrongElementFailsEveryPointUntimed) {
  const bool mpirun = std::system("command -v mpirun > /dev/null 2>&1") == 0;
  for (const std::string launch : {"process", "mpirun"}) {
    if (launch == "mpirun" && !mpirun) continue;
    SCOPED_TRACE(launch);
    const auto r = run("name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: nccl, launch: " + launch +
                           ", sizes: [65536], skews: [0, 1.35], dtypes: [bf16]}\n",
                       "AISPFLOW_COMM_TEST_CORRUPT=1");
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    const json d = data("a2a");
    ASSERT_EQ(d["points"].size(), 2u);
    for (const auto& p : d["points"]) {
      EXPECT_EQ(p["status"], "failed") << p.dump();
      EXPECT_EQ(p["wrong"], 1) << p.dump();
      EXPECT_FALSE(p.contains("p50_ms")) << "a point with wrong data must not be timed: " << p.dump();
    }
  }
}

// The same transport launched through mpirun, one rank per GPU (launch: mpirun): every point verified and
// timed, the ranks placed one per GPU. Needs mpirun on the GPU machine (skips with the reason otherwise).
// The kept share as a device copy beside the exchange: still every element verified (the check covers it), and the
// broken case (one wrong element) still fails it.
TEST_F(AlltoallNcclTest, LocalCopyIsVerifiedToo) {
  for (const std::string env : {"", "AISPFLOW_COMM_TEST_CORRUPT=1"}) {
    SCOPED_TRACE(env);
    std::error_code ec;
    fs::remove_all(dir_ / "cache", ec);   // the test hook is not in the cache key: the second run must not reuse the first
    const auto r = run("name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: nccl, local_copy: true, "
                       "sizes: [65536, 2097152], skews: [0, 1.35], dtypes: [bf16]}\n", env);
    EXPECT_EQ(r.code, env.empty() ? 0 : 3) << r.out << r.err;
    const json d = data("a2a");
    EXPECT_EQ(d["local_copy"], true);
    for (const auto& p : d["points"]) EXPECT_EQ(p["status"], env.empty() ? "ok" : "failed") << p.dump();
  }
}

TEST_F(AlltoallNcclTest, UnderMpirunOneRankPerGpu) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on this GPU machine";
  const auto r = run("name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: nccl, launch: mpirun, "
                     "sizes: [32768, 2097152], skews: [0, 1.35], dtypes: [bf16]}\n");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json d = data("a2a");
  EXPECT_EQ(d["ranks"], gpus_);
  EXPECT_EQ(d["launch"], "mpirun");
  EXPECT_FALSE(d["mpi_library"].get<std::string>().empty());
  ASSERT_EQ(d["placement"].size(), std::size_t(gpus_));
  ASSERT_EQ(d["points"].size(), 4u);
  for (const auto& p : d["points"]) {
    EXPECT_EQ(p["status"], "ok") << p.dump();
    EXPECT_EQ(p["wrong"], 0);
    EXPECT_GT(p["p50_ms"].get<double>(), 0);
  }
}

}  // namespace

