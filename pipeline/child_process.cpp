#include "pipeline/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace aispflow {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// How long a keeper may take past its grace period before it is killed itself (then its program still dies:
// PR_SET_PDEATHSIG; what the program started may survive, so this is a last resort that should never fire).
constexpr auto kKeeperSlack = std::chrono::seconds(10);

// The descriptors HeldByChildren registered; the mutex is held across posix_spawn, so that none is closed
// (and its number reused) while a keeper is being given it.
std::mutex& held_mutex() {
  static std::mutex m;
  return m;
}
std::vector<int>& held_fds() {
  static std::vector<int> fds;
  return fds;
}

// The read end of a pipe whose write end only this process holds, for ever: its end-of-file tells each keeper
// that this process is gone. Both ends close on exec, so no other program keeps the write end alive; a process
// forked from this one (without exec) makes its own, since the inherited write end lives on in its parent.
int control_read_end() {
  static std::mutex mutex;
  static pid_t owner = 0;
  static int read_fd = -1;
  std::lock_guard guard(mutex);
  if (owner != ::getpid()) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    owner = ::getpid();
    read_fd = p[0];   // p[1] stays open, unused, until this process ends
  }
  return read_fd;
}

std::runtime_error spawn_error(const std::string& what, int error) {
  return std::runtime_error("cannot start a child process (" + what + "): " + std::strerror(error));
}

// posix_spawn file actions that place `sources[i]` at descriptor i in the child. Two passes, so that no source
// is overwritten before it has been copied: first every source to a number above all of them, then down.
class FdLayout {
 public:
  explicit FdLayout(posix_spawn_file_actions_t* actions) : actions_(actions) {}
  void place(const std::vector<int>& sources) {
    const int high = 1 + std::max(*std::max_element(sources.begin(), sources.end()), int(sources.size()));
    for (std::size_t i = 0; i < sources.size(); ++i) posix_spawn_file_actions_adddup2(actions_, sources[i], high + int(i));
    for (std::size_t i = 0; i < sources.size(); ++i) posix_spawn_file_actions_adddup2(actions_, high + int(i), int(i));
    for (std::size_t i = 0; i < sources.size(); ++i) posix_spawn_file_actions_addclose(actions_, high + int(i));
  }

 private:
  posix_spawn_file_actions_t* actions_;
};

}  // namespace

fs::path keeper_program() {
  static const fs::path found = []() -> fs::path {
    if (const char* p = std::getenv("AISPFLOW_KEEPER"); p && *p) return p;
    std::error_code ec;
    const auto self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec && ::access((self.parent_path() / "aispflow-keeper").c_str(), X_OK) == 0)
      return self.parent_path() / "aispflow-keeper";
#ifdef AISPFLOW_KEEPER_BUILD_PATH
    if (::access(AISPFLOW_KEEPER_BUILD_PATH, X_OK) == 0) return AISPFLOW_KEEPER_BUILD_PATH;
#endif
    return {};
  }();
  return found;
}

ChildProcess::ChildProcess(const ChildSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  const fs::path keeper = keeper_program();
  if (keeper.empty())
    throw std::runtime_error("cannot start " + spec.argv[0] +
                             ": aispflow-keeper, which every child process runs under, is neither beside this "
                             "executable nor at $AISPFLOW_KEEPER (install it with aispflow)");

  std::vector<std::string> args = {keeper.string(), std::to_string(spec.stop_grace.count()), "", "--"};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  const std::vector<std::string>* env = spec.env ? &*spec.env : nullptr;
  std::vector<char*> envp;
  if (env) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }

  const int control = control_read_end();
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) throw spawn_error("/dev/null", errno);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // The keeper in a process group of its own: a Ctrl-C at the terminal reaches aispflow, which stops its
  // children itself. Default dispositions and an empty mask, whatever aispflow does with its signals.
  sigset_t defaults, empty;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());

  int rc;
  {
    std::lock_guard guard(held_mutex());
    std::vector<int> fds = {spec.stdin_fd >= 0 ? spec.stdin_fd : null_fd, spec.stdout_fd >= 0 ? spec.stdout_fd : null_fd,
                            spec.stderr_fd >= 0 ? spec.stderr_fd : null_fd, control};
    fds.insert(fds.end(), held_fds().begin(), held_fds().end());
    args[2] = std::to_string(held_fds().size());
    FdLayout(&actions).place(fds);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    rc = posix_spawn(&pid_, keeper.c_str(), &actions, &attr, argv.data(), env ? envp.data() : environ);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(null_fd);
  if (rc != 0) {
    reaped_ = true;
    throw spawn_error(keeper.string() + " for " + spec.argv[0], rc);
  }
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    stop();
    while (!wait_for(std::chrono::milliseconds(100))) {
    }
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool ChildProcess::exited() {
  if (reaped_) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    status_ = r == pid_ ? status : 0;
    reaped_ = true;
    return true;
  }
  if (kill_keeper_at_ && Clock::now() >= *kill_keeper_at_) ::kill(pid_, SIGKILL);   // unreaped: still ours
  return false;
}

