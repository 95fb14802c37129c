// The `ncu` node on a GPU: `aispflow run` of a sweep of two providers on one shape, then Nsight Compute over the
// two records (each replayed once through `aispflow replay`): every metric of the set for this GPU present, a
// binding resource named for each record, the replayed launch verified. Skips with the reason where there is no
// GPU, no ncu, or profiling is not permitted (ERR_NVGPUCTRPERM). On a GPU host: $AISPFLOW_BIN names the bundle's
// aispflow (tests/support/text_files.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "kernels/cuda_plugin.hpp"
#include "pipeline/child_process.hpp"
#include "nodes/ncu_profile.hpp"
#include "support/text_files.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(NcuGpu, ProfilesTwoRecordsOfTwoProvidersWithEveryMetricAndABindingResource) {
  std::string why;
  // Through the plugin, as aispflow itself sees the GPU (the test links no CUDA code of its own).
  if (!kernels::cuda_backend_usable(&why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  if (!find_program("ncu") && !find_program("/usr/local/cuda/bin/ncu")) GTEST_SKIP() << "ncu not found on PATH";
  const fs::path dir = fs::temp_directory_path() / ("aispflow-ncu-gpu-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "wf.yaml") << R"(name: ncu_gpu_test
nodes:
  shapes:
    type: gemm_shapes
    params: {shapes: [{name: sq2048, m: 2048, n: 2048, k: 2048}]}
  sweep:
    type: gemm_sweep
    inputs: [shapes]
    params:
      providers: [cublaslt, ours.wgmma]
      dtypes: [bf16]
      timing: {warmup: 1, min_samples: 3, max_samples: 10, budget_s: 0.2}
  ncu:
    type: ncu
    inputs: [sweep]
)";
  const auto run = test::run_in(dir, test::quote(test::aispflow_binary(AISPFLOW_BIN)) +
                                         " run wf.yaml --cache cache --out run --progress lines");
  const json report = json::parse(test::read_file(dir / "run" / "run.json"), nullptr, false);
  ASSERT_TRUE(report.is_object()) << run.out << run.err;
  json ncu_node;
  for (const auto& n : report["nodes"])
    if (n["name"] == "ncu") ncu_node = n;
  ASSERT_TRUE(ncu_node.is_object()) << report.dump(1);
  if (ncu_node["status"] == "skipped" &&
      ncu_node.value("reason", std::string()).find("ERR_NVGPUCTRPERM") != std::string::npos)
    GTEST_SKIP() << ncu_node["reason"];
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  ASSERT_EQ(ncu_node["status"], "ran") << ncu_node.dump(1);

  const json art = json::parse(test::read_file(dir / "run" / "nodes" / "ncu" / "artifact.json"), nullptr, false);
  ASSERT_TRUE(art.is_object());
  const json& data = art["data"];
  const json& profiled = data["profiled"];
  ASSERT_EQ(profiled.size(), 2u) << data.dump(1);
  std::set<std::string> providers;
  // The GPU's compute capability as the sweep's records state it ("9.0" -> 90).
  const json sweep = json::parse(test::read_file(dir / "run" / "nodes" / "sweep" / "artifact.json"), nullptr, false);
  ASSERT_TRUE(sweep.is_object());
  const std::string cc_text = sweep["data"]["records"][0]["env"]["cc"];
  const int cc = std::stoi(cc_text.substr(0, cc_text.find('.'))) * 10 + std::stoi(cc_text.substr(cc_text.find('.') + 1));
  const auto expected = ncu::roofline_metric_set().for_cc(cc);
  EXPECT_TRUE(data["metrics_unavailable"].empty()) << data["metrics_unavailable"].dump(1);
  for (const auto& p : profiled) {
    providers.insert(p["record"]["provider"].get<std::string>());
    for (const auto& m : expected) {
      ASSERT_TRUE(p["metrics"].contains(m.name)) << m.name << " missing for " << p["label"];
      EXPECT_GE(p["metrics"][m.name].get<double>(), 0) << m.name;
    }
    EXPECT_GT(p["metrics"]["gpu__time_duration.sum"].get<double>(), 0);
    EXPECT_GT(p["metrics"]["dram__bytes_read.sum"].get<double>(), 0);
    const std::string binding = p["binding_resource"];
    EXPECT_TRUE(binding == "compute" || binding == "TMEM" || binding == "L2" || binding == "DRAM") << binding;
    EXPECT_TRUE(p["replay"]["verified"].get<bool>());
    EXPECT_TRUE(p["replay"]["profiled"]["verified"].get<bool>());
    EXPECT_EQ(p["replay"]["kernel"], p["kernel"]);
  }
  EXPECT_EQ(providers, (std::set<std::string>{"cublaslt", "ours.wgmma"}));
  if (const char* keep = std::getenv("AISPFLOW_TEST_KEEP"); keep && *keep)
    fs::copy(dir / "run", fs::path(keep) / "ncu_gpu_test_run", fs::copy_options::recursive);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aispflow
