#pragma once
// A run's scratch directory in the cache, <cache>/tmp/run-<pid>-<random>/, and collecting those of dead runs.
//
// A run holds an flock() on the directory's owner.lock for as long as it lives, and so does every process it
// started (pipeline/child_process.hpp: HeldByChildren), so the directory is "in use" exactly while anything of
// that run is alive: a killed run's ranks still writing their results keep it, a reused pid does not (it does
// not hold the lock), and it works wherever flock() does, a cache on a shared filesystem included. Directories
// made by older versions (no owner.lock) fall back to "is that pid alive on this host".
//
// A new directory is made under a ".new-" name with its lock taken, then renamed into place, so no collector
// ever sees a run-* directory without its held lock.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace aispflow {

class HeldByChildren;

class RunScratch {
 public:
  // Makes and locks a fresh directory under `tmp_root` (created when missing). Throws std::runtime_error.
  explicit RunScratch(const std::filesystem::path& tmp_root);
  ~RunScratch();   // releases the lock (the caller removes the directory, or a later run collects it)
  RunScratch(const RunScratch&) = delete;
  RunScratch& operator=(const RunScratch&) = delete;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int lock_fd_ = -1;
  std::unique_ptr<HeldByChildren> held_;
};

// A scratch directory a dead run left behind.
struct DeadRun {
  std::filesystem::path dir;
  std::string owner;           // "pid 4121 on ci-7, started 2026-11-25T14:05:58Z" (or "pid 4121" for old ones)
  std::uintmax_t bytes = 0;
};

// True while the run that made `dir` (a run-* directory), or anything that run started, is alive; `owner`
// gets its description.
bool run_scratch_in_use(const std::filesystem::path& dir, std::string* owner = nullptr);

// Removes the run-* directories under `tmp_root` of runs that are gone, and ".new-" directories older than an
// hour (a run that died while making one); returns what went.
std::vector<DeadRun> collect_dead_runs(const std::filesystem::path& tmp_root);

}  // namespace aispflow
