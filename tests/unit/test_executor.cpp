// Executor: parallelism that really happens, resource limits and exclusivity that really hold, failure
// propagation, cache hits, early cutoff, forcing, the reasons it gives, cancellation and the plan.
// Uses a test-local registry of fake node types and a fake machine (2 GPUs), never real hardware.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "pipeline/cache.hpp"
#include "pipeline/dag.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/report.hpp"
#include "pipeline/node_extras.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------------
// What the fake nodes observed while running: every node's [start, end) interval, GPU use.

struct Interval {
  std::string node;
  Clock::time_point start, end;
  int gpus = 0;
  bool exclusive = false;
};

struct Observations {
  std::mutex mutex;
  std::vector<Interval> intervals;
  std::map<std::string, int> run_count;
  std::atomic<int> gpus_held{0};
  std::atomic<int> max_gpus_held{0};

  void reset() {
    std::lock_guard lock(mutex);
    intervals.clear();
    run_count.clear();
    gpus_held = 0;
    max_gpus_held = 0;
  }
  int runs(const std::string& node) {
    std::lock_guard lock(mutex);
    return run_count[node];
  }
  // The largest number of intervals open at one instant.
  int max_overlap() {
    std::lock_guard lock(mutex);
    std::vector<std::pair<Clock::time_point, int>> events;
    for (const auto& i : intervals) {
      events.emplace_back(i.start, +1);
      events.emplace_back(i.end, -1);
    }
    std::sort(events.begin(), events.end());  // an end sorts before a start at the same instant
    int open = 0, best = 0;
    for (const auto& [_, delta] : events) best = std::max(best, open += delta);
    return best;
  }
};

Observations& seen() {
  static Observations o;
  return o;
}

// Sleeps `ms` (polling the cancel flag), then returns {"value": value}. Optional `gpus` requirement,
// and an exclusive variant.
class SleepNode : public NodeType {
 public:
  explicit SleepNode(std::string name = "sleep", bool exclusive = false, bool hardware_bound = false)
      : name_(std::move(name)), exclusive_(exclusive), hardware_bound_(hardware_bound) {}
  std::string name() const override { return name_; }
  std::string doc() const override { return "sleeps, returns value"; }
  std::vector<ParamSpec> params() const override {
    return {{"ms", ParamKind::integer, 0, false, ""},
            {"value", ParamKind::any, 0, false, ""},
            {"salt", ParamKind::any, 0, false, "changes the key, not the output"},
            {"gpus", ParamKind::integer, 0, false, "GPUs required by the type (requirements)"},
            {"holds", ParamKind::integer, 0, false, "GPUs the YAML gave it through resources, for counting"},
            {"min_cc", ParamKind::integer, 0, false, ""}};
  }
  NodeTraits traits() const override {
    NodeTraits t;
    t.exclusive = exclusive_;
    t.hardware_bound = hardware_bound_;
    return t;
  }
  Requirements requirements(const json& params) const override {
    Requirements r;
    r.gpus = params.value("gpus", 0);
    r.min_compute_capability = params.value("min_cc", 0);
    return r;
  }
  NodeOutput run(NodeContext& ctx) const override {
    Observations& o = seen();
    const int gpus = ctx.params["gpus"].get<int>() + ctx.params["holds"].get<int>();
    int held = o.gpus_held += gpus;
    int prev = o.max_gpus_held.load();
    while (held > prev && !o.max_gpus_held.compare_exchange_weak(prev, held)) {
    }
    Interval iv{ctx.node_name, Clock::now(), {}, gpus, exclusive_};
    const auto until = iv.start + std::chrono::milliseconds(ctx.params["ms"].get<int>());
    while (Clock::now() < until && !ctx.cancelled()) std::this_thread::sleep_for(1ms);
    o.gpus_held -= gpus;
    iv.end = Clock::now();
    {
      std::lock_guard lock(o.mutex);
      o.intervals.push_back(iv);
      ++o.run_count[ctx.node_name];
    }
    if (ctx.cancelled()) throw NodeError("interrupted");
    NodeOutput out;
    out.data["value"] = ctx.params["value"];
    return out;
  }

 private:
  std::string name_;
  bool exclusive_;
  bool hardware_bound_;
};

