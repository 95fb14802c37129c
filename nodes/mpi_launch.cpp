#include "nodes/mpi_launch.hpp"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "pipeline/child_process.hpp"

namespace aispflow {

std::optional<std::filesystem::path> find_mpirun() { return find_program("mpirun"); }
std::optional<std::filesystem::path> find_srun() { return find_program("srun"); }

std::vector<std::string> srun_command(const std::filesystem::path& srun, const MpiLaunch& launch) {
  // PMIx: Open MPI's ranks wire up through Slurm's PMIx server, no mpirun daemon in between. The environment
  // (launch.env, set before exec) reaches every task through srun's default --export=ALL.
  std::vector<std::string> argv = {srun.string(), "--mpi=pmix", "--ntasks=" + std::to_string(launch.ranks),
                                   "--kill-on-bad-exit=1"};
  if (launch.gpu_per_rank) argv.push_back("--gpus-per-task=1");
  argv.insert(argv.end(), launch.extra_args.begin(), launch.extra_args.end());
  argv.insert(argv.end(), launch.program.begin(), launch.program.end());
  return argv;
}

std::vector<std::string> mpirun_command(const std::filesystem::path& mpirun, const MpiLaunch& launch) {
  std::vector<std::string> argv = {mpirun.string()};
  // OpenMPI refuses to run as root unless told, and refuses more ranks than cores unless told.
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  const unsigned cores = std::thread::hardware_concurrency();
  if (launch.hosts.empty() && (cores == 0 || unsigned(launch.ranks) > cores)) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), {"-n", std::to_string(launch.ranks)});
  if (!launch.hosts.empty()) {
    std::string list;
    for (const auto& h : launch.hosts) list += (list.empty() ? "" : ",") + h;
    argv.insert(argv.end(), {"--host", list});
  }
  for (const auto& [name, value] : launch.env) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), launch.extra_args.begin(), launch.extra_args.end());
  argv.insert(argv.end(), launch.program.begin(), launch.program.end());
  return argv;
}

MpiRunResult run_mpirun(const std::filesystem::path& mpirun, const MpiLaunch& launch,
                        const std::filesystem::path& log_file, const std::atomic<bool>* cancel) {
  // The child-process facility ends mpirun, its ranks and daemons with the node, and with aispflow itself should
  // it die: mpirun runs in a process group of its own under a keeper that kills whatever is left.
  ChildSpec spec;
  // `mpirun` is srun's path when the launch goes through Slurm (srun kills its tasks with itself as well).
  spec.argv = launch.srun ? srun_command(mpirun, launch) : mpirun_command(mpirun, launch);
  spec.env = environment_with(launch.env);
  spec.stop_grace = std::chrono::milliseconds(500);   // mpirun passes SIGTERM on to its ranks at once
  const LoggedRun run = run_logged(spec, log_file, launch.timeout_s, cancel);
  MpiRunResult result;
  result.timed_out = run.timed_out;
  result.cancelled = run.cancelled;
  result.exit_status = run.exit_status;
  result.output = run.output;
  return result;
}

nlohmann::json mpi_launcher_info() {
  const auto mpirun = find_mpirun();
  if (!mpirun) return {{"unavailable", "no mpirun on PATH (OpenMPI: .ci/install-deps.sh)"}};
  nlohmann::json info = {{"mpirun", mpirun->string()}};
  if (const auto text = output_of({mpirun->string(), "--version"})) {
    std::string v = text->substr(0, text->find('\n'));
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
    if (!v.empty()) info["version"] = v;
  }
  return info;
}

}  // namespace aispflow