bool ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!exited()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, int(std::min<long long>(left.count(), 1000)));
    } else {
      ::usleep(useconds_t(std::min<long long>(left.count(), 5)) * 1000);
    }
  }
  return true;
}

void ChildProcess::stop() {
  if (reaped_ || kill_keeper_at_) return;
  ::kill(pid_, SIGTERM);   // the keeper (not yet reaped, so the pid is still it) passes it on
  kill_keeper_at_ = Clock::now() + kKeeperSlack;
}

HeldByChildren::HeldByChildren(int fd) : fd_(fd) {
  std::lock_guard guard(held_mutex());
  held_fds().push_back(fd);
}

HeldByChildren::~HeldByChildren() {
  std::lock_guard guard(held_mutex());
  auto& fds = held_fds();
  fds.erase(std::remove(fds.begin(), fds.end(), fd_), fds.end());
}

std::vector<std::string> environment_with(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    if (!set.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::optional<std::string> output_of(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return std::nullopt;
  std::string text;
  try {
    ChildSpec spec;
    spec.argv = argv;
    spec.stdout_fd = spec.stderr_fd = p[1];
    spec.stop_grace = std::chrono::milliseconds(500);
    ChildProcess child(spec);
    ::close(p[1]);
    p[1] = -1;
    const auto deadline = Clock::now() + timeout;
    bool timed_out = false;
    // Read to end of file: the keeper exits only after everything holding the pipe has.
    for (char buffer[4096];;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd fd{p[0], POLLIN, 0};
      if (::poll(&fd, 1, int(left.count())) <= 0) continue;
      const ssize_t n = ::read(p[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buffer, std::size_t(n));
    }
    ::close(p[0]);
    p[0] = -1;
    // Past the timeout the destructor stops it; else it is about to be reaped (end of file came at its exit).
    if (timed_out || !child.wait_for(std::chrono::seconds(5))) return std::nullopt;
    if (!WIFEXITED(child.status()) || WEXITSTATUS(child.status()) != 0) return std::nullopt;
  } catch (const std::exception&) {
    for (int fd : p)
      if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  return text;
}

LoggedRun run_logged(ChildSpec spec, const std::filesystem::path& log_file, double timeout_s,
                     const std::atomic<bool>* cancel) {
  LoggedRun result;
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    result.output = "cannot write " + log_file.string() + ": " + std::strerror(errno);
    return result;
  }
  spec.stdout_fd = spec.stderr_fd = log_fd;
  std::optional<ChildProcess> child;
  try {
    child.emplace(spec);
  } catch (const std::exception& e) {
    result.output = e.what();
  }
  ::close(log_fd);
  if (!child) return result;
  result.started = true;
  const auto start = Clock::now();
  while (!child->wait_for(std::chrono::milliseconds(20))) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const bool cancelled = cancel && cancel->load();
    if (elapsed > timeout_s || cancelled) {
      result.timed_out = !cancelled;
      result.cancelled = cancelled;
      child->stop();
      while (!child->wait_for(std::chrono::milliseconds(100))) {
      }
      break;
    }
  }
  const int status = child->status();
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
  auto runnable = [](const std::filesystem::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (runnable(p)) return p;
  }
  return std::nullopt;
}

}  // namespace aispflow