class FailNode : public NodeType {
 public:
  std::string name() const override { return "fail"; }
  std::string doc() const override { return "always fails"; }
  std::vector<ParamSpec> params() const override { return {{"message", ParamKind::string, "boom", false, ""}}; }
  NodeOutput run(NodeContext& ctx) const override { throw NodeError(ctx.params["message"].get<std::string>()); }
};

// Reads a file named by a `path` param; its content becomes the output.
class ReadFileNode : public NodeType {
 public:
  std::string name() const override { return "read_file"; }
  std::string doc() const override { return "reads a file"; }
  std::vector<ParamSpec> params() const override { return {{"file", ParamKind::path, nullptr, true, ""}}; }
  NodeOutput run(NodeContext& ctx) const override {
    std::ifstream in(ctx.resolve(ctx.params["file"].get<std::string>()));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    NodeOutput out;
    out.data["text"] = text;
    return out;
  }
};

// Reports "expectations not met" when value != expected.
class CheckNode : public NodeType {
 public:
  std::string name() const override { return "check"; }
  std::string doc() const override { return "checks"; }
  std::vector<ParamSpec> params() const override {
    return {{"value", ParamKind::any, 0, false, ""}, {"expected", ParamKind::any, 0, false, ""}};
  }
  NodeOutput run(NodeContext& ctx) const override {
    NodeOutput out;
    out.data["ok"] = ctx.params["value"] == ctx.params["expected"];
    if (!out.data["ok"].get<bool>()) out.verdict = Verdict::expectations_not_met;
    return out;
  }
};

// Writes a file into its output directory and checks it can read its input's files.
class FilesNode : public NodeType {
 public:
  std::string name() const override { return "files"; }
  std::string doc() const override { return "writes out.txt"; }
  std::vector<ParamSpec> params() const override { return {{"text", ParamKind::string, "x", false, ""}}; }
  NodeOutput run(NodeContext& ctx) const override {
    std::string text = ctx.params["text"].get<std::string>();
    for (const auto& in : ctx.inputs) {
      std::ifstream f(in.artifact->dir / "out.txt");
      std::string upstream((std::istreambuf_iterator<char>(f)), {});
      text = upstream + "+" + text;
    }
    std::ofstream(ctx.out_dir / "out.txt") << text;
    {
      std::lock_guard lock(seen().mutex);
      ++seen().run_count[ctx.node_name];
    }
    NodeOutput out;
    out.data["text"] = text;
    return out;
  }
};

