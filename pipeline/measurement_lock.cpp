#include "pipeline/measurement_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "pipeline/child_process.hpp"
#include "pipeline/report.hpp"

namespace aispflow {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);
constexpr double kLogEvery_s = 10;
constexpr const char* kUnknownHolder = "another process (its note is not written yet)";

std::runtime_error errno_error(const std::string& what, const fs::path& path) {
  return std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

std::string this_host() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

// The holder note of an open lock file: "pid 123 (workflow roofline, node peaks, since ...)", or a placeholder
// while a new holder has not written it yet. A holder that died while processes it started still run (they keep
// the lock: pipeline/child_process.hpp) is named as such.
std::string read_holder(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? std::size_t(n) : 0);
  const auto note = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!note.is_object() || !note.contains("pid")) return kUnknownHolder;
  std::string gone;
  if (note["pid"].is_number_integer() && note.value("host", std::string()) == this_host() &&
      ::kill(note["pid"].get<pid_t>(), 0) != 0 && errno == ESRCH)
    gone = "; that process is gone, the processes it started still run";
  return "pid " + note["pid"].dump() + " (workflow " + note.value("workflow", std::string("?")) + ", node " +
         note.value("node", std::string("?")) + ", since " + note.value("since", std::string("?")) + gone + ")";
}

void write_holder(int fd, const MeasurementLockOptions& options) {
  const nlohmann::json note = {{"pid", ::getpid()},
                               {"host", this_host()},
                               {"workflow", options.workflow},
                               {"node", options.node},
                               {"since", iso8601_utc_ms(std::chrono::system_clock::now())}};
  const std::string text = note.dump() + "\n";
  // Best effort: the note only informs waiters; the lock itself is the flock.
  if (::ftruncate(fd, 0) != 0) return;
  const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
  (void)written;
}

std::string seconds_text(double s) { return std::to_string(int(std::lround(s))) + " s"; }

const char* kDirAdvice = " (docs/cli.md, \"Measurement lock\": set AISPFLOW_LOCK_DIR to a directory of your own, or "
                         "one that root created with the sticky bit to share with other users)";

// The lock directory, opened and checked. Lock files are opened relative to this descriptor, so the checked
// directory is the one used, whatever happens to its path meanwhile. Trusted means: owned by this user or root
// (nobody else can rename or delete its entries), and sticky if others may write to it (then nobody can remove
// or replace another's file). The default paths must not be symbolic links (anybody could plant one in /tmp).
struct LockDir {
  int fd = -1;
  bool shared = false;   // others may create files here: lock files are made for every user to use
  ~LockDir() {
    if (fd >= 0) ::close(fd);
  }
};

void open_lock_dir(const fs::path& dir, bool is_default, LockDir& out) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
    // Only this user's: a directory shared with other users is the administrator's to make (docs/cli.md).
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create the measurement lock directory " + dir.string() + ": " +
                               std::strerror(errno) + kDirAdvice);
  }
  out.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (is_default ? O_NOFOLLOW : 0));
  if (out.fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR)
      throw std::runtime_error("the measurement lock directory " + dir.string() +
                               " is a symbolic link or not a directory: refusing to use it" + kDirAdvice);
    throw errno_error("cannot open the measurement lock directory", dir);
  }
  struct stat st{};
  if (::fstat(out.fd, &st) != 0) throw errno_error("cannot examine the measurement lock directory", dir);
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    throw std::runtime_error("the measurement lock directory " + dir.string() + " belongs to uid " +
                             std::to_string(st.st_uid) + ", neither you (uid " + std::to_string(::geteuid()) +
                             ") nor root: its owner could remove or replace the lock files" + kDirAdvice);
  out.shared = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (out.shared && !(st.st_mode & S_ISVTX))
    throw std::runtime_error("the measurement lock directory " + dir.string() +
                             " is writable by other users but has no sticky bit (chmod +t): anyone could remove or "
                             "replace the lock files" + kDirAdvice);
}

