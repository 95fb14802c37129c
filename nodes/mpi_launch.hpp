#pragma once
// Launching a program under OpenMPI's mpirun from a node: the command line (root and oversubscription
// flags, hosts, the environment exported to every rank) and a supervised run through the child-process facility
// (pipeline/child_process.hpp), killed as a whole after a timeout, on Ctrl-C, or when aispflow dies. Nothing
// home-made replaces MPI's launcher.
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow {

struct MpiLaunch {
  int ranks = 1;
  std::vector<std::string> hosts;          // empty: this machine
  std::vector<std::string> extra_args;     // the user's mpirun_args, inserted before the program
  std::map<std::string, std::string> env;  // set here and exported to every rank (-x)
  std::vector<std::string> program;        // executable and its arguments
  double timeout_s = 600;
  // Start the ranks with Slurm's srun (`srun --mpi=pmix`, ranks placed by the allocation) instead of mpirun.
  bool srun = false;
  bool gpu_per_rank = false;               // srun: one GPU per rank (--gpus-per-task=1)
};

struct MpiRunResult {
  bool timed_out = false;
  bool cancelled = false;
  int exit_status = -1;    // exit code, or 128+signal
  std::string output;      // stdout and stderr of mpirun and every rank, interleaved
};

// The mpirun executable on PATH, or nullopt.
std::optional<std::filesystem::path> find_mpirun();
// The full argv (mpirun first).
std::vector<std::string> mpirun_command(const std::filesystem::path& mpirun, const MpiLaunch& launch);
// The srun executable on PATH, or nullopt.
std::optional<std::filesystem::path> find_srun();
// The full argv for Slurm's launcher (srun first): `srun --mpi=pmix --ntasks=N [--gpus-per-task=1] <args> <program>`.
// Ranks are tasks of the Slurm allocation (inside `sbatch`, or a new one); the environment is exported as it is.
std::vector<std::string> srun_command(const std::filesystem::path& srun, const MpiLaunch& launch);
// Runs it (srun_command when launch.srun, the launcher being srun) with stdout and stderr in log_file.
// Never throws for a failing program.
MpiRunResult run_mpirun(const std::filesystem::path& mpirun, const MpiLaunch& launch,
                        const std::filesystem::path& log_file, const std::atomic<bool>* cancel);

// What `aispflow hw` says about the MPI launcher: {"mpirun": path, "version": "mpirun (Open MPI) 4.1.4"} or
// {"unavailable": why}.
nlohmann::json mpi_launcher_info();

}  // namespace aispflow