// An exclusive node that does its work in a TBB parallel loop of `chunks` sleeping pieces, like the
// bandwidth probes do, and records how many threads took part and how many its arena offers.
class ParallelNode : public NodeType {
 public:
  std::string name() const override { return "parallel"; }
  std::string doc() const override { return "exclusive, works in a parallel_for"; }
  std::vector<ParamSpec> params() const override {
    return {{"chunks", ParamKind::integer, 16, false, ""}, {"value", ParamKind::any, 0, false, ""}};
  }
  NodeTraits traits() const override { return {.exclusive = true}; }
  NodeOutput run(NodeContext& ctx) const override {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    oneapi::tbb::parallel_for(0, ctx.params["chunks"].get<int>(), [&](int) {
      std::this_thread::sleep_for(10ms);
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    {
      std::lock_guard lock(seen().mutex);
      ++seen().run_count[ctx.node_name];
    }
    NodeOutput out;
    out.data["threads"] = threads.size();
    out.data["arena"] = oneapi::tbb::this_task_arena::max_concurrency();
    out.data["value"] = ctx.params["value"];
    return out;
  }
};

// Runs an external tool: its version is a fact outside the params (environment_facts, part of the key), and it
// can find out only once it runs that the tool refuses (NodeSkipped).
struct ToolState {
  std::string version = "1.0";
  bool refuses = false;
};
ToolState& tool() {
  static ToolState t;
  return t;
}
class ToolNode : public NodeType, public EnvironmentFacts {
 public:
  std::string name() const override { return "tool"; }
  std::string doc() const override { return "runs a tool"; }
  std::vector<ParamSpec> params() const override { return {{"value", ParamKind::any, 0, false, ""}}; }
  json environment_facts(const json&) const override { return {{"tool_version", tool().version}}; }
  NodeOutput run(NodeContext& ctx) const override {
    if (tool().refuses) throw NodeSkipped("the tool refused: ERR_NOPERM");
    {
      std::lock_guard lock(seen().mutex);
      ++seen().run_count[ctx.node_name];
    }
    NodeOutput out;
    out.data = {{"value", ctx.params["value"]}};
    return out;
  }
};

const Registry& registry() {
  static const Registry* r = [] {
    auto* reg = new Registry;
    reg->add(std::make_unique<SleepNode>());
    reg->add(std::make_unique<SleepNode>("timing", true));
    reg->add(std::make_unique<SleepNode>("measure", false, true));
    reg->add(std::make_unique<FailNode>());
    reg->add(std::make_unique<ReadFileNode>());
    reg->add(std::make_unique<CheckNode>());
    reg->add(std::make_unique<FilesNode>());
    reg->add(std::make_unique<ParallelNode>());
    reg->add(std::make_unique<ToolNode>());
    return reg;
  }();
  return *r;
}

class FakeMachine : public Environment {
 public:
  std::string backend_name() const override { return "fake"; }
  json fingerprint() const override { return {{"device", "Fake GPU"}, {"driver", driver}}; }
  int resource_total(const std::string& resource) const override { return resource == "gpu" ? gpus : 0; }
  std::optional<std::string> unmet(const Requirements& req) const override {
    if (req.min_compute_capability > 90)
      return "requires sm_" + std::to_string(req.min_compute_capability) + "; found sm_90 on Fake GPU";
    return std::nullopt;
  }
  int gpus = 2;
  std::string driver = "570.1";
};

// A workflow written to a temp directory, its cache, and a way to run it.
class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seen().reset();
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-executor-" + std::to_string(rd()));
    fs::create_directories(dir_);
    cache_ = std::make_unique<Cache>(dir_ / "cache");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void load(const std::string& yaml, const std::vector<std::string>& sets = {}) {
    dag_.reset();
    workflow_ = std::make_unique<Workflow>(parse_workflow(yaml, dir_ / "wf.yaml", registry(), sets));
    dag_ = std::make_unique<Dag>(*workflow_);
  }

  RunSummary run(ExecOptions options = {}) {
    if (options.jobs == 0) options.jobs = 4;
    EnvironmentSource env(machine_);
    Executor executor(*workflow_, *dag_, registry(), env, options.in_memory ? nullptr : cache_.get());
    return executor.run(options);
  }

  std::vector<PlannedNode> plan(ExecOptions options = {}) {
    EnvironmentSource env(machine_);
    Executor executor(*workflow_, *dag_, registry(), env, cache_.get());
    return executor.plan(options);
  }

  static const NodeResult& node(const RunSummary& s, const std::string& name) {
    for (const auto& n : s.nodes)
      if (n.name == name) return n;
    throw std::runtime_error("no node " + name + " in the summary");
  }

  fs::path dir_;
  FakeMachine machine_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Workflow> workflow_;
  std::unique_ptr<Dag> dag_;
};

// ---------------------------------------------------------------------------------------------------

TEST_F(ExecutorTest, IndependentNodesRunInParallel) {
  load(R"(nodes:
  a: {type: sleep, params: {ms: 300, value: 1}}
  b: {type: sleep, params: {ms: 300, value: 2}}
  c: {type: sleep, params: {ms: 300, value: 3}}
  d: {type: sleep, params: {ms: 300, value: 4}}
)");
  ExecOptions options;
  options.jobs = 4;
  auto t0 = Clock::now();
  RunSummary s = run(options);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(s.exit_code, 0);
  for (const auto& n : s.nodes) EXPECT_EQ(n.status, NodeStatus::ran) << n.name;
  // Four 300 ms nodes: serially 1.2 s. Measured overlap says they really ran at once (the nodes only
  // sleep, so this holds on a 2-core machine too).
  EXPECT_EQ(seen().max_overlap(), 4);
  EXPECT_LT(wall, 0.9);
}

TEST_F(ExecutorTest, JobsLimitsHowManyNodesRunAtOnce) {
  load(R"(nodes:
  a: {type: sleep, params: {ms: 100, value: 1}}
  b: {type: sleep, params: {ms: 100, value: 2}}
  c: {type: sleep, params: {ms: 100, value: 3}}
  d: {type: sleep, params: {ms: 100, value: 4}}
  e: {type: sleep, params: {ms: 100, value: 5}}
)");
  ExecOptions options;
  options.jobs = 2;
  RunSummary s = run(options);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(seen().max_overlap(), 2);
}

TEST_F(ExecutorTest, GpuTokensAreNeverOversubscribed) {
  // 2 fake GPUs; gpu_* hold one through `resources`, big_* two through the type's requirements.
  load(R"(nodes:
  gpu_a: {type: sleep, resources: {gpu: 1}, params: {ms: 80, holds: 1, value: 1}}
  gpu_b: {type: sleep, resources: {gpu: 1}, params: {ms: 80, holds: 1, value: 2}}
  gpu_c: {type: sleep, resources: {gpu: 1}, params: {ms: 80, holds: 1, value: 3}}
  gpu_d: {type: sleep, resources: {gpu: 1}, params: {ms: 80, holds: 1, value: 4}}
  big_a: {type: sleep, params: {ms: 80, gpus: 2, value: 5}}
  big_b: {type: sleep, params: {ms: 80, gpus: 2, value: 6}}
  cpu_a: {type: sleep, params: {ms: 80, value: 7}}
  cpu_b: {type: sleep, params: {ms: 80, value: 8}}
)");
  ExecOptions options;
  options.jobs = 8;
  RunSummary s = run(options);
  EXPECT_EQ(s.exit_code, 0);
  for (const auto& n : s.nodes) EXPECT_EQ(n.status, NodeStatus::ran) << n.name;
  EXPECT_LE(seen().max_gpus_held.load(), 2);
  EXPECT_EQ(seen().max_gpus_held.load(), 2);  // ...and both GPUs were in use at some point
  EXPECT_GE(seen().max_overlap(), 3);          // CPU nodes ran beside GPU ones
}

TEST_F(ExecutorTest, NodeNeedingMoreThanTheMachineHasIsSkippedWithTheReason) {
  load(R"(nodes:
  huge: {type: sleep, resources: {gpu: 3}, params: {value: 1}}
  after: {type: sleep, inputs: [huge], params: {value: 2}}
  new_arch: {type: sleep, params: {min_cc: 100, value: 3}}
  fine: {type: sleep, params: {value: 4}}
)");
  RunSummary s = run();
  EXPECT_EQ(node(s, "huge").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "huge").reason, "needs 3 gpus, this machine has 2");
  EXPECT_EQ(node(s, "after").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "after").reason, "upstream huge skipped");
  EXPECT_EQ(node(s, "new_arch").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "new_arch").reason, "requires sm_100; found sm_90 on Fake GPU");
  EXPECT_EQ(node(s, "fine").status, NodeStatus::ran);
  EXPECT_EQ(s.exit_code, 0);  // skipped is not failed
}

