// The `p2p` node through `aispflow run --backend cuda` on every GPU of this machine: an n x n matrix per method,
// every measured cell verified (the copy checked against the source before it was timed), the diagonal (each
// GPU's own memory) measured even with one GPU, the heatmaps written. Skips where there is no GPU.
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

TEST(P2pNode, MatrixOfEveryGpuVerifiedWithHeatmaps) {
  const int gpus = aispflow::test::nvidia_smi_gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no GPU (nvidia-smi lists none): the p2p node needs one";
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("aispflow-test-p2p-" + std::to_string(rd()));
  fs::create_directories(dir);
  std::ofstream(dir / "p2p.yaml") << "name: p2p\nnodes:\n  pairs:\n    type: p2p\n    params: {size_mib: 64}\n";
  const auto r = aispflow::test::run_in(dir, "timeout 300 " + quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) +
                                                 " run p2p.yaml --backend cuda --progress lines --cache cache --out out");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path node = dir / "out" / "nodes" / "pairs";
  const json d = json::parse(read_file(node / "artifact.json"))["data"];
  EXPECT_EQ(d["gpus"], gpus);
  for (const char* method : {"copy_engine", "kernel_read"}) {
    const json& values = d["matrices"][method]["values"];
    ASSERT_EQ(values.size(), std::size_t(gpus)) << method;
    for (int i = 0; i < gpus; ++i) {
      ASSERT_EQ(values[i].size(), std::size_t(gpus));
      EXPECT_GT(values[i][i].get<double>(), 0) << method << ": the diagonal is each GPU's own memory";
    }
    const std::string svg = read_file(node / (std::string("p2p_") + method + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos) << method;
    EXPECT_NE(svg.find("GB/s"), std::string::npos) << method;
  }
  int measured = 0;
  for (const auto& p : d["pairs"])
    if (p.contains("value")) {
      ++measured;
      EXPECT_TRUE(p["verified"].get<bool>()) << p.dump();
    }
  EXPECT_GE(measured, 2 * gpus) << "at least both methods on every diagonal cell";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
