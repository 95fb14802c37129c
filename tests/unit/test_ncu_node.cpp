// The `ncu` node without a GPU: the ncu command line it builds, the metric set (named, versioned, per
// architecture), reading a real `ncu --csv --page raw` export (tests/data/ncu/, from the H100), the reasons it is
// skipped (no ncu; ERR_NVGPUCTRPERM from a fake ncu on PATH), and, with a fake ncu that answers with that export,
// the two CSVs it hands to the roofline node and the binding resource of each profiled record.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "nodes/ncu_profile.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/roofline_kernels.hpp"
#include "pipeline/node_extras.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::NodeHarness;
using testing::make_record;

const std::string kRealCsv = std::string(AISPFLOW_TEST_DATA) + "/ncu/h100_replay_raw.csv";

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// Two verified GPU records (a cuBLASLt winner and one of our kernels) as a gemm_sweep on an sm_90 GPU writes them.
json gpu_sweep() {
  json a = make_record("cublaslt.sweep", "lab_square_4096", 4096, 4096, 4096, "bf16", 700);
  json b = make_record("ours.cluster", "lab_square_4096", 4096, 4096, 4096, "bf16", 650);
  json skipped = make_record("ours.naive", "lab_square_4096", 4096, 4096, 4096, "fp8_e4m3", 0, "skipped", "bf16 only");
  for (json* r : {&a, &b, &skipped}) {
    (*r)["seed"] = 42;
    (*r)["env"] = {{"gpu", "NVIDIA H100 80GB HBM3"}, {"cc", "9.0"}};
  }
  return {{"records", {a, b, skipped}}};
}

// A directory with an executable `ncu` script, put first on PATH while the test runs.
class FakeNcu {
 public:
  FakeNcu(const NodeHarness& h, const std::string& profile_body) : dir_(h.dir() / "bin") {
    std::filesystem::create_directories(dir_);
    const auto script = dir_ / "ncu";
    std::ofstream(script) << "#!/bin/sh\n"
                             "case \"$1\" in\n"
                             "  --version) echo 'NVIDIA (R) Nsight Compute Command Line Profiler'; "
                             "echo 'Version 2025.1.0.0 (build 1) (public-release)'; exit 0;;\n"
                             "  --query-metrics) echo 'Device NVIDIA H100 80GB HBM3 (GH100)'; echo 'Metric Name  Description';"
                             " for m in dram__bytes_read dram__bytes_write dram__throughput gpc__cycles_elapsed "
                             "gpu__time_duration l1tex__throughput lts__throughput "
                             "sm__pipe_tensor_op_hmma_cycles_active sm__throughput sm__warps_active; do echo \"$m  a metric\"; "
                             "done; exit 0;;\n"
                             "esac\n"
                          << profile_body;
    ::chmod(script.c_str(), 0755);
    const char* path = std::getenv("PATH");
    old_path_ = path ? path : "";
    ::setenv("PATH", (dir_.string() + ":" + old_path_).c_str(), 1);
  }
  ~FakeNcu() { ::setenv("PATH", old_path_.c_str(), 1); }

 private:
  std::filesystem::path dir_;
  std::string old_path_;
};

// A fake ncu run: the real H100 export into --log-file, and the replay's result (verified or not) into --out.
std::string fake_profile(const std::string& verified) {
  return "while [ $# -gt 0 ]; do [ \"$1\" = --log-file ] && log=$2; [ \"$1\" = --out ] && out=$2; shift; done\n"
         "cp '" + kRealCsv + "' \"$log\"\n"
         "echo '{\"verified\": true, \"profiled\": {\"verified\": " + verified + "}}' > \"$out\"\n";
}

std::string skip_reason(const std::function<void()>& f) {
  try {
    f();
  } catch (const NodeSkipped& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a skip: ") + e.what();
  }
  return "ran";
}