TEST_F(ExecutorTest, ExclusiveNodesRunAlone) {
  load(R"(nodes:
  a: {type: sleep, params: {ms: 60, value: 1}}
  b: {type: sleep, params: {ms: 60, value: 2}}
  t1: {type: timing, params: {ms: 60, value: 3}}
  c: {type: sleep, params: {ms: 60, value: 4}}
  d: {type: sleep, params: {ms: 60, value: 5}}
  t2: {type: sleep, exclusive: true, params: {ms: 60, value: 6}}
  e: {type: sleep, params: {ms: 60, value: 7}}
)");
  ExecOptions options;
  options.jobs = 7;
  RunSummary s = run(options);
  EXPECT_EQ(s.exit_code, 0);
  std::vector<Interval> all;
  {
    std::lock_guard lock(seen().mutex);
    all = seen().intervals;
  }
  ASSERT_EQ(all.size(), 7u);
  for (const auto& x : all) {
    if (x.node != "t1" && x.node != "t2") continue;
    for (const auto& y : all) {
      if (y.node == x.node) continue;
      const bool overlap = y.start < x.end && x.start < y.end;
      EXPECT_FALSE(overlap) << x.node << " (exclusive) overlapped " << y.node;
    }
  }
  EXPECT_GE(seen().max_overlap(), 2);  // the ordinary nodes did run in parallel
}

