// The `ncu` node and `aispflow replay` through the real binary on the CPU backend: the shipped workflow validates,
// the node is skipped with the reason where there is no GPU (the plain roofline is still drawn), and the hidden
// replay command rejects what it cannot replay with exit code 2 and a message naming the file and record.
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

class NcuCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-ncu-cli-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  aispflow::test::CommandResult aispflow(const std::string& args) {
    return aispflow::test::run_in(dir_, "timeout 300 " + quote(AISPFLOW_BIN) + " " + args);
  }
  fs::path dir_;
};

TEST_F(NcuCli, ShippedWorkflowValidates) {
  const auto r = aispflow("validate " + quote(std::string(AISPFLOW_SOURCE_DIR) + "/workflows/roofline_ncu.yaml") +
                          " --backend cpu");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST_F(NcuCli, SkippedWithTheReasonWithoutAGpu) {
  std::ofstream(dir_ / "wf.yaml") << R"(name: ncu_cpu
nodes:
  shapes: {type: gemm_shapes, params: {shapes: [{name: tiny, m: 32, n: 32, k: 32}]}}
  sweep: {type: gemm_sweep, inputs: [shapes], params: {providers: [cpu.naive], dtypes: [fp32],
          timing: {warmup: 0, min_samples: 2, max_samples: 3, budget_s: 0.05}}}
  ncu: {type: ncu, inputs: [sweep]}
)";
  const auto r = aispflow("run wf.yaml --backend cpu --progress lines --cache cache --out out");
  ASSERT_EQ(r.code, 0) << r.out << r.err;   // a skip is not a failure
  const json report = json::parse(read_file(dir_ / "out" / "run.json"));
  for (const auto& n : report["nodes"]) {
    if (n["name"] != "ncu") continue;
    EXPECT_EQ(n["status"], "skipped");
    EXPECT_NE(n["reason"].get<std::string>().find("gpu"), std::string::npos) << n["reason"];
    return;
  }
  FAIL() << "no ncu node in " << report.dump(1);
}

TEST_F(NcuCli, ReplayRejectsWhatItCannotReplay) {
  std::ofstream(dir_ / "records.json") << R"({"records": [{"provider": "cpu.naive", "kernel": "k", "dtype": "fp32",
    "shape": {"name": "tiny", "m": 32, "n": 32, "k": 32}, "status": "ok"}]})";
  auto r = aispflow("replay --record records.json --index 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("records.json: --index 3 is out of range (1 records)"), std::string::npos) << r.err;
  r = aispflow("replay --record missing.json --index 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.json: cannot read the record file"), std::string::npos) << r.err;
  // A record that cannot be replayed here: no CUDA backend on this machine, or (with one) no seed / a CPU provider.
  r = aispflow("replay --record records.json --index 0");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("records.json record 0:"), std::string::npos) << r.err;
  // Hidden: not in the help.
  EXPECT_EQ(aispflow("--help").out.find("replay"), std::string::npos);
}

}  // namespace
