#pragma once
// Runs a workflow's DAG: one oneTBB flow-graph node per selected DAG node, inside a task_arena of
// `jobs` threads. For each node, once its upstream nodes are done, it decides -- cache hit, run, or
// skip -- and says why; nodes that run hold their resources (gpu tokens, exclusivity) while they run.
//
// The same decision logic, without running anything, gives the plan for `--dry-run` and `explain`.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/artifact.hpp"
#include "pipeline/cache.hpp"
#include "pipeline/dag.hpp"
#include "pipeline/environment.hpp"
#include "pipeline/registry.hpp"
#include "pipeline/remote_launcher.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow {

enum class NodeStatus { ran, cached, failed, skipped };
std::string to_string(NodeStatus status);

// What happened to one node in one run: one row of run.json.
struct NodeResult {
  std::string name;                 // instance name
  std::string type;
  NodeStatus status = NodeStatus::skipped;
  std::string reason;               // why it ran, was cached, or was skipped
  std::string error;                // failed nodes: what went wrong (no stack trace)
  double seconds = 0;               // wall time of run() (0 when cached or skipped)
  // When run() started and returned (UTC), for nodes that ran or failed: run.json's started_at / finished_at, so
  // anyone can check that two measuring nodes never overlapped.
  std::optional<std::chrono::system_clock::time_point> started_at, finished_at;
  std::string digest;               // artifact digest (ran or cached)
  std::string key;                  // cache key, when it could be computed
  std::optional<Verdict> verdict;   // when there is an artifact
  // Nodes started by a RemoteLauncher: its name ("slurm") and what it knows of the job (run.json's
  // "executor" and "slurm" fields). Empty for nodes that ran in this process.
  std::string executor;
  json remote;
  // Upstream instance names: declared `inputs:` in their order (as the node reads them), then upstreams it
  // reaches only through ${refs}. run.json's `inputs`: the DAG, drawn by `aispflow report`.
  std::vector<std::string> inputs;
  bool exclusive = false;           // ran alone (exclusive node): run.json's `exclusive`, the report's timeline
};

struct RunSummary {
  std::string workflow;             // workflow name
  std::filesystem::path file;       // workflow file
  std::chrono::system_clock::time_point started;
  double seconds = 0;
  int exit_code = 0;
  bool interrupted = false;
  std::string backend;              // the backend's name, or the requested one if no node needed it
  std::vector<NodeResult> nodes;    // selected nodes, in topological order
  std::vector<std::string> warnings;   // what RunObserver::warning was told (e.g. a corrupt cache entry)
  json fingerprint;                 // the machine's fingerprint when a node probed it; null otherwise
};

// The exit code a finished run deserves: 130 interrupted > 1 a node failed > 3 an artifact (ran or
// cached) did not meet its expectations > 0.
int exit_code_for(const std::vector<NodeResult>& nodes, bool interrupted);

// Told about the run as it happens. Called from worker threads: implementations synchronise themselves.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void run_started(std::size_t /*total_nodes*/) {}
  virtual void node_started(const std::string& /*name*/) {}
  virtual void node_finished(const NodeResult& /*result*/) {}
  virtual void node_log(const std::string& /*name*/, const std::string& /*message*/) {}
  virtual void warning(const std::string& /*message*/) {}
  // Remote jobs (Slurm) pending / running / done, whenever the counts change.
  virtual void remote_progress(const std::string& /*executor*/, const RemoteProgress& /*progress*/) {}
  virtual void run_finished(const RunSummary& /*summary*/) {}
};

// The machine (in practice the kernels::Backend), created the first time a node needs it. Probing the
// hardware costs time a fully cached run should not pay, so it is deferred until a node must run, is
// hardware-bound, or declares resources or requirements. Thread-safe.
class EnvironmentSource {
 public:
  // `make` may throw; the error is reported by every node that needed the environment.
  EnvironmentSource(std::string requested_name, std::function<std::unique_ptr<Environment>()> make);
  explicit EnvironmentSource(Environment& existing);   // already constructed (tests)
  Environment& get();                                   // constructs on first use; rethrows its failure
  bool created() const { return created_.load(std::memory_order_acquire); }
  // The environment's backend_name() once created, else the requested name ("auto", "cpu", ...).
  std::string name() const;
  // Memoised fingerprint() (computing it may query drivers).
  const json& fingerprint();

