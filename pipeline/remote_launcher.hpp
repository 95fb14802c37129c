#pragma once
// A second way to start a node body: somewhere other than this process (a Slurm job on a compute node).
//
// The executor keeps everything else -- the DAG, the flow graph, cache decisions with their reasons,
// failure propagation, run.json -- on its one code path. For a node the launcher takes, the executor
// computes the key inputs as usual and hands them over instead of calling NodeType::run(); the body runs
// elsewhere (`aispflow run-node`), stores its artifact in the shared cache under the key it computes
// itself, and the launcher reports how it ended. Hardware-bound nodes are keyed with the *compute node's*
// environment fingerprint, which this process cannot know: the executor therefore identifies such a
// request by a request key (the key inputs with the target -- partition and resources -- in place of the
// environment), and the launcher remembers, per request key, the job and the key its result was stored
// under (pipeline/slurm/job_record.hpp). That record is also how a re-run after a driver crash adopts
// finished and still-running jobs instead of submitting them again.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/artifact.hpp"
#include "pipeline/cache.hpp"

namespace aispflow {

struct NodeDecl;
class NodeType;

// Where a remote node runs, as the launcher describes it.
struct RemoteTarget {
  json where;          // what selects the machine (partition, GPUs, constraints): part of the request key
  json how;            // what only shapes the submission (account, QOS, time limit): not part of any key
  std::string label;   // for people: "partition h100, 1 GPU"
};

struct RemoteInput {
  std::string alias;
  std::string node;
  std::string key;          // cache key of the upstream artifact (the job reads it from the shared cache)
};

// Everything a job needs to run one node, without the workflow file.
struct RemoteRequest {
  std::string workflow;               // workflow name (for messages and the measurement lock)
  std::string node;                   // instance name
  std::string type;
  std::string request_key;            // identifies this request (see above); equals the key for non-hardware nodes
  KeyInputs key_inputs;               // environment: null; the job adds its own fingerprint when hardware_bound
  bool hardware_bound = false;
  bool exclusive = false;
  bool forced = false;                // --force: run even when the entry exists, replace it
  std::map<std::string, int> resources;
  std::vector<RemoteInput> inputs;
  std::string workflow_dir;           // relative paths in params resolve against it
  RemoteTarget target;                // where it runs (from target())
};

// How a remote node ended.
struct RemoteOutcome {
  enum class Status { ran, cached, skipped, failed } status = Status::failed;
  std::string key;                    // the cache key the body stored under (ran / cached)
  std::string reason;                 // skipped: why; cached: how it was found
  std::string error;                  // failed: Slurm's state and the tail of the job's log
  std::optional<std::chrono::system_clock::time_point> started_at, finished_at;
  json info = json::object();         // run.json's "slurm" object: job id, partition, host, times, state
};

// Counts for the progress line.
struct RemoteProgress {
  std::size_t pending = 0, running = 0, done = 0;
};

class RemoteLauncher {
 public:
  virtual ~RemoteLauncher() = default;
  virtual std::string name() const = 0;   // "slurm": run.json's "executor"
  // Where this node runs: nullopt keeps it in this process; otherwise a description of the target that
  // becomes part of the request key of hardware-bound nodes (a partition's results keep their own keys).
  virtual std::optional<RemoteTarget> target(const NodeDecl& decl, const NodeType& type,
                                             const std::map<std::string, int>& resources) const = 0;
  // The result an earlier job (this run's driver or a crashed one) recorded for this request, if it
  // finished and stored an artifact: its key, job id and host. Reads files only.
  virtual std::optional<RemoteOutcome> recorded(const std::string& request_key) const = 0;
  // Starts the request (or adopts a job of an earlier driver still working on it) and calls `done` once,
  // from any thread, when it has ended. Never throws: a submission that fails is a failed outcome.
  virtual void start(RemoteRequest request, std::function<void(RemoteOutcome)> done) = 0;
  // Stops every job this launcher started or adopted (Ctrl-C); their `done` callbacks still come.
  virtual void cancel_all() = 0;
  virtual RemoteProgress progress() const = 0;
};

}  // namespace aispflow
