#pragma once
// The Slurm launcher: starts a node as one batch job running `aispflow run-node` on a compute node, and
// learns how it ended from the job's result file and from Slurm.
//
// One poller thread asks Slurm about every job in flight with a single `squeue` per tick (`scontrol show
// job` only for a job that left the queue without a result), never once per job. sacct is not used: it
// needs slurmdbd, which many clusters' users cannot rely on. A job's result file is the primary signal; a
// job that Slurm says ended without one failed (cancelled, out of time, node lost, killed), and its node
// fails with Slurm's state and the tail of its log. On Ctrl-C every job in flight is cancelled with one
// `scancel`. Assumes what Snakemake's Slurm executor assumes: the cache directory and the aispflow binary
// are on a filesystem the compute nodes share.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "pipeline/executor.hpp"
#include "pipeline/slurm/job_record.hpp"
#include "pipeline/slurm/profile.hpp"

namespace aispflow::slurm {

struct LauncherOptions {
  Profile profile;
  std::filesystem::path cache_root;          // absolute: jobs run in another working directory
  std::filesystem::path executable;          // the aispflow binary the jobs run (this one)
  std::string backend = "auto";              // --backend, passed on to the jobs
  const std::atomic<bool>* cancel = nullptr; // Ctrl-C
  RunObserver* observer = nullptr;           // progress counts
};

// nullopt when sbatch, squeue and scancel are installed and the controller answers; else what is wrong.
std::optional<std::string> cluster_problem();

class Launcher : public RemoteLauncher {
 public:
  // Throws InputError when the cluster cannot be used (cluster_problem()), before anything is submitted.
  explicit Launcher(LauncherOptions options);
  ~Launcher() override;   // cancels jobs still in flight (an engine error), stops the poller

  std::string name() const override { return "slurm"; }
  std::optional<RemoteTarget> target(const NodeDecl& decl, const NodeType& type,
                                     const std::map<std::string, int>& resources) const override;
  std::optional<RemoteOutcome> recorded(const std::string& request_key) const override;
  void start(RemoteRequest request, std::function<void(RemoteOutcome)> done) override;
  void cancel_all() override;
  RemoteProgress progress() const override;

  // The sbatch command line for a request (without the script and its arguments): tests and docs.
  std::vector<std::string> sbatch_options(const RemoteRequest& request) const;

 private:
  struct Job {
    std::string id;
    std::string node;
    std::filesystem::path dir;
    std::function<void(RemoteOutcome)> done;
    std::chrono::system_clock::time_point submitted_at;
    RemoteTarget target;
    std::string state = "PENDING";   // Slurm's, as last seen
    std::string host, partition;   // as squeue last said (the partition: also when Slurm chose the default)
    bool adopted = false;
    std::optional<std::chrono::steady_clock::time_point> ended_without_result;
  };
  void poll_loop();
  void poll_once();
  std::optional<std::string> submit(const RemoteRequest& request, const std::filesystem::path& dir, std::string& error);
  void complete(Job& job, const std::optional<JobResult>& result, const std::string& slurm_state);
  const std::filesystem::path& script();

  LauncherOptions opt_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Job> active_;      // by job id
  std::size_t done_ = 0;
  bool stopping_ = false;
  bool cancelled_ = false;                 // scancel sent for everything in flight
  std::chrono::steady_clock::time_point last_cancel_{};
  std::chrono::steady_clock::time_point last_squeue_warning_{};   // poller thread only
  RemoteProgress last_reported_;
  std::once_flag script_once_;
  std::filesystem::path script_;
  std::thread poller_;
};

}  // namespace aispflow::slurm
