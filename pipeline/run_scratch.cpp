#include "pipeline/run_scratch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "pipeline/child_process.hpp"
#include "pipeline/report.hpp"

namespace aispflow {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRunPrefix = "run-";
constexpr const char* kNewPrefix = ".new-";
constexpr const char* kOwnerFile = "owner.lock";
constexpr auto kStaleNewAge = std::chrono::hours(1);   // making a directory takes microseconds

std::string host_name() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

std::string random_hex() {
  std::random_device device;
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%08x%08x", device(), device());
  return buffer;
}

// Total size of the regular files under `dir`.
std::uintmax_t tree_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) total += it->file_size(size_ec);
  }
  return total;
}

// The pid in "run-<pid>-<random>", or 0.
long pid_in_name(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind(kRunPrefix, 0) != 0) return 0;
  return std::strtol(name.c_str() + std::strlen(kRunPrefix), nullptr, 10);
}

std::string describe(const std::string& note_text, long pid) {
  const auto note = nlohmann::json::parse(note_text, nullptr, /*allow_exceptions=*/false);
  if (!note.is_object()) return "pid " + std::to_string(pid);
  return "pid " + note.value("pid", nlohmann::json(pid)).dump() + " on " + note.value("host", std::string("?")) +
         ", started " + note.value("started", std::string("?"));
}

// Decides whether `dir` is in use; when it is not and `lock_fd` is given, the owner lock stays taken in
// *lock_fd (the caller closes it after removing the directory), so no second collector works on it at once.
bool in_use(const fs::path& dir, std::string* owner, int* lock_fd) {
  const long pid = pid_in_name(dir);
  const int fd = ::open((dir / kOwnerFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) return true;   // cannot tell: keep it
    // Made by an older aispflow: all it left is the pid in the name.
    if (owner) *owner = "pid " + std::to_string(pid);
    return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM);
  }
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? std::size_t(n) : 0);
  if (owner) *owner = describe(text, pid);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {   // held (or flock unsupported here: then keep it too)
    ::close(fd);
    return true;
  }
  if (lock_fd) *lock_fd = fd;
  else ::close(fd);
  return false;
}

}  // namespace

RunScratch::RunScratch(const fs::path& tmp_root) {
  fs::create_directories(tmp_root);
  const std::string name = std::to_string(::getpid()) + "-" + random_hex();
  const fs::path staging = tmp_root / (kNewPrefix + name);
  if (::mkdir(staging.c_str(), 0755) != 0)
    throw std::runtime_error("cannot create " + staging.string() + ": " + std::strerror(errno));
  const fs::path lock_file = staging / kOwnerFile;
  lock_fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw std::runtime_error("cannot create " + lock_file.string() + ": " + std::strerror(errno));
  // Where flock() is not supported the directory simply stays "in use" for collectors (they cannot lock it either).
  [[maybe_unused]] const int locked = ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  const std::string note = nlohmann::json{{"pid", ::getpid()},
                                          {"host", host_name()},
                                          {"started", iso8601_utc(std::chrono::system_clock::now())}}
                               .dump() + "\n";
  [[maybe_unused]] const ssize_t written = ::pwrite(lock_fd_, note.data(), note.size(), 0);
  dir_ = tmp_root / (kRunPrefix + name);
  if (::rename(staging.c_str(), dir_.c_str()) != 0) {
    const int error = errno;
    ::close(lock_fd_);
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw std::runtime_error("cannot create " + dir_.string() + ": " + std::strerror(error));
  }
  held_ = std::make_unique<HeldByChildren>(lock_fd_);
}

RunScratch::~RunScratch() {
  held_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool run_scratch_in_use(const fs::path& dir, std::string* owner) { return in_use(dir, owner, nullptr); }

std::vector<DeadRun> collect_dead_runs(const fs::path& tmp_root) {
  std::vector<DeadRun> removed;
  std::error_code ec;
  const auto stale_before = fs::file_time_type::clock::now() - kStaleNewAge;
  for (fs::directory_iterator it(tmp_root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    const std::string name = dir.filename().string();
    DeadRun dead{dir, {}, 0};
    int lock_fd = -1;
    if (name.rfind(kRunPrefix, 0) != 0 && name.rfind(kNewPrefix, 0) != 0) continue;   // not ours
    if (name.rfind(kNewPrefix, 0) == 0) {
      std::error_code time_ec;
      const auto written = fs::last_write_time(dir, time_ec);
      if (time_ec || written >= stale_before) continue;
      dead.owner = "an unfinished directory, over an hour old";
    } else if (in_use(dir, &dead.owner, &lock_fd)) {
      continue;
    }
    dead.bytes = tree_bytes(dir);
    std::error_code remove_ec;
    fs::remove_all(dir, remove_ec);
    if (lock_fd >= 0) ::close(lock_fd);
    if (!remove_ec) removed.push_back(std::move(dead));
  }
  return removed;
}

}  // namespace aispflow
