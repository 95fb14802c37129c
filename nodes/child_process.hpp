#pragma once
// Running an external program from a node (the `ncu` node's Nsight Compute runs): argv without a shell, stdout
// and stderr into a log file, its own process group killed as a whole after a timeout or on Ctrl-C.
// Kept small and in one place until the shared child-process facility replaces it (nodes/mpi_launch.cpp has the
// same supervision for mpirun).
#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace aispflow {

struct ChildResult {
  bool started = false;     // false: it could not be executed (output says why)
  bool timed_out = false;
  bool cancelled = false;
  int exit_status = -1;     // exit code, or 128+signal
  std::string output;       // what it wrote to stdout and stderr (the log file's text)
};

// Runs argv[0] (a path) with argv, stdin from /dev/null. Never throws for a failing program.
ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log_file, double timeout_s,
                      const std::atomic<bool>* cancel = nullptr);

// `name` if it holds a '/' (and is executable), else the first executable `name` in a directory of $PATH.
std::optional<std::filesystem::path> find_program(const std::string& name);

}  // namespace aispflow
