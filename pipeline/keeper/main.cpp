// aispflow-keeper: the parent of every program aispflow starts (pipeline/child_process.hpp says why and how).
//
//   aispflow-keeper GRACE_MS HELD_FDS -- PROGRAM ARG...
//
// Started by aispflow with: fd 0-2 for the program, fd 3 the read end of aispflow's control pipe (never
// written: it reads end-of-file exactly when the aispflow process is gone, however it died), fds 4 .. 3+HELD_FDS
// to keep open until the whole process tree has ended (the measurement lock, the run's scratch-directory lock).
//
// The keeper is a child subreaper: every descendant of PROGRAM whose parent dies is reparented here rather than
// to init, so nothing the program starts (mpirun's ranks, a shell's background jobs) can slip away. It starts
// PROGRAM in a process group of its own, with PR_SET_PDEATHSIG tied to this one-threaded process, then waits for:
//   - PROGRAM to exit: everything it left behind is killed, and the keeper exits with PROGRAM's own status
//     (the same exit code, or death by the same signal), so aispflow sees the program's status;
//   - SIGTERM/SIGINT/SIGHUP/SIGQUIT (aispflow stopping the child) or end-of-file on fd 3 (aispflow died, SIGKILL
//     included): SIGTERM to PROGRAM's group and to every orphan, SIGKILL to all of them after GRACE_MS.
// It exits only when no descendant is left, and the held fds close with it: a lock taken by aispflow is thereby
// held for as long as anything it started runs.
//
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

constexpr int kControlFd = 3;
constexpr int kFirstHeldFd = 4;

long long now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Calls f(pid) for each current child of this process (single-threaded: the main thread's children are all
// of them). Zombies are included; killing one is harmless.
template <typename F>
void for_each_child(F f) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/children", int(getpid()));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char text[8192];
    ssize_t n, used = 0;
    while (used < ssize_t(sizeof text) - 1 && (n = read(fd, text + used, sizeof text - 1 - used)) > 0) used += n;
    close(fd);
    text[used] = '\0';
    for (char* p = text; *p;) {
      char* end = nullptr;
      const long pid = std::strtol(p, &end, 10);
      if (end == p) break;
      if (pid > 0) f(pid_t(pid));
      p = end;
    }
    return;
  }
  // Kernels without CONFIG_PROC_CHILDREN: scan /proc for processes whose parent is this one.
  DIR* dir = opendir("/proc");
  if (!dir) return;
  const pid_t self = getpid();
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    char stat_path[64], stat[512];
    std::snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
    const int sfd = open(stat_path, O_RDONLY | O_CLOEXEC);
    if (sfd < 0) continue;
    const ssize_t got = read(sfd, stat, sizeof stat - 1);
    close(sfd);
    if (got <= 0) continue;
    stat[got] = '\0';
    const char* close_paren = std::strrchr(stat, ')');   // the name may hold spaces and parentheses
    int ppid = 0;
    if (close_paren && std::sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == self) f(pid_t(pid));
  }
  closedir(dir);
}

// Kills the whole tree with SIGKILL and reaps it; returns the program's wait status. `program` must not have
// been reaped yet: while it is a zombie its process group id cannot be reused, so -program names only its group.
int kill_everything(pid_t program, int program_status, bool program_known) {
  kill(-program, SIGKILL);
  for_each_child([](pid_t c) { kill(c, SIGKILL); });
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(-1, &status, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;   // ECHILD: nothing left
    }
    if (r == program && !program_known) program_status = status;
    // A process killed just now may have had children of its own: they are ours now (subreaper).
    for_each_child([](pid_t c) { kill(c, SIGKILL); });
  }
  return program_status;
}