// Opens (creating when missing) a lock file without following symbolic links, and checks that it is a plain
// file with no other name (a hard link would make the holder note overwrite some other file). Only a file this
// process created has its mode set. `writable` says whether the holder note can be written.
int open_lock_file(const LockDir& dir, const std::string& name, const fs::path& shown, bool& writable) {
  constexpr int kFlags = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;   // O_NONBLOCK: a planted FIFO must not hang open()
  int fd = ::openat(dir.fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | kFlags, 0600);
  writable = fd >= 0;
  if (fd >= 0 && dir.shared) ::fchmod(fd, 0666);   // ours: every user's runs must be able to lock and note it
  if (fd < 0 && errno == EEXIST) {
    fd = ::openat(dir.fd, name.c_str(), O_RDWR | kFlags);
    writable = fd >= 0;
    if (fd < 0 && errno == EACCES) fd = ::openat(dir.fd, name.c_str(), O_RDONLY | kFlags);   // lock only
  }
  if (fd < 0) {
    if (errno == ELOOP)
      throw std::runtime_error("the measurement lock file " + shown.string() +
                               " is a symbolic link: refusing to follow it (remove it)");
    throw errno_error("cannot open the measurement lock", shown);
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    const bool regular = S_ISREG(st.st_mode);
    ::close(fd);
    throw std::runtime_error("the measurement lock file " + shown.string() + " is " +
                             (regular ? "a file with several names (hard links)" : "not a regular file") +
                             ": refusing to use it (remove it)");
  }
  return fd;
}

}  // namespace

fs::path default_measurement_lock_dir() {
  if (const char* env = std::getenv("AISPFLOW_LOCK_DIR"); env && *env) return env;
  if (::geteuid() == 0) return "/run/aispflow-locks";
  return "/tmp/aispflow-locks-" + std::to_string(::geteuid());
}

std::string measurement_lock_file_name(const std::string& device) {
  std::string name;
  for (char c : device) name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return name + ".lock";
}

MeasurementLock::MeasurementLock(std::vector<std::string> devices, const MeasurementLockOptions& options) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (devices.empty()) return;
  const fs::path dir = options.dir.empty() ? default_measurement_lock_dir() : options.dir;
  LockDir lock_dir;
  open_lock_dir(dir, /*is_default=*/options.dir.empty() && !std::getenv("AISPFLOW_LOCK_DIR"), lock_dir);
  const auto start = SteadyClock::now();
  try {
    for (const auto& device : devices) {
      const fs::path file = dir / measurement_lock_file_name(device);
      bool writable = false;
      const int fd = open_lock_file(lock_dir, measurement_lock_file_name(device), file, writable);
      fds_.push_back({fd, writable});
      double next_log_s = 0;
      while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) throw errno_error("cannot lock", file);
        const double waited = std::chrono::duration<double>(SteadyClock::now() - start).count();
        if (options.cancel && options.cancel->load()) throw std::runtime_error("interrupted while waiting for the measurement lock on " + device);
        if (options.timeout_s && waited >= *options.timeout_s)
          throw std::runtime_error("the measurement lock on " + device + " was not free within --lock-timeout " +
                                   seconds_text(*options.timeout_s) + ": held by " + read_holder(fd) + " (" +
                                   file.string() + ")");
        if (options.log && waited >= next_log_s) {
          // The holder writes its note just after it locks: give it a moment rather than report "unknown".
          const auto holder = read_holder(fd);
          if (holder != kUnknownHolder || waited >= 1.0) {
            options.log("waiting for the measurement lock on " + device + ", held by " + holder + ", for " +
                        seconds_text(waited));
            next_log_s = waited + kLogEvery_s;
          }
        }
        std::this_thread::sleep_for(kPoll);
      }
      if (writable) write_holder(fd, options);
      // Every process started while this lock is held keeps it until it has ended, even past this process's
      // death (exclusive nodes run alone, so those processes are this measurement's).
      held_.push_back(std::make_unique<HeldByChildren>(fd));
    }
  } catch (...) {
    held_.clear();
    for (const auto& f : fds_) ::close(f.fd);
    fds_.clear();
    throw;
  }
}

MeasurementLock::~MeasurementLock() {
  held_.clear();   // no child started from now on takes the lock along
  for (const auto& f : fds_) {
    // Empty the note while still holding the lock, so no waiter reads a finished holder as current.
    if (f.writable && ::ftruncate(f.fd, 0) != 0) {
      // best effort, as writing it was
    }
    ::close(f.fd);
  }
}

}  // namespace aispflow