 private:
  std::string requested_;
  std::function<std::unique_ptr<Environment>()> make_;
  std::unique_ptr<Environment> owned_;
  Environment* env_ = nullptr;
  std::once_flag once_, fingerprint_once_;
  std::exception_ptr failure_;
  std::atomic<bool> created_{false};
  json fingerprint_;
};

struct ExecOptions {
  int jobs = 0;                        // nodes running at once; 0 = the machine's hardware threads
  Selection selection;                 // --only / --from / --until
  std::vector<std::string> force;      // --force NODE (declared or instance names)
  bool force_all = false;              // --force-all: run everything, store the results
  bool no_cache = false;               // --no-cache: neither read nor write the cache (scratch directories)
  // Library-only mode for benchmarks and tests: no cache, no directories at all; nodes get an empty
  // out_dir and must not write files. Measures the engine itself.
  bool in_memory = false;
  std::filesystem::path out_dir;       // each node's artifact is linked into out_dir/nodes/<fs-name>/; empty: none
  const std::atomic<bool>* cancel = nullptr;   // Ctrl-C: stop scheduling, running nodes see ctx.cancel
  // The machine-wide measurement lock of exclusive nodes (pipeline/measurement_lock.hpp; never in in_memory mode):
  // its directory (empty: $AISPFLOW_LOCK_DIR or /tmp/aispflow-locks) and how long a node may wait for it
  // (--lock-timeout; nullopt: as long as it takes), after which the node fails with the holder's name.
  std::filesystem::path lock_dir;
  std::optional<double> lock_timeout_s;
  RunObserver* observer = nullptr;
  // Starts the nodes it takes somewhere else (a Slurm cluster: pipeline/slurm/); null: all run here.
  RemoteLauncher* remote = nullptr;
};

// What a node needs from the machine: schedulable resources (YAML `resources:` plus the type's GPU
// count), exclusivity, and hardware requirements.
struct NodeNeeds {
  std::map<std::string, int> resources;   // e.g. {"gpu": 1}
  bool exclusive = false;
  Requirements requirements;
  bool asks_machine() const;              // true when the environment must be consulted at all
};
NodeNeeds needs_of(const NodeDecl& node, const NodeType& type, const json& complete_params);
// Why this machine cannot run a node with these needs (it is then skipped, not failed), or nullopt.
std::optional<std::string> why_machine_cannot_run(const NodeNeeds& needs, Environment& env);

// One line of a plan (dry run / explain).
struct PlannedNode {
  std::string name;
  std::string type;
  enum class Action { run, cached, skip, fail } action = Action::run;
  std::string reason;
};
std::string to_string(PlannedNode::Action action);   // "would run", "cached", "would be skipped", "would fail"

class Executor {
 public:
  // `cache` may be null only with ExecOptions::in_memory. All referenced objects must outlive the executor.
  Executor(const Workflow& workflow, const Dag& dag, const Registry& registry, EnvironmentSource& env,
           Cache* cache);

  // Runs the selected nodes. Never throws for a node's failure (that is in the summary); throws
  // InputError for a bad selection or --force name.
  RunSummary run(const ExecOptions& options);

  // What run() would do, and why, without running anything. In topological order.
  std::vector<PlannedNode> plan(const ExecOptions& options);

 private:
  struct Run;
  const Workflow& workflow_;
  const Dag& dag_;
  const Registry& registry_;
  EnvironmentSource& env_;
  Cache* cache_;
};

// Hard-links (or, across filesystems, copies) an artifact's directory into `dest`, replacing what was
// there. Skips the work when `dest` already holds this very artifact (same inode of artifact.json), so a
// cached re-run touches almost nothing. Never a symlink: `cache gc` could pull the target away.
void export_artifact(const Artifact& artifact, const std::filesystem::path& dest);

}  // namespace aispflow