TEST(NcuNode, CommandLineProfilesOnlyTheReplayedLaunchWithTheMetricSet) {
  ncu::CommandOptions o;
  o.ncu = "/usr/local/cuda/bin/ncu";
  o.metrics = {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum"};
  o.log_file = "/tmp/out/ncu_0.csv";
  o.program = {"/opt/aispflow", "replay", "--record", "/tmp/out/replayed_records.json", "--index", "0"};
  EXPECT_EQ(ncu::command_line(o),
            (std::vector<std::string>{"/usr/local/cuda/bin/ncu", "--profile-from-start", "off", "--clock-control", "none",
                                      "--cache-control", "all", "--metrics",
                                      "sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum", "--csv",
                                      "--page", "raw", "--print-units", "base", "--log-file", "/tmp/out/ncu_0.csv",
                                      "/opt/aispflow", "replay", "--record", "/tmp/out/replayed_records.json", "--index",
                                      "0"}));
  o.clock_control = "base";
  const auto argv = ncu::command_line(o);
  EXPECT_EQ(argv[4], "base");
}

TEST(NcuNode, MetricSetIsNamedVersionedAndPerArchitecture) {
  const auto& set = ncu::roofline_metric_set();
  EXPECT_EQ(set.id(), "roofline/2");
  auto names = [](const std::vector<ncu::Metric>& ms) {
    std::set<std::string> out;
    for (const auto& m : ms) out.insert(m.role);
    return out;
  };
  const auto hopper = names(set.for_cc(90));
  for (const char* role : {"compute", "tensor", "l1", "l2", "dram", "occupancy", "dram_read_bytes",
                           "dram_write_bytes", "duration", "sm_clock"})
    EXPECT_TRUE(hopper.count(role)) << role;
  EXPECT_FALSE(hopper.count("tmem"));   // Blackwell's tensor memory
  EXPECT_TRUE(names(set.for_cc(100)).count("tmem"));
  EXPECT_FALSE(names(set.for_cc(100)).count("tensor"));   // no tcgen05 pipe metric in the set yet
  EXPECT_TRUE(names(set.for_cc(80)).count("tensor"));
}

TEST(NcuNode, ReadsARealNcuRawCsv) {
  const std::string csv = text_of(kRealCsv);
  ASSERT_FALSE(csv.empty()) << kRealCsv;
  const auto launches = ncu::read_launches(csv, "h100_replay_raw.csv");
  ASSERT_GE(launches.size(), 1u);
  const auto& l = launches.front();
  EXPECT_FALSE(l.kernel.empty());
  for (const auto& m : ncu::roofline_metric_set().for_cc(90)) {
    EXPECT_TRUE(l.values.count(m.name)) << m.name << " missing from " << kRealCsv;
    EXPECT_GE(l.values.count(m.name) ? l.values.at(m.name) : -1, 0) << m.name;
  }
  EXPECT_EQ(l.units.at("dram__bytes_read.sum"), "byte");
  EXPECT_EQ(l.units.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), "%");
  EXPECT_GT(l.values.at("gpu__time_duration.sum"), 0);
  // The roofline node's own reader takes the same file (raw page, a units row, ncu's messages around it).
  const auto throughput = roofline::read_throughput(csv, "h100_replay_raw.csv");
  ASSERT_EQ(throughput.size(), launches.size());
  for (const char* r : {"compute", "L2", "DRAM"}) EXPECT_TRUE(throughput.front().utilisation.count(r)) << r;
  // Not a table: an error naming the file.
  EXPECT_THROW(ncu::read_launches("==PROF== nothing profiled\n", "empty.csv"), std::runtime_error);
}

TEST(NcuNode, VersionQueryAndRefusal) {
  EXPECT_EQ(ncu::parse_version("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA "
                               "Corporation\nVersion 2025.2.1.0 (build 35987062) (public-release)\n"),
            "2025.2.1.0");
  EXPECT_FALSE(ncu::parse_version("command not found"));
  const auto names = ncu::parse_query_metrics(
      "Device NVIDIA H100 (GH100)\n------ ------\nMetric Name      Metric Description\ndram__bytes    # of bytes\n"
      "sm__throughput   SM throughput\n");
  EXPECT_EQ(names, (std::set<std::string>{"dram__bytes", "sm__throughput"}));
  EXPECT_TRUE(ncu::profiling_refused("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"));
  EXPECT_EQ(ncu::profiling_refused("==ERROR== Failed to initialize the profiler: LibraryNotLoaded\nmore"),
            "profiling not possible on this machine: ncu: Failed to initialize the profiler: LibraryNotLoaded");
  EXPECT_FALSE(ncu::profiling_refused("==PROF== Disconnected from process 1"));
}

TEST(NcuNode, SkippedWithTheReasonWhereNcuIsMissing) {
  NodeHarness h("ncu-missing");
  h.add_input("sweep", gpu_sweep());
  const auto node = make_ncu_node();
  EXPECT_NE(skip_reason([&] { h.run(*node, {{"ncu", "/nonexistent/bin/ncu"}}); }).find("ncu (Nsight Compute) not found"),
            std::string::npos);
  // None on PATH.
  std::filesystem::create_directories(h.dir() / "empty");
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (h.dir() / "empty").c_str(), 1);
  const std::string reason = skip_reason([&] { h.run(*node, {{"ncu", "aispflow-test-no-ncu"}}); });
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_NE(reason.find("not found: 'aispflow-test-no-ncu' is not on PATH"), std::string::npos) << reason;
  // Its cache key says so too.
  EXPECT_EQ(dynamic_cast<const EnvironmentFacts&>(*node).environment_facts({{"ncu", "/nonexistent/bin/ncu"}}),
            (json{{"ncu_version", "not found"}, {"metric_set", "roofline/2"}}));
}

