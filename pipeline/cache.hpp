#pragma once
// Content-addressed artifact store.
//
//   <root>/objects/<key[0:2]>/<key>/artifact.json + files     one entry per cache key
//   <root>/index/<workflow>/<node>.json                      what the last run of that node used (for "why")
//   <root>/lock                                              flock()ed while writing, so concurrent runs are safe
//
// The key digests everything a node's output depends on (KeyInputs). Entries are written to a temporary
// directory and renamed into place, so a crash never leaves a half entry; an entry that fails to parse or
// whose files fail their digest is treated as a miss with a warning, never an error.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/artifact.hpp"

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

// Human reason why `now` differs from `before`, most important first, e.g.
//   "params changed: providers [a] -> [a, b]", "input make_a changed", "file data/input.csv changed",
//   "node type version 2 -> 3", "environment changed: driver 570.1 -> 580.2".
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
  const std::filesystem::path& root() const { return root_; }

  // nullopt on a miss or a corrupt entry (then `warn` is called with what was wrong).
  std::optional<Artifact> lookup(const std::string& key,
                                 const std::function<void(const std::string&)>& warn = {}) const;

  // Moves `files_dir`'s files into a new entry together with `data` and returns the stored artifact
  // (digest computed over data + verdict + files). Atomic; if another process stored the same key first,
  // that entry is kept and returned.
  Artifact store(const std::string& key, const KeyInputs& inputs, const json& data, Verdict verdict,
                 const std::filesystem::path& files_dir);

  // What the last run of (workflow, node) used, to say why a node re-runs.
  void record_last(const std::string& workflow, const std::string& node, const KeyInputs& inputs,
                   const std::string& key);
  struct LastRun { KeyInputs inputs; std::string key; };
  std::optional<LastRun> last(const std::string& workflow, const std::string& node) const;

  std::vector<CacheEntryInfo> list() const;
  // Removes entries no index file points at. Returns the number removed and bytes freed.
  std::pair<std::size_t, std::uintmax_t> gc();
  void clear();

 private:
  std::filesystem::path root_;
};

}  // namespace aispflow
