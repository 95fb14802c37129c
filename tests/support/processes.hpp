#pragma once
// Finding the processes a test started, however deep they are and whoever their parent is now: the test puts a
// unique variable into the environment of what it starts (children inherit it: shells, mpirun, its ranks and
// daemons), then looks for it in /proc/<pid>/environ.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace aispflow::test {

// "AISPFLOW_TEST_MARK=<random>": an environment entry no other process has.
inline std::string unique_marker() {
  std::random_device rd;
  return "AISPFLOW_TEST_MARK=" + std::to_string(rd()) + std::to_string(rd());
}

// Live processes (zombies excluded: they have ended) whose environment holds `entry`.
inline std::vector<pid_t> marked_processes(const std::string& entry) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(it->path() / "status");
    bool zombie = false;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("State:", 0) == 0) zombie = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
    if (zombie) continue;
    std::ifstream env(it->path() / "environ", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    std::stringstream entries(text);
    for (std::string e; std::getline(entries, e, '\0');)
      if (e == entry) {
        found.push_back(pid_t(std::stol(name)));
        break;
      }
  }
  return found;
}

// "1234 mpirun, 1240 aispflow-comm-rank": for failure messages.
inline std::string describe_processes(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    out += (out.empty() ? "" : ", ") + std::to_string(pid) + " " + name;
  }
  return out.empty() ? "none" : out;
}

// Process names (comm) of the marked processes.
inline std::vector<std::string> marked_names(const std::string& entry) {
  std::vector<std::string> names;
  for (pid_t pid : marked_processes(entry)) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

// Waits until no process holds `entry` (true), or `timeout` passes (false). `last_seen` gets the wall-clock time
// at which one was last seen alive.
inline bool wait_until_none(const std::string& entry, std::chrono::milliseconds timeout,
                            std::chrono::system_clock::time_point* last_seen = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto now = std::chrono::system_clock::now();
    if (marked_processes(entry).empty()) return true;
    if (last_seen) *last_seen = now;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace aispflow::test