TEST_F(ExecutorTest, ExclusiveNodesWithTheirOwnParallelLoopsNeverDeadlock) {
  // The shape of the roofline study: exclusive probes that run parallel loops, waiting on each other
  // and beside ordinary nodes. A worker that blocked while waiting for its turn could be stolen into
  // by a parallel loop's waiting thread and wait on itself; here nothing ever blocks a worker.
  load(R"(nodes:
  p1: {type: parallel, params: {value: 1}}
  p2: {type: parallel, params: {value: 2}}
  p3: {type: parallel, params: {value: 3}}
  a: {type: sleep, params: {ms: 30, value: 4}}
  b: {type: sleep, params: {ms: 30, value: 5}}
  after: {type: parallel, inputs: [p1, a], params: {value: 6}}
)");
  for (int jobs : {1, 2, 4}) {
    ExecOptions options;
    options.jobs = jobs;
    options.in_memory = true;
    auto done = std::async(std::launch::async, [&] { return run(options); });
    ASSERT_EQ(done.wait_for(60s), std::future_status::ready) << "deadlocked at --jobs " << jobs;
    RunSummary s = done.get();
    EXPECT_EQ(s.exit_code, 0) << "--jobs " << jobs;
    for (const auto& n : s.nodes) EXPECT_EQ(n.status, NodeStatus::ran) << n.name << " at --jobs " << jobs;
  }
}

TEST_F(ExecutorTest, ExclusiveNodeGetsEveryHardwareThreadEvenAtJobsOne) {
  // A bandwidth probe measured with fewer threads than the machine has under-reports the ceiling.
  load(R"(nodes:
  probe: {type: parallel, params: {chunks: 64, value: 1}}
  other: {type: sleep, params: {ms: 50, value: 2}}
)");
  ExecOptions options;
  options.jobs = 1;
  RunSummary s = run(options);
  ASSERT_EQ(s.exit_code, 0);
  auto art = cache_->lookup(node(s, "probe").key);
  ASSERT_TRUE(art);
  const int hardware = oneapi::tbb::info::default_concurrency();
  EXPECT_EQ(art->data()["arena"].get<int>(), hardware);
  EXPECT_EQ(art->data()["threads"].get<int>(), hardware) << "64 sleeping chunks leave every thread time to join";
}

TEST_F(ExecutorTest, FailureSkipsDescendantsWhileIndependentBranchesFinish) {
  const std::string yaml = R"(nodes:
  bad: {type: fail, params: {message: "disk on fire"}}
  child: {type: sleep, inputs: [bad], params: {value: 1}}
  grandchild: {type: sleep, inputs: [child], params: {value: 2}}
  other: {type: sleep, params: {ms: 50, value: 3}}
  other_child: {type: sleep, inputs: [other], params: {value: 4}}
)";
  load(yaml);
  RunSummary s = run();
  EXPECT_EQ(s.exit_code, kExitNodeFailed);
  EXPECT_EQ(node(s, "bad").status, NodeStatus::failed);
  EXPECT_EQ(node(s, "bad").error, "disk on fire");
  EXPECT_EQ(node(s, "child").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "child").reason, "upstream bad failed");
  EXPECT_EQ(node(s, "grandchild").reason, "upstream child skipped");
  EXPECT_EQ(node(s, "other").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "other_child").status, NodeStatus::ran);

  // Completed nodes stay cached: the re-run only retries the failure.
  RunSummary again = run();
  EXPECT_EQ(node(again, "other").status, NodeStatus::cached);
  EXPECT_EQ(node(again, "other_child").status, NodeStatus::cached);
  EXPECT_EQ(node(again, "bad").status, NodeStatus::failed);
}

TEST_F(ExecutorTest, SecondRunIsCachedAndRunsNothing) {
  load(R"(nodes:
  a: {type: sleep, params: {value: 1}}
  b: {type: files, inputs: [a], params: {text: hello}}
  c: {type: files, inputs: [b], params: {text: world}}
)");
  RunSummary first = run();
  ASSERT_EQ(first.exit_code, 0);
  for (const auto& n : first.nodes) {
    EXPECT_EQ(n.status, NodeStatus::ran);
    EXPECT_EQ(n.reason, "no cache entry");
    EXPECT_FALSE(n.digest.empty());
  }
  RunSummary second = run();
  for (std::size_t i = 0; i < second.nodes.size(); ++i) {
    EXPECT_EQ(second.nodes[i].status, NodeStatus::cached) << second.nodes[i].name;
    EXPECT_EQ(second.nodes[i].reason, "cached (same inputs)");
    EXPECT_EQ(second.nodes[i].digest, first.nodes[i].digest);
  }
  EXPECT_EQ(seen().runs("a"), 1);  // once, in the first run
  EXPECT_EQ(seen().runs("c"), 1);
}

