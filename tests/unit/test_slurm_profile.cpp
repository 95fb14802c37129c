// The Slurm executor's settings (pipeline/slurm/profile.hpp): layers apply in order (section, type, declared
// name, instance name); anything malformed or unknown is an error naming file:line:column and the field.
// The job record's request survives its round trip through JSON (the job runs exactly what the driver asked).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/errors.hpp"
#include "pipeline/slurm/job_record.hpp"
#include "pipeline/slurm/profile.hpp"

namespace {

namespace fs = std::filesystem;
using aispflow::InputError;
using namespace aispflow::slurm;

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-profile-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& text) {
    fs::path p = dir_ / "wf.yaml";
    std::ofstream(p) << text;
    return p;
  }
  std::string error_of(const std::string& text) {
    try {
      load_profile(write(text));
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST_F(ProfileTest, LayersOverrideFieldByField) {
  Profile p = load_profile(write(R"(name: x
nodes: {}
executor:
  slurm:
    partition: cpu
    time: "10"
    account: lab
    poll_interval_s: 0.2
    types:
      gemm_sweep: {partition: h100, sbatch_args: [--constraint=nvlink]}
    nodes:
      sweep: {time: "60"}
      "sweep[dtype=fp8]": {partition: h200}
)"));
  EXPECT_DOUBLE_EQ(p.poll_interval_s, 0.2);
  Settings plain = p.for_node("shapes", "shapes", "gemm_shapes");
  EXPECT_EQ(plain.partition, "cpu");
  EXPECT_FALSE(plain.where.has_value()) << "the default (hardware-bound -> slurm) is the launcher's";
  Settings bf16 = p.for_node("sweep[dtype=bf16]", "sweep", "gemm_sweep");
  EXPECT_EQ(bf16.partition, "h100");
  EXPECT_EQ(bf16.time, "60");
  EXPECT_EQ(bf16.account, "lab");
  ASSERT_TRUE(bf16.sbatch_args.has_value());
  EXPECT_EQ(bf16.sbatch_args->at(0), "--constraint=nvlink");
  Settings fp8 = p.for_node("sweep[dtype=fp8]", "sweep", "gemm_sweep");
  EXPECT_EQ(fp8.partition, "h200");
  EXPECT_EQ(fp8.time, "60");
}

TEST_F(ProfileTest, AProfileFileMayHoldTheSlurmMapAtTheTop) {
  Profile p = load_profile(write("slurm:\n  qos: high\n  nodes:\n    a: {where: local, ntasks: 4}\n"));
  EXPECT_EQ(p.defaults.qos, "high");
  EXPECT_EQ(p.for_node("a", "a", "command").where, "local");
  EXPECT_EQ(p.for_node("a", "a", "command").ntasks, 4);
}

TEST_F(ProfileTest, NoSectionIsAnEmptyProfile) {
  Profile p = load_profile(write("name: x\nnodes: {a: {type: command}}\n"));
  EXPECT_FALSE(p.defaults.partition.has_value());
  EXPECT_TRUE(p.nodes.empty());
}

TEST_F(ProfileTest, MistakesNameFileLineAndField) {
  std::string e = error_of("executor:\n  slurm:\n    partiton: h100\n");
  EXPECT_NE(e.find("wf.yaml:3:5"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'partiton'"), std::string::npos) << e;
  EXPECT_NE(e.find("allowed: where, partition"), std::string::npos) << e;

  e = error_of("executor:\n  slurm:\n    types:\n      gemm_sweep: {where: cluster}\n");
  EXPECT_NE(e.find("wf.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("types.gemm_sweep.where"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 'slurm' or 'local'"), std::string::npos) << e;

  e = error_of("executor:\n  slurm:\n    cpus: -2\n");
  EXPECT_NE(e.find("expected a positive integer"), std::string::npos) << e;
  e = error_of("executor:\n  slurm:\n    sbatch_args: --exclusive\n");
  EXPECT_NE(e.find("expected a list of sbatch arguments"), std::string::npos) << e;
  e = error_of("executor:\n  slurm:\n    poll_interval_s: 0\n");
  EXPECT_NE(e.find("poll_interval_s"), std::string::npos) << e;
}

TEST(JobRecord, RequestRoundTrip) {
  aispflow::RemoteRequest r;
  r.workflow = "wf";
  r.node = "sweep[dtype=fp8]";
  r.type = "gemm_sweep";
  r.request_key = "abcdef";
  r.key_inputs.type = "gemm_sweep";
  r.key_inputs.params = {{"providers", {"cublaslt"}}};
  r.key_inputs.input_digests["shapes"] = "1234";
  r.hardware_bound = r.exclusive = true;
  r.resources = {{"gpu", 1}};
  r.inputs.push_back({"shapes", "shapes", "k1"});
  r.workflow_dir = "/shared/study";
  r.target = {{{"partition", "h100"}, {"gpus", 1}}, {{"time", "10"}}, "partition h100, 1 GPU"};
  aispflow::RemoteRequest back = request_from_json(request_to_json(r));
  EXPECT_EQ(request_to_json(back), request_to_json(r));
  EXPECT_EQ(back.key_inputs, r.key_inputs);
  EXPECT_EQ(back.inputs[0].key, "k1");
  EXPECT_EQ(back.target.label, "partition h100, 1 GPU");
}

TEST(JobRecord, TimesKeepTheirMilliseconds) {
  const auto t = parse_time_ms("2026-11-25T14:23:09.076Z");
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000, 76);
}

}  // namespace
