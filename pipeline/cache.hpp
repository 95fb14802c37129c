#pragma once
// Content-addressed artifact store.
//
//   <root>/objects/<key[0:2]>/<key>/artifact.json + files     one entry per cache key
//   <root>/index/<workflow>.json                             what the last run of each node used (for "why")
//   <root>/lock                                              flock()ed while writing, so concurrent runs are safe
//
// The key digests everything a node's output depends on (KeyInputs). Entries are written to a temporary
// directory and renamed into place, so a crash never leaves a half entry; an entry that fails to parse or
// whose files fail their digest is treated as a miss with a warning, never an error.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/artifact.hpp"
#include "pipeline/run_scratch.hpp"

namespace aispflow {

struct KeyInputs {
  std::string type;
  int type_version = 1;
  json params = json::object();                         // complete, canonical (defaults filled, refs substituted)
  std::map<std::string, std::string> input_digests;     // upstream instance name -> artifact digest
  std::map<std::string, std::string> file_digests;      // path param value -> content digest
  json environment;                                     // fingerprint for hardware-bound types, else null
  bool operator==(const KeyInputs&) const = default;
  json to_json() const;
  static KeyInputs from_json(const json& j);
};

std::string cache_key(const KeyInputs& inputs);

// The digest of an artifact's content: its data (canonical dump), verdict, and each file's
// (relative name, content digest), files in name order. Equal digests mean equal outputs, which is
// what lets a re-run node with an unchanged result keep its descendants cached (early cutoff).
std::string artifact_digest(const json& data, Verdict verdict,
                            const std::map<std::string, std::string>& file_digests);

// Writes `content` to `path` so that readers see either the old file or the whole new one, never a
// partial write: a temporary file in the same directory, fsync()ed, then rename()d over `path`.
// Creates missing parent directories. Throws std::runtime_error naming the path on failure.
void atomic_write_file(const std::filesystem::path& path, std::string_view content);

// Human reason why `now` differs from `before`, most important first, e.g.
//   "params changed: providers [a] → [a, b]", "input make_a changed", "file data/input.csv changed",
//   "node type version 2 → 3", "environment changed: driver 570.1 → 580.2". Several reasons are joined by "; ".
// Empty when equal.
std::string explain_change(const KeyInputs& before, const KeyInputs& now);

struct CacheEntryInfo {
  std::string key;
  std::string type;
  std::uintmax_t bytes = 0;
  std::filesystem::file_time_type written;
  std::vector<std::string> used_by;   // "workflow/node" index entries that point at it
};

class Cache {
 public:
  explicit Cache(std::filesystem::path root);
  ~Cache();  // writes pending index updates (flush_index)
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;
  const std::filesystem::path& root() const { return root_; }

  // nullopt on a miss or a corrupt entry (then `warn` is called with what was wrong). Reads and checks
  // the whole entry: its record, and every file's size (and content, where its stamp moved).
  std::optional<Artifact> lookup(const std::string& key,
                                 const std::function<void(const std::string&)>& warn = {}) const;

  // lookup(key) for the node `node` of `workflow`, fast when its last run used this very key: if the
  // entry looks exactly as it did then (same record file, every file the same size and stamp: stat()
  // only), the hit is taken without reading the entry, and its data() is read when first asked for.
  // This is what keeps a fully cached run of a thousand nodes within tens of milliseconds.
  std::optional<Artifact> lookup_for(const std::string& workflow, const std::string& node, const std::string& key,
                                     const std::function<void(const std::string&)>& warn = {}) const;

  // Moves `files_dir`'s files into a new entry together with `data` and returns the stored artifact
  // (digest computed over data + verdict + files). Atomic. When an entry for the key exists already
  // (another process stored it first), that entry is kept and returned -- unless `replace` is set
  // (a forced re-run: the user asked for fresh results), then the new entry atomically takes its place.
  Artifact store(const std::string& key, const KeyInputs& inputs, const json& data, Verdict verdict,
                 const std::filesystem::path& files_dir, bool replace = false);

  // What the last run of (workflow, node) used, to say why a node re-runs; it also roots gc. One index
  // file per workflow, read once per process: a cached run of a thousand nodes must not open a thousand
  // index files. Updates are held in memory and written (merged under the cache lock with what other
  // processes wrote meanwhile) at most once a second, by flush_index() and on destruction. A crash can
  // lose the last second of updates: then a "why" falls back to "no cache entry", nothing worse.
  // The index keeps the key and, when `artifact` (the entry as this process read or stored it) is given,
  // how the entry looked (its receipt), for lookup_for(); the inputs behind the key are in the entry
  // (last() reads them from there).
  void record_last(const std::string& workflow, const std::string& node, const std::string& key,
                   const Artifact* artifact = nullptr);
  // inputs.type is empty when the entry behind the key is gone (cleared, or corrupt).
  struct LastRun { KeyInputs inputs; std::string key; };
  std::optional<LastRun> last(const std::string& workflow, const std::string& node) const;
  void flush_index() const;  // const: the index is bookkeeping, not the cache's content

  // A fresh directory under <root>/tmp/ for a run's node outputs (same filesystem as the entries, so
  // store() renames instead of copying). It is locked (pipeline/run_scratch.hpp) while this Cache object,
  // or any process started meanwhile, lives: gc, clear and other runs leave it alone until then. The caller
  // removes it when the run ends.
  std::filesystem::path make_scratch_dir();
  // Removes the scratch directories of runs that are gone (every process of theirs ended); returns them.
  // A run does this when it starts; gc and clear do it too.
  std::vector<DeadRun> collect_dead_runs();

  std::vector<CacheEntryInfo> list() const;
  // Removes entries no index file points at, temporary directories left by crashed writers (older
  // than an hour), scratch directories of runs whose process is gone, and the parsed-workflow cache
  // (<root>/workflows/, rebuilt on demand).
  // Meant to run while no `aispflow run` uses the cache: an entry stored but not yet recorded by a
  // running process counts as unreferenced.
  struct GcResult {
    std::size_t entries = 0;     // unreferenced entries removed
    std::size_t leftovers = 0;   // temporary and scratch directories, parsed-workflow cache
    std::uintmax_t bytes = 0;    // freed, both kinds
    std::vector<DeadRun> dead_runs;   // the scratch directories among the leftovers, with their owners
  };
  GcResult gc();
  // Removes every entry and index file (the lock file stays, so concurrent lockers stay exclusive;
  // scratch directories of live runs stay, so those runs can still store what they compute).
  void clear();

 private:
  struct WorkflowIndex;
  WorkflowIndex& index_of(const std::string& workflow) const;   // loads it; index_mutex_ held
  // The entry as `receipt` saw it, if it still looks the same (stat() only); else nullopt.
  std::optional<Artifact> recognise(const std::shared_ptr<const CacheReceipt>& receipt) const;
  int objects_dir_fd() const;  // <root>/objects, opened on first use; -1 while it does not exist
  void flush_locked(WorkflowIndex& index) const;

  std::filesystem::path root_;
  mutable std::mutex index_mutex_;
  mutable std::map<std::string, std::unique_ptr<WorkflowIndex>> indexes_;
  mutable std::mutex objects_fd_mutex_;
  mutable std::atomic<int> objects_fd_{-1};
  std::mutex scratch_mutex_;
  std::vector<std::unique_ptr<RunScratch>> scratch_;   // this process's, locked until the Cache goes
};

}  // namespace aispflow