TEST_F(ExecutorTest, FilesFlowBetweenNodesAndIntoTheOutDirectory) {
  load(R"(nodes:
  b: {type: files, params: {text: hello}}
  c: {type: files, inputs: [b], params: {text: world}}
)");
  ExecOptions options;
  options.out_dir = dir_ / "out";
  RunSummary s = run(options);
  ASSERT_EQ(s.exit_code, 0);
  std::ifstream f(dir_ / "out" / "nodes" / "c" / "out.txt");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text, "hello+world");
  EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "c" / "artifact.json"));
  EXPECT_FALSE(fs::is_symlink(dir_ / "out" / "nodes" / "c" / "out.txt"));
  // A cached re-run leaves the exported files in place.
  RunSummary again = run(options);
  EXPECT_EQ(node(again, "c").status, NodeStatus::cached);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "nodes" / "c" / "out.txt"));
}

TEST_F(ExecutorTest, EarlyCutoffKeepsDescendantsCachedWhenOutputIsUnchanged) {
  const std::string yaml = R"(nodes:
  up: {type: sleep, params: {value: 7, salt: 1}}
  down: {type: sleep, inputs: [up], params: {value: 8}}
)";
  load(yaml);
  run();
  ASSERT_EQ(seen().runs("down"), 1);
  // `salt` changes up's key but not its output: up re-runs, down stays cached.
  load(yaml, {"up.salt=2"});
  RunSummary s = run();
  EXPECT_EQ(node(s, "up").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "up").reason, "params changed: salt 1 → 2");
  EXPECT_EQ(node(s, "down").status, NodeStatus::cached);
  EXPECT_EQ(seen().runs("down"), 1);
  // A change of the output itself re-runs the descendant, naming the input.
  load(yaml, {"up.value=9"});
  RunSummary changed = run();
  EXPECT_EQ(node(changed, "down").status, NodeStatus::ran);
  EXPECT_EQ(node(changed, "down").reason, "input up changed");
}

TEST_F(ExecutorTest, ForcedNodesRunAndSayForced) {
  load(R"(nodes:
  a: {type: sleep, params: {value: 1}}
  b: {type: sleep, inputs: [a], params: {value: 2}}
)");
  run();
  ExecOptions options;
  options.force = {"a"};
  RunSummary s = run(options);
  EXPECT_EQ(node(s, "a").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "a").reason, "forced");
  EXPECT_EQ(node(s, "b").status, NodeStatus::cached);  // same output: early cutoff
  ExecOptions all;
  all.force_all = true;
  RunSummary s2 = run(all);
  EXPECT_EQ(node(s2, "b").status, NodeStatus::ran);
  EXPECT_EQ(node(s2, "b").reason, "forced");
  ExecOptions bad;
  bad.force = {"nope"};
  EXPECT_THROW(run(bad), InputError);
}

TEST_F(ExecutorTest, ReasonsNameTheChangedFileAndTheMissingOne) {
  std::ofstream(dir_ / "data.txt") << "one";
  const std::string yaml = R"(nodes:
  r: {type: read_file, params: {file: data.txt}}
)";
  load(yaml);
  RunSummary first = run();
  EXPECT_EQ(node(first, "r").status, NodeStatus::ran);
  std::ofstream(dir_ / "data.txt") << "two";
  RunSummary second = run();
  EXPECT_EQ(node(second, "r").status, NodeStatus::ran);
  EXPECT_EQ(node(second, "r").reason, "file data.txt changed");

  fs::remove(dir_ / "data.txt");
  RunSummary missing = run();
  EXPECT_EQ(node(missing, "r").status, NodeStatus::failed);
  EXPECT_NE(node(missing, "r").error.find("file 'data.txt' does not exist"), std::string::npos)
      << node(missing, "r").error;
  EXPECT_EQ(missing.exit_code, kExitNodeFailed);
}

TEST_F(ExecutorTest, HardwareBoundNodesReRunWhenTheMachineChanges) {
  load(R"(nodes:
  m: {type: measure, params: {value: 1}}
  plain: {type: sleep, params: {value: 2}}
)");
  run();
  machine_.driver = "580.2";
  RunSummary s = run();
  EXPECT_EQ(node(s, "m").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "m").reason, "environment changed: driver 570.1 → 580.2");
  EXPECT_EQ(node(s, "plain").status, NodeStatus::cached);  // not hardware-bound: the machine is not in its key
}

