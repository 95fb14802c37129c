// The executor's remote seam (pipeline/remote_launcher.hpp) without Slurm: a fake launcher runs each request
// through the real job code (slurm::run_node_job, what `aispflow run-node` does) on another "machine" (a fake
// environment with its own fingerprint and GPUs), on a thread of its own. It checks what must hold whatever
// the scheduler: a hardware-bound node is keyed with the compute machine's fingerprint, never the driver's; the
// driver's machine does not decide what a remote node can run; a finished request is found again (cached,
// nothing started); a failed job fails its node, skips its dependents and lets the rest finish; light nodes
// stay in the driver.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "pipeline/cache.hpp"
#include "pipeline/dag.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/slurm/job.hpp"
#include "pipeline/slurm/job_record.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;

// Returns its `value` param; `hardware_bound` as the type says; requires `gpus` GPUs.
class ValueNode : public NodeType {
 public:
  ValueNode(std::string name, bool hardware_bound) : name_(std::move(name)), hardware_bound_(hardware_bound) {}
  std::string name() const override { return name_; }
  std::string doc() const override { return "returns value"; }
  std::vector<ParamSpec> params() const override {
    return {{"value", ParamKind::any, 0, false, ""}, {"gpus", ParamKind::integer, 0, false, ""}};
  }
  NodeTraits traits() const override { return {.hardware_bound = hardware_bound_, .exclusive = false, .version = 1}; }
  Requirements requirements(const json& p) const override { return {.gpus = p.value("gpus", 0)}; }
  NodeOutput run(NodeContext& ctx) const override {
    NodeOutput out;
    out.data["value"] = ctx.params["value"];
    out.data["inputs"] = ctx.inputs.size();
    return out;
  }

 private:
  std::string name_;
  bool hardware_bound_;
};

class Machine : public Environment {
 public:
  Machine(std::string driver, int gpus) : driver_(std::move(driver)), gpus_(gpus) {}
  std::string backend_name() const override { return "fake"; }
  json fingerprint() const override { return {{"device", "Fake GPU"}, {"driver", driver_}}; }
  int resource_total(const std::string& r) const override { return r == "gpu" ? gpus_ : 0; }
  std::optional<std::string> unmet(const Requirements&) const override { return std::nullopt; }

 private:
  std::string driver_;
  int gpus_;
};

const Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->add(std::make_unique<ValueNode>("measure", true));
    reg->add(std::make_unique<ValueNode>("light", false));
    return reg;
  }();
  return *r;
}

// Takes hardware-bound nodes; runs each request with the job code on `compute`, unless told to fail it.
class FakeLauncher : public RemoteLauncher {
 public:
  FakeLauncher(fs::path cache_root, Environment& compute) : cache_root_(std::move(cache_root)), compute_(compute) {}
  ~FakeLauncher() override {
    for (auto& t : threads_) t.join();
  }
  std::string name() const override { return "fake"; }
  std::optional<RemoteTarget> target(const NodeDecl&, const NodeType& type, const std::map<std::string, int>&) const override {
    if (!type.traits().hardware_bound) return std::nullopt;
    return RemoteTarget{{{"partition", "p1"}}, json::object(), "partition p1"};
  }
  std::optional<RemoteOutcome> recorded(const std::string& request_key) const override {
    auto r = slurm::read_result(slurm::record_dir(cache_root_, request_key));
    if (!r || r->status != "ran") return std::nullopt;
    RemoteOutcome o;
    o.key = r->key;
    o.reason = "job " + r->job_id;
    return o;
  }
  void start(RemoteRequest request, std::function<void(RemoteOutcome)> done) override {
    std::lock_guard lock(mutex_);
    started.push_back(request.node);
    requests[request.node] = request;
    const bool fail = fail_nodes.count(request.node) > 0;
    threads_.emplace_back([this, request, done, fail] {
      RemoteOutcome o;
      if (fail) {
        o.error = "job ended in state NODE_FAIL";
        done(o);
        return;
      }
      const fs::path dir = slurm::record_dir(cache_root_, request.request_key);
      fs::create_directories(dir);
      std::ofstream(dir / "request.json") << slurm::request_to_json(request).dump();
      EnvironmentSource env(compute_);
      slurm::run_node_job(dir / "request.json", cache_root_, registry(), env);
      auto result = slurm::read_result(dir);
      if (!result) {
        o.error = "no result";
      } else if (result->status == "ran" || result->status == "cached") {
        o.status = result->status == "ran" ? RemoteOutcome::Status::ran : RemoteOutcome::Status::cached;
        o.key = result->key;
        o.reason = result->reason;
      } else if (result->status == "skipped") {
        o.status = RemoteOutcome::Status::skipped;
        o.reason = result->reason;
      } else {
        o.error = result->error;
      }
      o.info = {{"job_id", result ? result->job_id : ""}};
      done(o);
    });
  }
  void cancel_all() override {}
  RemoteProgress progress() const override { return {}; }

