#include "pipeline/measurement_lock.hpp"

#include <fcntl.h>
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

// The holder note of an open lock file: "pid 123 (workflow roofline, node peaks, since ...)", or a placeholder
// while a new holder has not written it yet.
std::string read_holder(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? std::size_t(n) : 0);
  const auto note = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!note.is_object() || !note.contains("pid")) return kUnknownHolder;
  return "pid " + note["pid"].dump() + " (workflow " + note.value("workflow", std::string("?")) + ", node " +
         note.value("node", std::string("?")) + ", since " + note.value("since", std::string("?")) + ")";
}

void write_holder(int fd, const MeasurementLockOptions& options) {
  const nlohmann::json note = {{"pid", ::getpid()},
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

fs::path prepare_dir(const fs::path& wanted) {
  const fs::path dir = wanted.empty() ? default_measurement_lock_dir() : wanted;
  std::error_code ec;
  if (fs::create_directories(dir, ec)) {
    // Shared by every user of the machine, as /tmp is: anyone may add a lock file, nobody removes another's.
    ::chmod(dir.c_str(), 01777);
  } else if (ec) {
    throw std::runtime_error("cannot create the measurement lock directory " + dir.string() + ": " + ec.message() +
                             " (set AISPFLOW_LOCK_DIR to a writable directory)");
  }
  return dir;
}

}  // namespace

fs::path default_measurement_lock_dir() {
  if (const char* env = std::getenv("AISPFLOW_LOCK_DIR"); env && *env) return env;
  return "/tmp/aispflow-locks";
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
  const fs::path dir = prepare_dir(options.dir);
  const auto start = SteadyClock::now();
  try {
    for (const auto& device : devices) {
      const fs::path file = dir / measurement_lock_file_name(device);
      const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) throw errno_error("cannot open the measurement lock", file);
      ::fchmod(fd, 0666);   // the umask must not keep another user's run out
      fds_.push_back(fd);
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
      write_holder(fd, options);
    }
  } catch (...) {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
    throw;
  }
}

MeasurementLock::~MeasurementLock() {
  for (int fd : fds_) {
    // Empty the note while still holding the lock, so no waiter reads a finished holder as current.
    [[maybe_unused]] const int truncated = ::ftruncate(fd, 0);
    ::close(fd);
  }
}

}  // namespace aispflow
