#pragma once
// Every process a node starts (a command's shell, mpirun and its ranks, later srun and profilers) starts here,
// and ends with the run: when its program exits, when the node stops it, and when the aispflow process dies,
// SIGKILL included.
//
// A program runs under a small keeper process of its own (aispflow-keeper, pipeline/keeper/main.cpp). The keeper
// is a child subreaper, so nothing the program starts can escape to init; it watches a pipe whose write end only
// this process holds, so it learns of aispflow's death from the kernel, whichever thread started it (a
// PR_SET_PDEATHSIG on the program itself would fire when the TBB worker thread that started it ends, and would
// not reach the program's own children). When the program exits, the keeper kills whatever it left behind and
// exits with the program's status; when stopped, or when aispflow is gone, it sends SIGTERM to the program's
// process group and every orphan, and SIGKILL after a grace period. It exits only when nothing is left.
//
// File descriptors registered with HeldByChildren (the measurement lock, the run's scratch-directory lock) are
// kept open by the keeper and the program: a lock taken by this process stays taken until everything it
// started is gone, even when this process dies first.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aispflow {

struct ChildSpec {
  std::vector<std::string> argv;                 // argv[0]: a path, or a name looked up on the environment's PATH
  std::optional<std::vector<std::string>> env;   // "NAME=value" entries; nullopt: this process's environment
  std::filesystem::path cwd;                     // empty: this process's working directory
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;   // -1: /dev/null
  std::chrono::milliseconds stop_grace{2000};    // SIGTERM .. SIGKILL, when stopped or when aispflow dies
};

class ChildProcess {
 public:
  // Starts spec.argv under a keeper. Throws std::runtime_error when that is impossible (no keeper program,
  // no process left); a program that cannot be executed exits with status 127 and says why on its stderr.
  explicit ChildProcess(const ChildSpec& spec);
  // Still running: stops it and waits until everything it started is gone.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // A descriptor that becomes readable when the child has exited (a pidfd), for poll(); -1 where the kernel
  // has none (then call exited() now and then).
  int exit_fd() const { return pidfd_; }
  // True once the child and everything it started have ended; status() is then valid.
  bool exited();
  // Waits until exited() (at most `timeout`); true when it has.
  bool wait_for(std::chrono::milliseconds timeout);
  // SIGTERM to the program and everything it started, SIGKILL after stop_grace. Returns at once.
  void stop();
  // The program's wait status (WIFEXITED/WEXITSTATUS, or WIFSIGNALED/WTERMSIG: as if aispflow had waited for
  // the program itself).
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;   // the keeper's
  int pidfd_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::optional<std::chrono::steady_clock::time_point> kill_keeper_at_;   // set by stop()
};

// While an object lives, every child started holds its descriptor open (and so any flock on it) until its
// whole process tree has ended. Unregister before closing the descriptor (the destructor does).
class HeldByChildren {
 public:
  explicit HeldByChildren(int fd);
  ~HeldByChildren();
  HeldByChildren(const HeldByChildren&) = delete;
  HeldByChildren& operator=(const HeldByChildren&) = delete;

 private:
  int fd_;
};

// This process's environment with `set` added or replaced: for ChildSpec::env.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& set);

// Runs a short program to its end and returns what it wrote (stdout and stderr together), or nullopt when it
// could not start, failed, or ran past `timeout` (then it is stopped).
std::optional<std::string> output_of(const std::vector<std::string>& argv,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A program run to its end with its stdout and stderr in a log file (mpirun, srun, Nsight Compute): stopped
// after `timeout_s` or once `*cancel` is set. Never throws for a program that fails or cannot start.
struct LoggedRun {
  bool started = false;     // false: no child could be started (output says why)
  bool timed_out = false;
  bool cancelled = false;
  int exit_status = -1;     // exit code, or 128+signal (127: the program could not be executed)
  std::string output;       // the log file's text
};
// spec's stdout and stderr go to `log_file` (created or truncated); its other fields are used as they are.
LoggedRun run_logged(ChildSpec spec, const std::filesystem::path& log_file, double timeout_s,
                     const std::atomic<bool>* cancel = nullptr);

// `name` when it holds a '/' and is executable, else the first executable regular file `name` in a directory of
// $PATH; nullopt when there is none.
std::optional<std::filesystem::path> find_program(const std::string& name);

// The keeper program: $AISPFLOW_KEEPER, else aispflow-keeper beside this executable, else where the build put it.
std::filesystem::path keeper_program();

}  // namespace aispflow
