#include "nodes/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace aispflow {

ChildResult run_child(const std::vector<std::string>& args, const std::filesystem::path& log_file, double timeout_s,
                      const std::atomic<bool>* cancel) {
  ChildResult result;
  if (args.empty()) {
    result.output = "no program given";
    return result;
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.output = std::string("fork failed: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    // Child: its own process group, so the program and anything it starts are killed together.
    ::setpgid(0, 0);
    const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::execv(argv[0], argv.data());
    const std::string why = std::string("cannot execute ") + argv[0] + ": " + std::strerror(errno) + "\n";
    if (::write(2, why.data(), why.size()) < 0) {}
    ::_exit(127);
  }
  ::setpgid(pid, pid);   // also from the parent, so a kill right away reaches the group
  result.started = true;

  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool cancelled = cancel && cancel->load();
    if (elapsed > timeout_s || cancelled) {
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
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_status = 128 + WTERMSIG(status);
  std::ifstream in(log_file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::filesystem::path p = std::filesystem::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return std::nullopt;
}

}  // namespace aispflow
