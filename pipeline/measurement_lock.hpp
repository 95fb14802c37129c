#pragma once
// One measurement per device across processes. Inside one `aispflow run`, the dispatcher keeps exclusive nodes
// (peaks, sweeps, all-to-all) apart; two runs on one machine (two terminals, two CI jobs) would still measure the
// same GPU or CPU at once and both publish disturbed numbers as clean ones. A MeasurementLock is an advisory
// flock() per device in a machine-wide directory, taken before an exclusive node measures and held until it
// returns. flock() locks belong to the open file description: the kernel drops them when the last process holding
// it has gone. Every process the measurement started holds it too (pipeline/child_process.hpp), so a killed run
// keeps the device locked exactly until the ranks it left behind are gone, and never longer.
//
// The directory is checked before use (owned by this user or root, sticky when others can write to it) and lock
// files are opened relative to it without following symbolic links, must be plain single-name files, and have
// their mode set only when this process created them: a planted link cannot turn a run against another file.
//
// Devices are named by the environment (Environment::measured_devices: a GPU by its UUID, the CPU by host
// name). Every lock file holds its holder ({"pid", "workflow", "node", "since"}) while it is held, so a run that
// waits can say who it waits for.
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace aispflow {

class HeldByChildren;

struct MeasurementLockOptions {
  std::filesystem::path dir;                 // empty: default_measurement_lock_dir()
  std::optional<double> timeout_s;           // nullopt: wait as long as it takes
  std::string workflow, node;                // written into the lock file for waiters to read
  std::function<void(const std::string&)> log;   // "waiting for ..." messages (first one, then every 10 s)
  const std::atomic<bool>* cancel = nullptr; // Ctrl-C while waiting: give up with an "interrupted" error
};

// $AISPFLOW_LOCK_DIR, else /run/aispflow-locks for root and /tmp/aispflow-locks-<uid> for other users. Runs of
// different users exclude each other only through a shared directory that root made (docs/cli.md).
std::filesystem::path default_measurement_lock_dir();

// The lock file's name for a device id ("gpu-GPU-8f2c...", "cpu-host"): letters, digits, '.', '_', '-' kept,
// anything else '_'.
std::string measurement_lock_file_name(const std::string& device);

class MeasurementLock {
 public:
  // Locks every device (deduplicated, in sorted order, so two runs that want the same devices cannot deadlock).
  // Throws std::runtime_error naming the device, its holder and the wait on timeout or cancellation, and when
  // the lock directory or file cannot be used or is not safe to use (saying why).
  MeasurementLock(std::vector<std::string> devices, const MeasurementLockOptions& options);
  ~MeasurementLock();   // empties the holder note and closes: the kernel releases the lock
  MeasurementLock(const MeasurementLock&) = delete;
  MeasurementLock& operator=(const MeasurementLock&) = delete;

 private:
  struct File {
    int fd;
    bool writable;   // the holder note can be written (always, but for another user's file without write access)
  };
  std::vector<File> fds_;
  std::vector<std::unique_ptr<HeldByChildren>> held_;
};

}  // namespace aispflow
