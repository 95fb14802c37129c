#include "nodes/mpi_launch.hpp"

#include <cstdio>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace aispflow {

namespace {
std::optional<std::filesystem::path> find_on_path(const char* program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::filesystem::path p = std::filesystem::path(dir) / program;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::filesystem::path> find_mpirun() { return find_on_path("mpirun"); }
std::optional<std::filesystem::path> find_srun() { return find_on_path("srun"); }

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
  const std::vector<std::string> args = launch.srun ? srun_command(mpirun, launch) : mpirun_command(mpirun, launch);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  MpiRunResult result;
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.output = "fork failed";
    return result;
  }
  if (pid == 0) {
    // Child: its own process group, so the whole job (mpirun and its local ranks) is killed together.
    ::setpgid(0, 0);
    const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (fd >= 0) { ::dup2(fd, 1); ::dup2(fd, 2); }
    if (null_fd >= 0) ::dup2(null_fd, 0);
    for (const auto& [name, value] : launch.env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);   // also from the parent, so a kill right away reaches the group

  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool cancelled = cancel && cancel->load();
    if (elapsed > launch.timeout_s || cancelled) {
      result.timed_out = !cancelled;
      result.cancelled = cancelled;
      ::kill(-pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);   // ranks left behind by a dying mpirun
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_status = 128 + WTERMSIG(status);
  std::ifstream in(log_file);
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

nlohmann::json mpi_launcher_info() {
  const auto mpirun = find_mpirun();
  if (!mpirun) return {{"unavailable", "no mpirun on PATH (OpenMPI: .ci/install-deps.sh)"}};
  nlohmann::json info = {{"mpirun", mpirun->string()}};
  if (FILE* f = ::popen((mpirun->string() + " --version 2>&1").c_str(), "r")) {
    char line[256] = {};
    if (std::fgets(line, sizeof line, f)) {
      std::string v(line);
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      info["version"] = v;
    }
    ::pclose(f);
  }
  return info;
}

}  // namespace aispflow