TEST(NcuNode, SkippedWithTheReasonWhereProfilingIsNotPermitted) {
  NodeHarness h("ncu-perm");
  h.add_input("sweep", gpu_sweep());
  FakeNcu fake(h, "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                  "Performance Counters on the target device 0.' >&2\nexit 1\n");
  const auto node = make_ncu_node();
  const std::string reason = skip_reason([&] { h.run(*node, json::object()); });
  EXPECT_NE(reason.find("profiling not permitted: ncu reports ERR_NVGPUCTRPERM"), std::string::npos) << reason;
  EXPECT_EQ(dynamic_cast<const EnvironmentFacts&>(*node).environment_facts(json::object()),
            (json{{"ncu_version", "2025.1.0.0"}, {"metric_set", "roofline/2"}}));
}

TEST(NcuNode, FailsNamingTheRecordWhenNcuFails) {
  NodeHarness h("ncu-fails");
  h.add_input("sweep", gpu_sweep());
  FakeNcu fake(h, "echo '==ERROR== the application returned an error code (1)' >&2\nexit 1\n");
  try {
    h.run(*make_ncu_node(), json::object());
    FAIL() << "ran";
  } catch (const NodeSkipped& e) {
    FAIL() << "skipped: " << e.what();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("record 0 (cublaslt.sweep lab_square_4096 bf16): ncu exited with status 1"), std::string::npos)
        << what;
    EXPECT_NE(what.find("the application returned an error code"), std::string::npos) << what;
  }
  // ncu succeeded, but the replay could not confirm that the profiled launch computed the right product.
  NodeHarness unverified("ncu-unverified");
  unverified.add_input("sweep", gpu_sweep());
  FakeNcu wrong(unverified, fake_profile("false"));
  try {
    unverified.run(*make_ncu_node(), json::object());
    FAIL() << "a replay without a verified profiled launch was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("the replay did not report a verified launch"), std::string::npos) << e.what();
  }
}

TEST(NcuNode, WritesTheRooflineCsvsAndABindingResourcePerRecord) {
  NodeHarness h("ncu-fake");
  h.add_input("sweep", gpu_sweep());
  // A fake ncu that "profiles" by writing the real H100 export into --log-file.
  FakeNcu fake(h, fake_profile("true"));
  const auto out = h.run(*make_ncu_node(), json::object());
  const json& profiled = out.data["profiled"];
  ASSERT_EQ(profiled.size(), 2u);   // the skipped record is not profiled
  EXPECT_EQ(profiled[0]["record"]["provider"], "cublaslt.sweep");
  EXPECT_EQ(profiled[1]["record"]["provider"], "ours.cluster");
  for (const auto& p : profiled) {
    EXPECT_NE(p["binding_resource"], "unknown");
    EXPECT_TRUE(p["metrics_missing"].empty()) << p["metrics_missing"];
    for (const auto& m : out.data["metrics_requested"]) EXPECT_TRUE(p["metrics"].contains(m.get<std::string>())) << m;
    EXPECT_EQ(p["intensity_source"], "FLOPs / DRAM bytes measured by ncu");
  }
  EXPECT_EQ(out.data["metrics_unavailable"].size(), 0u);
  EXPECT_EQ(out.data["metric_set"]["id"], "roofline/2");
  EXPECT_EQ(out.data["ncu"]["version"], "2025.1.0.0");
  const auto command = out.data["ncu"]["command"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(command.begin(), command.end(), "replay"), command.end());
  EXPECT_EQ(command[std::find(command.begin(), command.end(), "--profile-from-start") - command.begin() + 1], "off");
  // The files the roofline node reads, also handed on in the artifact.
  EXPECT_EQ(h.read_output("kernels.csv"), out.data["roofline_inputs"]["kernels_csv"].get<std::string>());
  EXPECT_EQ(h.read_output("ncu_throughput.csv"), out.data["roofline_inputs"]["ncu_throughput_csv"].get<std::string>());
  const auto rows = roofline::read_kernel_rows(h.read_output("kernels.csv"), "kernels.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].kernel, rows[1].kernel);   // one row per record even where both ran the same kernel
  EXPECT_EQ(rows[0].label, "cublaslt.sweep lab_square_4096 bf16");

  // A roofline node with this artifact as an input draws both kernels with their binding resource.
  NodeHarness r("ncu-roofline");
  r.add_input("peak", {{"ceilings", json::array({{{"name", "hbm.read"}, {"kind", "memory"}, {"level", "hbm"},
                                                  {"unit", "GB/s"}, {"value", 3000.0}},
                                                 {{"name", "l2.read"}, {"kind", "memory"}, {"level", "l2"},
                                                  {"unit", "GB/s"}, {"value", 9000.0}},
                                                 {{"name", "tensor.bf16"}, {"kind", "compute"}, {"dtype", "bf16"},
                                                  {"unit", "TFLOP/s"}, {"value", 800.0}}})}});
  r.add_input("ncu", out.data);
  const auto roof = r.run(*make_roofline_node(), json::object());
  ASSERT_EQ(roof.data["kernels"].size(), 2u);
  for (const auto& k : roof.data["kernels"]) EXPECT_EQ(k["binding_resource"], profiled[0]["binding_resource"]);
  EXPECT_NE(r.read_output("roofline_kernels.csv").find("cublaslt.sweep lab_square_4096 bf16"), std::string::npos);
  // Two inputs that both bring kernels: which to draw is ambiguous, and the error says so.
  r.add_input("ncu_again", out.data);
  try {
    r.run(*make_roofline_node(), json::object());
    FAIL() << "two kernel sources accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("inputs 'ncu' and 'ncu_again' both bring kernels"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aispflow