// Exits with the program's status: the same exit code, or death by the same signal.
[[noreturn]] void exit_like(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);   // the program may have dumped core; its keeper need not
  signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
  _exit(128 + sig);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "aispflow-keeper: %s (it is started by aispflow: GRACE_MS HELD_FDS -- PROGRAM ARG...)\n", why);
  _exit(125);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || std::strcmp(argv[3], "--") != 0) usage("bad arguments");
  const long grace_ms = std::strtol(argv[1], nullptr, 10);
  const long held = std::strtol(argv[2], nullptr, 10);
  if (grace_ms < 0 || held < 0 || held > 64) usage("bad arguments");
  // Nothing else aispflow had open leaks into the program.
  if (syscall(SYS_close_range, unsigned(kFirstHeldFd + held), ~0U, 0) != 0) {   // before Linux 5.9
    const long max_fd = std::min(sysconf(_SC_OPEN_MAX), 65536L);
    for (long fd = kFirstHeldFd + held; fd < max_fd; ++fd) close(int(fd));
  }
  fcntl(kControlFd, F_SETFD, FD_CLOEXEC);   // the program must not keep aispflow's control pipe alive
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGPIPE, SIG_IGN);   // a message to a closed stderr must not kill the keeper mid-cleanup

  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&handled, s);
  sigprocmask(SIG_BLOCK, &handled, &old_mask);
  const int signals = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) {
    std::fprintf(stderr, "aispflow-keeper: cannot watch signals: %s\n", std::strerror(errno));
    _exit(126);
  }
  const pid_t keeper = getpid();

  const pid_t program = fork();
  if (program < 0) {
    std::fprintf(stderr, "aispflow-keeper: cannot start %s: %s\n", argv[4], std::strerror(errno));
    _exit(126);
  }
  if (program == 0) {
    setpgid(0, 0);
    // Should the keeper itself be killed (SIGKILL reaches even it), the program goes too. This process
    // has one thread, so "parent" means what it says (PDEATHSIG follows the parent thread).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != keeper) _exit(125);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    execvp(argv[4], argv + 4);
    const int error = errno;
    std::fprintf(stderr, "aispflow-keeper: cannot run %s: %s\n", argv[4], std::strerror(error));
    _exit(error == ENOENT ? 127 : 126);   // as a shell says "not found" / "cannot execute"
  }
  setpgid(program, program);   // also here, so that a kill of the group right away reaches it

  bool stopping = false;
  long long kill_at_ms = 0;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    kill_at_ms = now_ms() + grace_ms;
    kill(-program, SIGTERM);
    for_each_child([&](pid_t c) {
      if (c != program) kill(c, SIGTERM);
    });
  };

  pollfd fds[2] = {{signals, POLLIN, 0}, {kControlFd, POLLIN, 0}};
  for (;;) {
    // The program's exit, seen without reaping it (WNOWAIT): its group stays addressable until we kill it.
    siginfo_t info{};
    if (waitid(P_PID, id_t(program), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == program) {
      const int status = info.si_code == CLD_EXITED   ? W_EXITCODE(info.si_status, 0)
                         : info.si_code == CLD_DUMPED ? (info.si_status | 0x80)
                                                      : info.si_status;
      exit_like(kill_everything(program, status, true));
    }
    int timeout = -1;
    if (stopping) {
      const long long left = kill_at_ms - now_ms();
      if (left <= 0) exit_like(kill_everything(program, 0, false));
      timeout = int(left);
    }
    if (poll(fds, 2, timeout) < 0 && errno != EINTR) exit_like(kill_everything(program, 0, false));
    if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
      char c[64];
      const ssize_t n = read(kControlFd, c, sizeof c);
      if (n <= 0 && !(n < 0 && errno == EINTR)) {   // end of file (or no pipe at all): aispflow is gone
        fds[1].fd = -1;
        stop();
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si{};
      while (read(signals, &si, sizeof si) == ssize_t(sizeof si)) {
        if (si.ssi_signo != SIGCHLD) stop();
      }
      // Orphans that ended meanwhile: reap them now (the program itself only through waitid above).
      for_each_child([&](pid_t c) {
        int status = 0;
        if (c != program) waitpid(c, &status, WNOHANG);
      });
    }
  }
}
