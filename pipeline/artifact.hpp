#pragma once
// An artifact is what a node produced: a JSON document plus optional files (SVG, CSV, logs) that live in
// one directory, identified by a content digest over both.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow {

using json = nlohmann::json;

// How a node's result bears on the run's exit code, beyond succeeding or failing.
enum class Verdict {
  ok,                    // nothing to report
  expectations_not_met,  // e.g. `expect` found regressions or missing records: the run exits 3
};
std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string& s);  // unknown strings read as ok

// An artifact's document, held in memory or read from its cache entry the first time someone asks.
// A fully cached run of a thousand nodes reads no document that no node needs: a cache hit is
// recognised from file metadata alone (Cache::lookup_for) and most consumers only use the digest.
// Thread-safe; copies of an Artifact share one load.
class ArtifactData {
 public:
  explicit ArtifactData(json value);
  // `load` runs at most once, on first get(); what it throws, every get() throws.
  explicit ArtifactData(std::function<json()> load);
  const json& get() const;

 private:
  mutable std::once_flag once_;
  mutable json value_;
  mutable std::exception_ptr error_;
  std::function<json()> load_;
};

// How the cache entry behind an artifact looked when this process last read or stored it: enough to
// recognise it again with stat() alone (Cache::lookup_for). The record file (artifact.json) is
// identified by device, inode, size and modification time (a replaced entry is a new inode; an edit in
// place moves the time); each file by size and modification time, which the cache stamped when storing
// it. Kept per node in the workflow's cache index.
struct CacheReceipt {
  struct File {
    std::string name;
    std::uintmax_t bytes = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const File&) const = default;
  };
  std::string key;
  std::string digest;
  Verdict verdict = Verdict::ok;
  std::uint64_t record_device = 0;
  std::uint64_t record_inode = 0;
  std::uintmax_t record_bytes = 0;
  std::int64_t record_mtime_ns = 0;
  std::vector<File> files;  // sorted by name
  bool operator==(const CacheReceipt&) const = default;
};

struct Artifact {
  Verdict verdict = Verdict::ok;
  std::filesystem::path dir;          // directory holding artifact.json and the files
  std::vector<std::string> files;     // file names relative to dir, sorted
  std::string digest;                 // content digest of data + verdict + files (hex)

  // The node's output document (what `${node.field}` reads); null until set. May read the cache entry
  // on first use: throws std::runtime_error when the entry changed on disk since it was checked.
  const json& data() const;
  void set_data(json data);
  void set_data_loader(std::function<json()> load);

  std::shared_ptr<const CacheReceipt> receipt;  // set for artifacts that come from the cache

 private:
  std::shared_ptr<const ArtifactData> data_;
};

}  // namespace aispflow
