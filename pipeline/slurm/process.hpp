#pragma once
// Runs a short-lived command (sbatch, squeue, scancel, scontrol) and captures what it printed. The Slurm
// launcher calls these a few times a second at most, so a plain fork/exec per call is cheap enough.
// No shell: arguments are passed as they are, so paths with spaces or quotes need no quoting.
#include <string>
#include <vector>

namespace aispflow::slurm {

struct ProcessResult {
  int exit_code = -1;      // the command's exit status; 127 when it could not be started
  std::string out;         // stdout
  std::string err;         // stderr
};

// Runs argv[0] (looked up in PATH) with the rest as its arguments, waits for it, returns its output.
ProcessResult run_process(const std::vector<std::string>& argv);

// The full path of `program` in PATH, or empty when it is not there.
std::string find_in_path(const std::string& program);

}  // namespace aispflow::slurm
