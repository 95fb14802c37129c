// GEMM provider plugins through the real binary: `aispflow providers` lists them, a bad plugin is bad input naming
// the file, a sweep's records name the plugin (path, sha256), and rebuilding the plugin re-runs exactly the sweeps
// that use it. Runs on the CPU backend (plugin providers skip there with the reason), so CI covers all of it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "kernels/common/sha256.hpp"
#include "support/plugins.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using aispflow::test::quote;
using aispflow::test::read_file;

class PluginCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("aispflow-test-plugins-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_ / "plugins");
    fs::copy_file(aispflow::test::test_plugin("ok"), dir_ / "plugins" / "libmine.so");
    std::ofstream(dir_ / "wf.yaml") << R"(plugins: [plugins/libmine.so]
nodes:
  mine:                    # a mixed list: runs on a machine without a GPU, where test.abi's records are skipped
    type: gemm_sweep
    params:
      providers: [test.abi, cpu.naive]
      shapes: [{name: s, m: 8, n: 8, k: 8}]
      timing: {warmup: 1, min_samples: 3, max_samples: 5, budget_s: 0.05}
  other:
    type: gemm_sweep
    params:
      providers: [cpu.naive]
      shapes: [{name: s, m: 8, n: 8, k: 8}]
      timing: {warmup: 1, min_samples: 3, max_samples: 5, budget_s: 0.05}
)";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  aispflow::test::CommandResult aispflow(const std::string& args) {
    return aispflow::test::run_in(dir_, quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) + " " + args);
  }
  json run() {
    const auto r = aispflow("run wf.yaml --backend cpu --cache cache --out out");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return json::parse(read_file(dir_ / "out" / "run.json"));
  }
  static json node(const json& report, const std::string& name) {
    for (const auto& n : report["nodes"])
      if (n["name"] == name) return n;
    return {};
  }
  json records(const std::string& node_name) {
    return json::parse(read_file(dir_ / "out" / "nodes" / node_name / "artifact.json"))["data"]["records"];
  }
  fs::path dir_;
};

TEST_F(PluginCliTest, ProvidersListsPluginProviders) {
  auto r = aispflow("providers plugins/libmine.so");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("test.abi"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libmine.so"), std::string::npos) << r.out;
  r = aispflow("providers wf.yaml --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["plugins"].size(), 1u);
  EXPECT_EQ(j["plugins"][0]["name"], "test.abi");
  EXPECT_EQ(j["plugins"][0]["plugin"]["sha256"], aispflow::kernels::sha256_file(dir_ / "plugins" / "libmine.so"));
}

TEST_F(PluginCliTest, BadPluginsAreBadInputNamingTheFile) {
  std::ofstream(dir_ / "plugins" / "libbroken.so") << "not a shared object\n";
  auto r = aispflow("providers plugins/libbroken.so");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("libbroken.so"), std::string::npos) << r.err;
  fs::copy_file(aispflow::test::test_plugin("v2_only"), dir_ / "plugins" / "libv2.so");
  std::ofstream(dir_ / "v2.yaml") << "plugins: [plugins/libv2.so]\nnodes: {a: {type: command, params: {run: 'true'}}}\n";
  r = aispflow("validate v2.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("v2.yaml:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libv2.so' implements plugin ABI v2"), std::string::npos) << r.err;
  fs::copy_file(aispflow::test::test_plugin("no_entry"), dir_ / "plugins" / "libnoentry.so");
  std::ofstream(dir_ / "noentry.yaml") << "plugins: [plugins/libnoentry.so]\nnodes: {a: {type: command, params: {run: 'true'}}}\n";
  r = aispflow("run noentry.yaml --cache cache");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("libnoentry.so' exports no entry point"), std::string::npos) << r.err;
}

TEST_F(PluginCliTest, RebuildingThePluginRerunsOnlyTheSweepsThatUseIt) {
  json first = run();
  EXPECT_EQ(node(first, "mine")["status"], "ran");
  const json rec = records("mine").at(0);
  EXPECT_EQ(rec["provider"], "test.abi");
  EXPECT_EQ(rec["status"], "skipped");   // the CPU backend cannot run plugin providers, and says so
  EXPECT_NE(rec["reason"].get<std::string>().find("requires a GPU"), std::string::npos) << rec.dump();
  EXPECT_EQ(rec["plugin"]["sha256"], aispflow::kernels::sha256_file(dir_ / "plugins" / "libmine.so"));
  EXPECT_EQ(rec["plugin"]["path"], (dir_ / "plugins" / "libmine.so").lexically_normal().string());

  json second = run();
  EXPECT_EQ(node(second, "mine")["status"], "cached");
  EXPECT_EQ(node(second, "other")["status"], "cached");

  // A "rebuild": same code, other bytes (an ELF file loads with bytes appended).
  std::ofstream(dir_ / "plugins" / "libmine.so", std::ios::app | std::ios::binary) << '\n';
  json third = run();
  EXPECT_EQ(node(third, "mine")["status"], "ran");
  EXPECT_NE(node(third, "mine")["reason"].get<std::string>().find("libmine.so changed"), std::string::npos)
      << node(third, "mine").dump();
  EXPECT_EQ(node(third, "other")["status"], "cached");
  EXPECT_EQ(records("mine").at(0)["plugin"]["sha256"], aispflow::kernels::sha256_file(dir_ / "plugins" / "libmine.so"));
}

}  // namespace