TEST_F(ExecutorTest, RefsAreSubstitutedFromUpstreamArtifacts) {
  load(R"(nodes:
  up: {type: sleep, params: {value: 41}}
  use: {type: sleep, params: {value: "${up.value}"}}
  chk: {type: check, params: {value: "${use.value}", expected: 41}}
)");
  RunSummary s = run();
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(node(s, "chk").verdict, Verdict::ok);
}

TEST_F(ExecutorTest, SummaryNamesEachNodesInputsWhoRanAloneAndTheMachine) {
  // run.json's inputs (declared order, then ${ref}-only upstreams), exclusive and fingerprint: the HTML report
  // draws the DAG, the timeline and the device from them.
  load(R"(nodes:
  b: {type: sleep, params: {value: 2}}
  a: {type: sleep, params: {value: 1}}
  t: {type: timing, params: {value: 3}}
  use: {type: sleep, inputs: [b, a], params: {value: "${t.value}"}}
)");
  RunSummary s = run();
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(node(s, "use").inputs, (std::vector<std::string>{"b", "a", "t"}));
  EXPECT_TRUE(node(s, "a").inputs.empty());
  EXPECT_TRUE(node(s, "t").exclusive);
  EXPECT_FALSE(node(s, "use").exclusive);
  EXPECT_EQ(s.fingerprint, machine_.fingerprint());   // a node ran, so the machine was probed
  const json report = run_report_json(s);
  EXPECT_EQ(report["nodes"][3]["inputs"], json({"b", "a", "t"}));
  EXPECT_EQ(report["nodes"][2].value("exclusive", false), true);
  EXPECT_FALSE(report["nodes"][0].contains("exclusive"));
  EXPECT_EQ(report["fingerprint"]["device"], "Fake GPU");
  EXPECT_FALSE(report.contains("warnings"));   // none in this run
}

TEST_F(ExecutorTest, UnmetExpectationsGiveExitThreeEvenWhenCached) {
  load(R"(nodes:
  v: {type: sleep, params: {value: 1}}
  chk: {type: check, params: {value: "${v.value}", expected: 2}}
)");
  RunSummary s = run();
  EXPECT_EQ(s.exit_code, kExitExpectationsNotMet);
  EXPECT_EQ(node(s, "chk").verdict, Verdict::expectations_not_met);
  RunSummary cached = run();
  EXPECT_EQ(node(cached, "chk").status, NodeStatus::cached);
  EXPECT_EQ(cached.exit_code, kExitExpectationsNotMet);
}

TEST_F(ExecutorTest, CancelStopsSchedulingAndInterruptsRunningNodes) {
  load(R"(nodes:
  long: {type: sleep, params: {ms: 10000, value: 1}}
  after: {type: sleep, inputs: [long], params: {value: 2}}
  quick: {type: sleep, params: {value: 3}}
)");
  std::atomic<bool> cancel{false};
  ExecOptions options;
  options.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  auto t0 = Clock::now();
  RunSummary s = run(options);
  stopper.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3.0);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.exit_code, kExitInterrupted);
  EXPECT_EQ(node(s, "long").status, NodeStatus::failed);
  EXPECT_EQ(node(s, "long").error, "interrupted");
  EXPECT_EQ(node(s, "after").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "after").reason, "interrupted");
  EXPECT_EQ(node(s, "quick").status, NodeStatus::ran);  // it finished before Ctrl-C
}

TEST_F(ExecutorTest, PlanSaysWhatWouldRunAndWhyWithoutRunningAnything) {
  const std::string yaml = R"(nodes:
  a: {type: sleep, params: {value: 1}}
  b: {type: sleep, inputs: [a], params: {value: 2}}
  c: {type: sleep, params: {value: 3}}
  g: {type: sleep, resources: {gpu: 5}, params: {value: 4}}
)";
  load(yaml);
  auto before = plan();
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(before[0].action, PlannedNode::Action::run);
  EXPECT_EQ(before[0].reason, "no cache entry");
  EXPECT_EQ(before[1].reason, "depends on a, which will re-run");
  EXPECT_EQ(before[3].action, PlannedNode::Action::skip);
  EXPECT_EQ(seen().runs("a"), 0);

  run();
  load(yaml, {"c.value=30"});
  auto after = plan();
  EXPECT_EQ(after[0].action, PlannedNode::Action::cached);
  EXPECT_EQ(after[1].action, PlannedNode::Action::cached);
  EXPECT_EQ(after[2].action, PlannedNode::Action::run);
  EXPECT_EQ(after[2].reason, "params changed: value 3 → 30");
}