  std::vector<std::string> started;
  std::map<std::string, RemoteRequest> requests;
  std::set<std::string> fail_nodes;

 private:
  fs::path cache_root_;
  Environment& compute_;
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

class RemoteLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SLURM_JOB_ID", "7", 1);   // what the job reports as its id (set once: the jobs run on threads)
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-remote-" + std::to_string(rd()));
    fs::create_directories(dir_);
    cache_ = std::make_unique<Cache>(dir_ / "cache");
    workflow_ = std::make_unique<Workflow>(parse_workflow(R"(nodes:
  m: {type: measure, params: {value: 1, gpus: 1}}
  after_m: {type: light, inputs: [m], params: {value: 2}}
  other: {type: measure, params: {value: 3}}
  plain: {type: light, params: {value: 4}}
)", dir_ / "wf.yaml", registry()));
    dag_ = std::make_unique<Dag>(*workflow_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunSummary run(FakeLauncher& launcher, std::vector<std::string> force = {}) {
    ExecOptions options;
    options.jobs = 2;
    options.remote = &launcher;
    options.force = std::move(force);
    EnvironmentSource env(driver_);
    Executor executor(*workflow_, *dag_, registry(), env, cache_.get());
    return executor.run(options);
  }
  static const NodeResult& node(const RunSummary& s, const std::string& name) {
    for (const auto& n : s.nodes)
      if (n.name == name) return n;
    throw std::runtime_error("no node " + name);
  }
  fs::path dir_;
  Machine driver_{"driver-1.0", 0};     // the login node: no GPU
  Machine compute_{"compute-9.9", 2};   // the compute node
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Workflow> workflow_;
  std::unique_ptr<Dag> dag_;
};

TEST_F(RemoteLauncherTest, HardwareNodesAreKeyedOnTheComputeMachineAndFoundAgain) {
  FakeLauncher first(dir_ / "cache", compute_);
  RunSummary s = run(first);
  ASSERT_EQ(s.exit_code, 0);
  // m needs a GPU the driver lacks: the compute machine decides, so it ran there.
  EXPECT_EQ(node(s, "m").status, NodeStatus::ran) << node(s, "m").reason;
  EXPECT_EQ(node(s, "m").executor, "fake");
  EXPECT_EQ(node(s, "after_m").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "after_m").executor, "") << "light nodes run in the driver";
  EXPECT_EQ((std::set<std::string>(first.started.begin(), first.started.end())), (std::set<std::string>{"m", "other"}));
  // The request carries no environment; the stored entry has the compute machine's.
  EXPECT_TRUE(first.requests["m"].key_inputs.environment.is_null());
  auto stored = cache_->lookup(node(s, "m").key);
  ASSERT_TRUE(stored.has_value());
  auto entry = json::parse(std::ifstream(stored->dir / "artifact.json"));
  EXPECT_NE(entry.dump().find("compute-9.9"), std::string::npos) << entry.dump();
  EXPECT_EQ(entry.dump().find("driver-1.0"), std::string::npos) << "the driver's fingerprint must not key it";

  FakeLauncher second(dir_ / "cache", compute_);
  RunSummary again = run(second);
  EXPECT_TRUE(second.started.empty()) << "a finished request is not started again";
  for (const auto& n : again.nodes) EXPECT_EQ(n.status, NodeStatus::cached) << n.name << ": " << n.reason;
  EXPECT_EQ(node(again, "m").reason, "cached (same inputs; job 7)");

  FakeLauncher forced(dir_ / "cache", compute_);
  RunSummary f = run(forced, {"m"});
  EXPECT_EQ(forced.started, std::vector<std::string>{"m"});
  EXPECT_TRUE(forced.requests["m"].forced);
  EXPECT_EQ(node(f, "m").status, NodeStatus::ran);
}

TEST_F(RemoteLauncherTest, AFailedJobFailsItsNodeSkipsDependentsAndTheRestFinishes) {
  FakeLauncher launcher(dir_ / "cache", compute_);
  launcher.fail_nodes = {"m"};
  RunSummary s = run(launcher);
  EXPECT_EQ(s.exit_code, kExitNodeFailed);
  EXPECT_EQ(node(s, "m").status, NodeStatus::failed);
  EXPECT_EQ(node(s, "m").error, "job ended in state NODE_FAIL");
  EXPECT_EQ(node(s, "after_m").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "after_m").reason, "upstream m failed");
  EXPECT_EQ(node(s, "other").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "plain").status, NodeStatus::ran);
}

TEST_F(RemoteLauncherTest, RequirementsAreCheckedOnTheComputeMachine) {
  Machine small("compute-9.9", 0);   // a partition without GPUs
  FakeLauncher launcher(dir_ / "cache", small);
  RunSummary s = run(launcher);
  EXPECT_EQ(node(s, "m").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "m").reason, "needs 1 gpu, this machine has 0");
  EXPECT_EQ(node(s, "other").status, NodeStatus::ran);
}

}  // namespace
}  // namespace aispflow