TEST_F(ExecutorTest, OnlyTakesUnselectedUpstreamResultsFromTheCache) {
  const std::string yaml = R"(nodes:
  a: {type: files, params: {text: A}}
  b: {type: files, inputs: [a], params: {text: B}}
)";
  load(yaml);
  ExecOptions only_b;
  only_b.selection.only = {"b"};
  RunSummary before = run(only_b);
  EXPECT_EQ(node(before, "b").status, NodeStatus::skipped);
  EXPECT_EQ(node(before, "b").reason, "upstream a is not selected and has no cached result");
  run();
  load(yaml, {"b.text=BB"});
  RunSummary s = run(only_b);
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(node(s, "b").status, NodeStatus::ran);
}

TEST_F(ExecutorTest, NoCacheRunsEverythingAndWritesNothingToTheCache) {
  load(R"(nodes:
  a: {type: files, params: {text: A}}
  b: {type: files, inputs: [a], params: {text: B}}
)");
  ExecOptions options;
  options.no_cache = true;
  options.out_dir = dir_ / "out";
  RunSummary s = run(options);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(node(s, "b").reason, "forced");
  EXPECT_TRUE(cache_->list().empty());
  std::ifstream f(dir_ / "out" / "nodes" / "b" / "out.txt");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text, "A+B");
}

TEST_F(ExecutorTest, InMemoryModeRunsWithoutCacheOrDirectories) {
  load(R"(nodes:
  a: {type: sleep, params: {value: 1}}
  b: {type: sleep, inputs: [a], params: {value: 2}}
)");
  ExecOptions options;
  options.in_memory = true;
  RunSummary s = run(options);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(node(s, "b").status, NodeStatus::ran);
  EXPECT_FALSE(node(s, "b").digest.empty());
}

TEST_F(ExecutorTest, NodeSkippedWhileRunningIsSkippedWithItsReasonAndNotCached) {
  load(R"(nodes:
  t: {type: tool, params: {value: 1}}
  child: {type: sleep, inputs: [t], params: {value: 2}}
)");
  tool() = ToolState{"1.0", true};
  RunSummary s = run();
  EXPECT_EQ(s.exit_code, kExitOk);   // a skip is not a failure
  EXPECT_EQ(node(s, "t").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "t").reason, "the tool refused: ERR_NOPERM");
  EXPECT_EQ(node(s, "child").status, NodeStatus::skipped);
  EXPECT_EQ(node(s, "child").reason, "upstream t skipped");
  // Nothing was stored: once the tool agrees, the node runs.
  tool().refuses = false;
  RunSummary again = run();
  EXPECT_EQ(node(again, "t").status, NodeStatus::ran);
  EXPECT_EQ(node(again, "t").reason, "no cache entry");
  EXPECT_EQ(node(again, "child").status, NodeStatus::ran);
}

TEST_F(ExecutorTest, EnvironmentFactsOfANodeAreInItsKeyAndNamedWhenTheyChange) {
  load(R"(nodes:
  t: {type: tool, params: {value: 1}}
)");
  tool() = ToolState{"1.0", false};
  ASSERT_EQ(node(run(), "t").status, NodeStatus::ran);
  EXPECT_EQ(node(run(), "t").status, NodeStatus::cached);
  tool().version = "2.0";
  RunSummary s = run();
  EXPECT_EQ(node(s, "t").status, NodeStatus::ran);
  EXPECT_EQ(node(s, "t").reason, "environment changed: node.tool_version 1.0 → 2.0");
  tool() = ToolState{};
}

TEST(ExitCode, InterruptedBeatsFailedBeatsExpectations) {
  auto result = [](NodeStatus status, std::optional<Verdict> verdict) {
    NodeResult r;
    r.status = status;
    r.verdict = verdict;
    return r;
  };
  NodeResult failed = result(NodeStatus::failed, std::nullopt);
  NodeResult unmet = result(NodeStatus::cached, Verdict::expectations_not_met);
  NodeResult fine = result(NodeStatus::ran, Verdict::ok);
  EXPECT_EQ(exit_code_for({fine}, false), 0);
  EXPECT_EQ(exit_code_for({fine, unmet}, false), 3);
  EXPECT_EQ(exit_code_for({unmet, failed}, false), 1);
  EXPECT_EQ(exit_code_for({unmet, failed}, true), 130);
}

}  // namespace
}  // namespace aispflow
