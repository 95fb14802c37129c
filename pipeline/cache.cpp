// The content-addressed artifact store. See pipeline/cache.hpp for the layout and docs/cache.md for why
// it is built this way (atomic rename, flock, corruption handling, gc).
#include "pipeline/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "pipeline/hash.hpp"
#include "pipeline/run_scratch.hpp"

namespace aispflow {

namespace fs = std::filesystem;

namespace {

constexpr const char* kArtifactFile = "artifact.json";
// Every temporary name contains this marker, so readers skip them and gc can find crash leftovers.
constexpr const char* kTempMarker = ".tmp-";
// A temporary directory older than this cannot belong to a live writer (stores take milliseconds).
constexpr auto kStaleTempAge = std::chrono::hours(1);

// ---- small helpers -------------------------------------------------------------------------------

// Canonical dump: nlohmann's json keeps object keys sorted, and invalid UTF-8 (e.g. in captured
// output) is replaced rather than thrown on, so every document has exactly one digestable form.
std::string canonical_dump(const json& value, int indent = -1) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

// "<pid>-<16 random hex>": the pid keeps forked children apart even if they inherited the same
// random state, the random part keeps threads of one process apart.
std::string unique_suffix() {
  thread_local std::mt19937_64 engine = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), static_cast<unsigned>(::getpid()),
                       static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id()))};
    return std::mt19937_64(seed);
  }();
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%ld-%016llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(engine()));
  return buffer;
}

bool is_temporary(const fs::path& p) { return p.filename().string().find(kTempMarker) != std::string::npos; }

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

// Feeds every byte of `fd` to `sink`, retrying interrupted reads, and closes it. False (errno kept) on
// a read error.
template <typename Sink>
bool drain_and_close(int fd, Sink&& sink) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      errno = error;
      return false;
    }
    if (n == 0) break;
    sink(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return true;
}

// Reads a whole file with plain POSIX calls (a cache miss reads every entry's record), `facts` getting
// its fstat(). Returns false (errno set) if it cannot be opened or read.
bool try_read_file(const fs::path& file, std::string& out, struct stat* facts = nullptr) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (facts && ::fstat(fd, facts) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return false;
  }
  out.clear();
  return drain_and_close(fd, [&](std::string_view chunk) { out.append(chunk); });
}

std::string read_whole_file(const fs::path& file) {
  std::string content;
  if (!try_read_file(file, content)) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
  return content;
}

// Size and content digest of a regular file, from one open(); nullopt (errno set) if unreadable.
struct FileFacts {
  bool regular = false;
  std::uintmax_t bytes = 0;
  std::string digest;  // empty unless regular
};
std::optional<FileFacts> examine_file(const fs::path& file, std::optional<std::uintmax_t> expected_bytes = {}) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  FileFacts facts;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    facts.regular = true;
    facts.bytes = static_cast<std::uintmax_t>(st.st_size);
    // A size mismatch already says enough; hash only what might be intact.
    if (!expected_bytes || *expected_bytes == facts.bytes) {
      Hasher hasher;
      if (!drain_and_close(fd, [&](std::string_view chunk) { hasher.add(chunk); })) return std::nullopt;
      facts.digest = hasher.hex();
      return facts;
    }
  }
  ::close(fd);
  return facts;
}

std::runtime_error errno_error(const std::string& what, const fs::path& path) {
  return std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

// Total size of the regular files under `dir` (0 if it is gone).
std::uintmax_t tree_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

// Workflow and node names become file names. Matrix instances look like "per_size[size=1,dtype=f16]",
// so everything outside [A-Za-z0-9_-] is percent-encoded: the mapping is injective, never produces
// "." or "..", and never contains the temporary-name marker. Very long names keep a readable prefix
// plus the digest of the whole name ('~' cannot come out of the encoding, so no clash).
std::string filesystem_name(std::string_view name) {
  if (name.empty()) return "%";
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  constexpr std::size_t kMaxLength = 180;  // file names are limited to 255 bytes; leave room for suffixes
  if (out.size() > kMaxLength) out = out.substr(0, 120) + "~" + digest_bytes(name);
  return out;
}

// An exclusive flock() on <root>/lock for the lifetime of the object. flock() locks are released by the
// kernel when the process dies, so a crashed run never leaves the cache locked.
class CacheLock {
 public:
  explicit CacheLock(const fs::path& root) {
    fs::create_directories(root);
    const fs::path file = root / "lock";
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw errno_error("cannot open the cache lock", file);
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const auto error = errno_error("cannot lock", file);
        ::close(fd_);
        throw error;
      }
    }
  }
  ~CacheLock() { ::close(fd_); }  // closing the descriptor releases the lock
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// Moves a file into the entry being built; rename() cannot cross filesystems (a node's scratch
// directory may live on another one), so fall back to copying.
void move_file(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  std::error_code ec;
  if (!fs::is_symlink(from, ec)) {
    fs::rename(from, to, ec);
    if (!ec) return;
  }
  // A symlink is stored as the content it points at: the entry must be self-contained.
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::remove(from, ec);
}

struct StoredFile {
  std::string name;  // relative to the entry directory, '/'-separated
  std::string digest;
  std::uintmax_t bytes = 0;
  std::int64_t stamp_ns = 0;  // the modification time store() gave it (see stamp_file)
};

// A stored file's modification time is set to a fixed instant a second or more in the past and
// recorded. Any later write to the file (through the cache or a hard link under --out) sets it to
// "now", so a lookup can tell an untouched file from a changed one with one stat() and only hashes
// files whose stamp moved -- a cached run of a thousand nodes must not read every file it owns.
std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}
std::int64_t stamp_file(const fs::path& file, std::time_t stamp_seconds) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;  // access time: leave it
  times[1].tv_sec = stamp_seconds;
  times[1].tv_nsec = 0;
  struct stat st {};
  if (::utimensat(AT_FDCWD, file.c_str(), times, 0) != 0 || ::stat(file.c_str(), &st) != 0) return 0;
  return mtime_ns(st);  // as the filesystem stored it (some round timestamps)
}

// A relative, '/'-separated path that stays inside the entry directory.
// (Plain string work: the index check runs for every file of every node at the start of each run.)
bool is_safe_relative_name(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// Where and how an entry's record file is, as a receipt keeps it.
void note_record_file(CacheReceipt& receipt, const struct stat& facts) {
  receipt.record_device = static_cast<std::uint64_t>(facts.st_dev);
  receipt.record_inode = static_cast<std::uint64_t>(facts.st_ino);
  receipt.record_bytes = static_cast<std::uintmax_t>(facts.st_size);
  receipt.record_mtime_ns = mtime_ns(facts);
}

// Renames a bad entry out of its key's place (so the next store can succeed at once), then deletes it.
// If another process already removed or replaced it, there is nothing to do.
void discard_entry(const fs::path& dir) {
  const fs::path aside = dir.parent_path() / (dir.filename().string() + kTempMarker + "bad-" + unique_suffix());
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (!ec) fs::remove_all(aside, ec);  // if this fails, gc removes it later (its name is temporary)
}

// An entry's record (artifact.json), parsed; its digest checked against its data, verdict and the
// file digests it lists. Nothing on disk is looked at beyond the record itself.
struct Record {
  struct File {
    std::string name;
    std::string digest;
    std::uintmax_t bytes = 0;
    std::optional<std::int64_t> stamp_ns;  // absent in records written before files were stamped
  };
  json data;
  Verdict verdict = Verdict::ok;
  std::string digest;
  std::vector<File> files;  // sorted by name
};

// Returns the reason the record is unusable, or nullopt with `out` filled.
std::optional<std::string> parse_record(const std::string& key, const std::string& text, Record& out) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    return std::string(kArtifactFile) + " is unreadable: " + e.what();
  }
  try {
    if (!doc.is_object()) return std::string(kArtifactFile) + " is not a JSON object";
    if (doc.value("key", std::string()) != key) return "it records another key";
    if (!doc.contains("data")) return "it has no data";
    if (!doc.contains("digest") || !doc["digest"].is_string()) return "it has no digest";
    out.data = std::move(doc["data"]);
    out.verdict = verdict_from_string(doc.value("verdict", std::string("ok")));
    out.digest = doc["digest"].get<std::string>();
    out.files.clear();
    std::map<std::string, std::string> file_digests;
    for (const auto& file : doc.value("files", json::array())) {
      Record::File f;
      f.name = file.at("name").get<std::string>();
      f.digest = file.at("digest").get<std::string>();
      f.bytes = file.at("bytes").get<std::uintmax_t>();
      if (file.contains("stamp_ns")) f.stamp_ns = file["stamp_ns"].get<std::int64_t>();
      if (!is_safe_relative_name(f.name)) return "file name '" + f.name + "' leaves the entry";
      file_digests[f.name] = f.digest;
      out.files.push_back(std::move(f));
    }
    std::sort(out.files.begin(), out.files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    if (artifact_digest(out.data, out.verdict, file_digests) != out.digest) return "its data does not match its digest";
  } catch (const std::exception& e) {
    return std::string(kArtifactFile) + " is malformed: " + e.what();
  }
  return std::nullopt;
}

// Checks a whole entry: its record, and each file it lists against the disk. Returns the reason it is
// unusable, or nullopt with `out` filled and `receipt` describing the entry as it was seen.
std::optional<std::string> read_entry(const std::string& key, const fs::path& dir, const std::string& text,
                                      const struct stat& record_facts, Artifact& out, CacheReceipt& receipt) {
  Record record;
  if (auto why = parse_record(key, text, record)) return why;
  receipt = CacheReceipt{};
  receipt.key = key;
  receipt.digest = record.digest;
  receipt.verdict = record.verdict;
  note_record_file(receipt, record_facts);
  out.files.clear();
  for (const auto& file : record.files) {
    const fs::path path = dir / file.name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "file " + file.name + " is missing";
    if (static_cast<std::uintmax_t>(st.st_size) != file.bytes) {
      return "file " + file.name + " has " + std::to_string(st.st_size) + " bytes, expected " +
             std::to_string(file.bytes);
    }
    // Untouched since store() (same stamp): its recorded digest stands. Otherwise hash it: an edit
    // that kept the size is still caught.
    if (file.stamp_ns != mtime_ns(st)) {
      const auto facts = examine_file(path, file.bytes);
      if (!facts || !facts->regular) return "file " + file.name + " is missing";
      if (facts->digest != file.digest) return "file " + file.name + " has changed content";
    }
    receipt.files.push_back({file.name, file.bytes, mtime_ns(st)});
    out.files.push_back(file.name);
  }
  out.verdict = record.verdict;
  out.dir = dir;
  out.digest = record.digest;
  out.set_data(std::move(record.data));
  return std::nullopt;
}

// ---- explain_change rendering ---------------------------------------------------------------------

// Values as a person writes them: strings without quotes, lists as [a, b], maps as {k: v}.
void render_compact(const json& value, std::string& out) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    out += s.empty() ? std::string("\"\"") : s;
  } else if (value.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      render_compact(value[i], out);
    }
    out += ']';
  } else if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : value.items()) {
      if (!first) out += ", ";
      first = false;
      out += k + ": ";
      render_compact(v, out);
    }
    out += '}';
  } else {
    out += canonical_dump(value);
  }
}

std::string compact(const json& value) {
  std::string out;
  render_compact(value, out);
  constexpr std::size_t kMaxShown = 80;  // a reason is one line; huge params are cut, not dumped
  if (out.size() > kMaxShown) out = out.substr(0, kMaxShown - 3) + "...";
  return out;
}

// {"gpus":[{"name":"H100"}],"driver":"570.1"} -> {"driver": "570.1", "gpus[0].name": "H100"}
void flatten(const json& value, const std::string& prefix, std::map<std::string, json>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [k, v] : value.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (value.is_array() && !value.empty()) {
    for (std::size_t i = 0; i < value.size(); ++i) flatten(value[i], prefix + "[" + std::to_string(i) + "]", out);
  } else if (!(prefix.empty() && value.is_null())) {
    out[prefix.empty() ? std::string("(value)") : prefix] = value;
  }
}

// "name old → new", "name (new) value", "name value (removed)" for each key that differs.
std::vector<std::string> diff_maps(const std::map<std::string, json>& before, const std::map<std::string, json>& now) {
  std::set<std::string> names;
  for (const auto& [k, v] : before) names.insert(k);
  for (const auto& [k, v] : now) names.insert(k);
  std::vector<std::string> out;
  for (const auto& name : names) {
    const auto b = before.find(name);
    const auto n = now.find(name);
    if (b == before.end()) {
      out.push_back(name + " (new) " + compact(n->second));
    } else if (n == now.end()) {
      out.push_back(name + " " + compact(b->second) + " (removed)");
    } else if (b->second != n->second) {
      out.push_back(name + " " + compact(b->second) + " → " + compact(n->second));
    }
  }
  return out;
}

std::map<std::string, json> top_level(const json& params) {
  std::map<std::string, json> out;
  if (params.is_object()) {
    for (const auto& [k, v] : params.items()) out[k] = v;
  } else if (!params.is_null()) {
    out["(params)"] = params;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? separator : "") + parts[i];
  return out;
}

// "input make_a changed", "file data/x.csv added", ...
void diff_digests(const std::string& what, const std::map<std::string, std::string>& before,
                  const std::map<std::string, std::string>& now, std::vector<std::string>& reasons) {
  for (const auto& [name, digest] : now) {
    const auto b = before.find(name);
    if (b == before.end()) {
      reasons.push_back(what + " " + name + " added");
    } else if (b->second != digest) {
      reasons.push_back(what + " " + name + " changed");
    }
  }
  for (const auto& [name, digest] : before) {
    if (!now.count(name)) reasons.push_back(what + " " + name + " removed");
  }
}

}  // namespace

// ---- KeyInputs and keys ---------------------------------------------------------------------------

json KeyInputs::to_json() const {
  return json{{"type", type},
              {"version", type_version},
              {"params", params},
              {"inputs", input_digests},
              {"files", file_digests},
              {"environment", environment}};
}

KeyInputs KeyInputs::from_json(const json& j) {
  KeyInputs k;
  k.type = j.at("type").get<std::string>();
  k.type_version = j.at("version").get<int>();
  k.params = j.at("params");
  k.input_digests = j.at("inputs").get<std::map<std::string, std::string>>();
  k.file_digests = j.at("files").get<std::map<std::string, std::string>>();
  k.environment = j.at("environment");
  return k;
}

namespace {

void append_json_string(std::string& out, const std::string& text) { out += canonical_dump(json(text)); }

void append_string_map(std::string& out, const std::map<std::string, std::string>& map) {
  out += '{';
  bool first = true;
  for (const auto& [name, value] : map) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, name);
    out += ':';
    append_json_string(out, value);
  }
  out += '}';
}

}  // namespace

std::string cache_key(const KeyInputs& inputs) {
  // Exactly canonical_dump(inputs.to_json()) -- keys sorted, compact -- written without first copying
  // the params into a new JSON tree: every node of every run computes its key. (A unit test holds the
  // two forms equal, so keys stay what older versions stored.)
  std::string text = "{\"environment\":";
  text += canonical_dump(inputs.environment);
  text += ",\"files\":";
  append_string_map(text, inputs.file_digests);
  text += ",\"inputs\":";
  append_string_map(text, inputs.input_digests);
  text += ",\"params\":";
  text += canonical_dump(inputs.params);
  text += ",\"type\":";
  append_json_string(text, inputs.type);
  text += ",\"version\":" + std::to_string(inputs.type_version) + "}";
  // The schema tag lets a future change of the key's composition invalidate old keys on purpose.
  Hasher hasher;
  hasher.add_field("aispflow cache key", "1");
  hasher.add_field("inputs", text);
  return hasher.hex();
}

std::string artifact_digest(const json& data, Verdict verdict, const std::map<std::string, std::string>& file_digests) {
  Hasher hasher;
  hasher.add_field("data", canonical_dump(data));
  hasher.add_field("verdict", to_string(verdict));
  for (const auto& [name, digest] : file_digests) hasher.add_field(name, digest);  // std::map: name order
  return hasher.hex();
}

std::string explain_change(const KeyInputs& before, const KeyInputs& now) {
  std::vector<std::string> reasons;
  if (before.type != now.type) reasons.push_back("node type " + before.type + " → " + now.type);
  if (before.type_version != now.type_version) {
    reasons.push_back("node type version " + std::to_string(before.type_version) + " → " +
                      std::to_string(now.type_version));
  }
  if (const auto params = diff_maps(top_level(before.params), top_level(now.params)); !params.empty()) {
    reasons.push_back("params changed: " + join(params, ", "));
  }
  diff_digests("input", before.input_digests, now.input_digests, reasons);
  diff_digests("file", before.file_digests, now.file_digests, reasons);
  std::map<std::string, json> env_before, env_now;
  flatten(before.environment, "", env_before);
  flatten(now.environment, "", env_now);
  if (auto env = diff_maps(env_before, env_now); !env.empty()) {
    constexpr std::size_t kShown = 3;  // enough to see what happened; the rest is counted
    const std::size_t more = env.size() > kShown ? env.size() - kShown : 0;
    env.resize(std::min(env.size(), kShown));
    reasons.push_back("environment changed: " + join(env, ", ") +
                      (more ? ", and " + std::to_string(more) + " more" : std::string()));
  }
  return join(reasons, "; ");
}

namespace {

// Creates `path` (which must not exist) with `content`. With `durable`, fsync()s before returning:
// without it, a crash soon after a following rename could leave the new name on an empty file.
// On failure nothing is left behind and the error names `shown` (the path the caller cares about).
void write_new_file(const fs::path& path, std::string_view content, bool durable, const fs::path& shown) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw errno_error("cannot create", shown);
  auto fail = [&](const std::string& what) {
    const auto error = errno_error(what, shown);
    ::close(fd);
    ::unlink(path.c_str());
    return error;
  };
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("cannot write");
    written += static_cast<std::size_t>(n);
  }
  if (durable && ::fsync(fd) != 0) throw fail("cannot sync");
  if (::close(fd) != 0) {
    const auto error = errno_error("cannot write", shown);
    ::unlink(path.c_str());
    throw error;
  }
}

// Temp file in the same directory (rename() is only atomic within one filesystem), then rename().
void replace_file(const fs::path& path, std::string_view content, bool durable) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path temp = path.string() + kTempMarker + unique_suffix();
  write_new_file(temp, content, durable, path);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const auto error = errno_error("cannot replace", path);
    ::unlink(temp.c_str());
    throw error;
  }
}

}  // namespace

void atomic_write_file(const fs::path& path, std::string_view content) { replace_file(path, content, true); }

// ---- Cache -----------------------------------------------------------------------------------------

namespace {

bool is_valid_key(const std::string& key) {
  return key.size() >= 3 && std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c); });
}

fs::path entry_dir(const fs::path& root, const std::string& key) { return root / "objects" / key.substr(0, 2) / key; }

// The index of a workflow: <root>/index/<workflow>.index, in the line format below. Caches written
// before that format hold <workflow>.json ({"workflow", "nodes": {node: key}}); it is still read, and
// replaced by the new file at the next write.
fs::path index_file(const fs::path& root, const std::string& workflow) {
  return root / "index" / (filesystem_name(workflow) + ".index");
}
fs::path legacy_index_file(const fs::path& root, const std::string& workflow) {
  return root / "index" / (filesystem_name(workflow) + ".json");
}

// What an index file holds for one node: the key its last run used and, when known, how that entry
// looked (so the next run can take the hit with stat() alone).
struct IndexEntry {
  std::string key;
  std::shared_ptr<const CacheReceipt> receipt;
};

struct IndexFile {
  std::string workflow;
  std::map<std::string, IndexEntry> nodes;
};

// The index is read at the start of every run, so it is plain text that parses without building a
// JSON tree (a JSON index of a thousand nodes with receipts took longer to parse than the rest of a
// cached run). One line per node, tab-separated, names percent-encoded ('%' and control characters):
//
//   aispflow-index 2
//   workflow <name>
//   node <name> <key> [<digest> <verdict> <record device> <record inode> <record bytes> <record mtime_ns>
//                      <file count> (<file name> <bytes> <mtime_ns>)...]
constexpr std::string_view kIndexMagic = "aispflow-index 2";

void append_index_field(std::string& out, std::string_view text) {
  out += '\t';
  for (unsigned char c : text) {
    if (c == '%' || c < 0x20) {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
}

std::optional<std::string> decode_index_field(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 3 > text.size()) return std::nullopt;
    const auto [end, error] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (error != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

std::string index_text(const std::string& workflow, const std::map<std::string, IndexEntry>& nodes) {
  std::string out(kIndexMagic);
  out += "\nworkflow";
  append_index_field(out, workflow);
  out += '\n';
  for (const auto& [node, entry] : nodes) {
    out += "node";
    append_index_field(out, node);
    append_index_field(out, entry.key);
    if (const auto& r = entry.receipt) {
      append_index_field(out, r->digest);
      append_index_field(out, to_string(r->verdict));
      for (const auto& number : {std::to_string(r->record_device), std::to_string(r->record_inode),
                                 std::to_string(r->record_bytes), std::to_string(r->record_mtime_ns),
                                 std::to_string(r->files.size())})
        append_index_field(out, number);
      for (const auto& f : r->files) {
        append_index_field(out, f.name);
        append_index_field(out, std::to_string(f.bytes));
        append_index_field(out, std::to_string(f.mtime_ns));
      }
    }
    out += '\n';
  }
  return out;
}

template <typename Number>
bool parse_number(std::string_view text, Number& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// A "node" line's fields after the tag: false if it names no node and key. A malformed receipt
// leaves the key standing (it only costs the fast path).
bool parse_node_line(const std::vector<std::string_view>& fields, std::string& node, IndexEntry& entry) {
  if (fields.size() < 2) return false;
  auto name = decode_index_field(fields[0]);
  if (!name) return false;
  node = std::move(*name);
  entry.key = std::string(fields[1]);
  std::size_t file_count = 0;
  auto r = std::make_shared<CacheReceipt>();
  constexpr std::size_t kFirstFile = 9;
  if (fields.size() < kFirstFile || !parse_number(fields[4], r->record_device) ||
      !parse_number(fields[5], r->record_inode) || !parse_number(fields[6], r->record_bytes) ||
      !parse_number(fields[7], r->record_mtime_ns) || !parse_number(fields[8], file_count) ||
      fields.size() != kFirstFile + 3 * file_count)
    return true;
  if (!is_valid_key(entry.key)) return true;
  r->key = entry.key;
  r->digest = std::string(fields[2]);
  r->verdict = verdict_from_string(std::string(fields[3]));
  for (std::size_t i = 0; i < file_count; ++i) {
    CacheReceipt::File f;
    const std::size_t at = kFirstFile + 3 * i;
    auto file_name = decode_index_field(fields[at]);
    if (!file_name || !is_safe_relative_name(*file_name) || !parse_number(fields[at + 1], f.bytes) ||
        !parse_number(fields[at + 2], f.mtime_ns))
      return true;
    f.name = std::move(*file_name);
    r->files.push_back(std::move(f));
  }
  entry.receipt = std::move(r);
  return true;
}

// The index file's content; empty when missing or unreadable (an unreadable index only loses "why"
// explanations and fast hits). Reads the line format and the older JSON one.
IndexFile read_index_file(const fs::path& file) {
  IndexFile index;
  std::string text;
  if (!try_read_file(file, text)) return index;
  if (!text.empty() && text.front() == '{') {
    try {
      const json doc = json::parse(text);
      index.workflow = doc.value("workflow", std::string());
      for (const auto& [node, key] : doc.at("nodes").items())
        if (key.is_string()) index.nodes[node].key = key.get<std::string>();
    } catch (const std::exception&) {
      index.nodes.clear();
    }
    return index;
  }
  std::string_view rest(text);
  if (rest.substr(0, kIndexMagic.size()) != kIndexMagic) return index;
  std::vector<std::string_view> fields;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    fields.clear();
    for (std::size_t tab; (tab = line.find('\t')) != std::string_view::npos; line.remove_prefix(tab + 1))
      fields.push_back(line.substr(0, tab));
    fields.push_back(line);
    if (fields.size() < 2) continue;
    const std::string_view tag = fields.front();
    fields.erase(fields.begin());
    if (tag == "workflow") {
      if (auto name = decode_index_field(fields[0])) index.workflow = std::move(*name);
    } else if (tag == "node") {
      std::string node;
      IndexEntry entry;
      if (parse_node_line(fields, node, entry)) index.nodes[std::move(node)] = std::move(entry);
    }
  }
  return index;
}

void check_key(const std::string& key) {
  if (!is_valid_key(key)) throw std::invalid_argument("invalid cache key '" + key + "'");
}

// A workflow's index, from its file (or the older JSON one, for caches written before the line format).
std::map<std::string, IndexEntry> read_workflow_index(const fs::path& root, const std::string& workflow) {
  const fs::path file = index_file(root, workflow);
  std::error_code ec;
  if (fs::exists(file, ec) || !fs::exists(legacy_index_file(root, workflow), ec)) return read_index_file(file).nodes;
  return read_index_file(legacy_index_file(root, workflow)).nodes;
}

// Every key an index file points at, with its "workflow/node" label.
std::vector<std::pair<std::string, std::string>> read_index(const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (fs::directory_iterator it(root / "index", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    const auto extension = it->path().extension();
    if (!it->is_regular_file(type_ec) || is_temporary(it->path()) || (extension != ".index" && extension != ".json"))
      continue;
    IndexFile index = read_index_file(it->path());
    const std::string workflow = index.workflow.empty() ? it->path().stem().string() : index.workflow;
    for (const auto& [node, entry] : index.nodes) out.emplace_back(entry.key, workflow + "/" + node);
  }
  return out;
}

}  // namespace

Cache::Cache(fs::path root) : root_(std::move(root)) {}

int Cache::objects_dir_fd() const {
  int fd = objects_fd_.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  std::lock_guard guard(objects_fd_mutex_);
  fd = objects_fd_.load(std::memory_order_relaxed);
  if (fd < 0) {
    fd = ::open((root_ / "objects").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) objects_fd_.store(fd, std::memory_order_release);
  }
  return fd;
}

std::optional<Artifact> Cache::lookup(const std::string& key,
                                      const std::function<void(const std::string&)>& warn) const {
  if (key.size() < 3 || !std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c); })) {
    return std::nullopt;  // not a key this cache could have written
  }
  const fs::path dir = entry_dir(root_, key);
  std::string text;
  struct stat record_facts {};
  std::optional<std::string> why;
  Artifact artifact;
  auto receipt = std::make_shared<CacheReceipt>();
  if (!try_read_file(dir / kArtifactFile, text, &record_facts)) {
    const int error = errno;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return std::nullopt;  // a plain miss
    why = std::string(kArtifactFile) + " is unreadable: " + std::strerror(error);
  } else {
    why = read_entry(key, dir, text, record_facts, artifact, *receipt);
  }
  if (why) {
    if (warn) warn("cache entry " + key + " is corrupt (" + *why + "); it will be rebuilt");
    discard_entry(dir);
    return std::nullopt;
  }
  artifact.receipt = std::move(receipt);
  return artifact;
}

std::optional<Artifact> Cache::recognise(const std::shared_ptr<const CacheReceipt>& receipt) const {
  // stat()s relative to the open objects/ directory: a cached run of a thousand nodes makes a few
  // thousand of them, and each full path would be walked from the root again.
  const int objects = objects_dir_fd();
  if (objects < 0) return std::nullopt;
  const std::string& key = receipt->key;
  std::string relative = key.substr(0, 2) + '/' + key + '/';
  const std::size_t entry_prefix = relative.size();
  relative += kArtifactFile;
  struct stat st {};
  if (::fstatat(objects, relative.c_str(), &st, 0) != 0 || static_cast<std::uint64_t>(st.st_dev) != receipt->record_device ||
      static_cast<std::uint64_t>(st.st_ino) != receipt->record_inode ||
      static_cast<std::uintmax_t>(st.st_size) != receipt->record_bytes || mtime_ns(st) != receipt->record_mtime_ns)
    return std::nullopt;
  const fs::path dir = entry_dir(root_, key);
  Artifact artifact;
  for (const auto& file : receipt->files) {
    relative.replace(entry_prefix, std::string::npos, file.name);
    if (::fstatat(objects, relative.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uintmax_t>(st.st_size) != file.bytes || mtime_ns(st) != file.mtime_ns)
      return std::nullopt;
    artifact.files.push_back(file.name);
  }
  artifact.verdict = receipt->verdict;
  artifact.dir = dir;
  artifact.digest = receipt->digest;
  artifact.receipt = receipt;
  // The record is read only if someone reads data(); it must still be the one the receipt describes.
  artifact.set_data_loader([dir, key = receipt->key, digest = receipt->digest] {
    std::string text;
    Record record;
    if (!try_read_file(dir / kArtifactFile, text)) throw errno_error("cannot read cache entry", dir / kArtifactFile);
    if (auto why = parse_record(key, text, record)) {
      discard_entry(dir);  // as lookup() would: the next run rebuilds it
      throw std::runtime_error("cache entry " + key + " is corrupt (" + *why + "); it was removed, run again to rebuild it");
    }
    if (record.digest != digest)
      throw std::runtime_error("cache entry " + key + " was replaced while this run used it; run again");
    return std::move(record.data);
  });
  return artifact;
}

namespace {

// Swaps two directories in one atomic step (Linux renameat2 RENAME_EXCHANGE), so readers see the old
// entry or the new one, never none. Where the filesystem cannot exchange, the old entry is renamed
// aside first: a reader in that instant sees a miss, which only costs it a re-run.
bool exchange_directories(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
#endif
  const fs::path aside = b.string() + kTempMarker + "replaced-" + unique_suffix();
  std::error_code ec;
  fs::rename(b, aside, ec);
  if (ec) return false;
  fs::rename(a, b, ec);
  if (ec) {
    fs::rename(aside, b, ec);
    return false;
  }
  fs::rename(aside, a, ec);  // the caller removes `a`, as after an exchange
  return !ec;
}

}  // namespace

Artifact Cache::store(const std::string& key, const KeyInputs& inputs, const json& data, Verdict verdict,
                      const fs::path& files_dir, bool replace) {
  check_key(key);
  const fs::path final_dir = entry_dir(root_, key);
  fs::create_directories(final_dir.parent_path());
  const fs::path temp_dir = final_dir.parent_path() / (key + kTempMarker + unique_suffix());
  fs::create_directory(temp_dir);

  try {
    // 1. Move the node's output files in, keeping their relative paths.
    std::vector<StoredFile> files;
    const std::time_t stamp_seconds = std::time(nullptr) - 2;  // strictly before any later write
    std::error_code ec;
    if (!files_dir.empty() && fs::is_directory(files_dir, ec)) {
      std::vector<fs::path> sources;
      for (fs::recursive_directory_iterator it(files_dir), end; it != end; ++it) {
        if (it->is_regular_file()) sources.push_back(it->path());  // follows symlinks to files
      }
      for (const auto& source : sources) {
        const std::string name = source.lexically_relative(files_dir).generic_string();
        if (name == kArtifactFile) {
          throw std::runtime_error("an output file may not be named " + std::string(kArtifactFile) +
                                   " (the cache keeps its own record under that name)");
        }
        move_file(source, temp_dir / name);
        const auto facts = examine_file(temp_dir / name);
        if (!facts || !facts->regular) throw errno_error("cannot read", temp_dir / name);
        files.push_back({name, facts->digest, facts->bytes, stamp_file(temp_dir / name, stamp_seconds)});
      }
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

    // 2. The record. Data goes through its canonical text once, so what store() returns is exactly
    //    what a later lookup() reads back (e.g. NaN becomes null in both).
    const json stored_data = json::parse(canonical_dump(data));
    std::map<std::string, std::string> file_digests;
    json file_list = json::array();
    for (const auto& f : files) {
      file_digests[f.name] = f.digest;
      json entry{{"name", f.name}, {"digest", f.digest}, {"bytes", f.bytes}};
      if (f.stamp_ns != 0) entry["stamp_ns"] = f.stamp_ns;
      file_list.push_back(std::move(entry));
    }
    const std::string digest = artifact_digest(stored_data, verdict, file_digests);
    const json record{{"key", key},           {"type", inputs.type},   {"inputs", inputs.to_json()},
                      {"data", stored_data},  {"verdict", to_string(verdict)}, {"files", file_list},
                      {"digest", digest},     {"created", now_iso8601()}};
    // The directory is still private to us, so a plain write suffices; the fsync makes sure the
    // entry is never published with a record that a crash could still empty.
    write_new_file(temp_dir / kArtifactFile, canonical_dump(record, 1), true, final_dir / kArtifactFile);

    // 3. Publish. rename() of a directory is atomic: readers see no entry or a complete one.
    for (int attempt = 0; attempt < 2; ++attempt) {
      fs::rename(temp_dir, final_dir, ec);
      if (ec && replace && exchange_directories(temp_dir, final_dir)) {
        fs::remove_all(temp_dir, ec);  // now holds the replaced entry; gc removes it if this fails
        ec.clear();
      }
      if (!ec) {
        Artifact artifact;
        artifact.set_data(stored_data);
        artifact.verdict = verdict;
        artifact.dir = final_dir;
        for (const auto& f : files) artifact.files.push_back(f.name);
        artifact.digest = digest;
        struct stat record_facts {};
        if (::stat((final_dir / kArtifactFile).c_str(), &record_facts) == 0) {
          auto receipt = std::make_shared<CacheReceipt>();
          receipt->key = key;
          receipt->digest = digest;
          receipt->verdict = verdict;
          note_record_file(*receipt, record_facts);
          for (const auto& f : files) receipt->files.push_back({f.name, f.bytes, f.stamp_ns});
          artifact.receipt = std::move(receipt);
        }
        return artifact;
      }
      // Someone published this key first. Theirs is as good as ours if it is intact (same key, same
      // inputs); if it is corrupt, lookup() moves it away and we try once more.
      if (auto existing = lookup(key)) {
        fs::remove_all(temp_dir, ec);
        return *existing;
      }
    }
    throw std::runtime_error("cannot store cache entry " + key + " in " + final_dir.string() + ": " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(temp_dir, ignored);
    throw;
  }
}

struct Cache::WorkflowIndex {
  std::string workflow;
  std::map<std::string, IndexEntry> nodes;    // the file as read, plus this process's updates
  std::set<std::string> dirty;         // nodes updated here and not yet written
  std::chrono::steady_clock::time_point last_flush;
};

Cache::~Cache() {
  try {
    flush_index();
  } catch (const std::exception&) {
    // Losing index updates costs at most "why" explanations; a destructor must not throw.
  }
  if (const int fd = objects_fd_.load(); fd >= 0) ::close(fd);
}

Cache::WorkflowIndex& Cache::index_of(const std::string& workflow) const {
  auto& slot = indexes_[workflow];
  if (!slot) {
    slot = std::make_unique<WorkflowIndex>();
    slot->workflow = workflow;
    slot->nodes = read_workflow_index(root_, workflow);
    slot->last_flush = std::chrono::steady_clock::now();
  }
  return *slot;
}

std::optional<Artifact> Cache::lookup_for(const std::string& workflow, const std::string& node, const std::string& key,
                                          const std::function<void(const std::string&)>& warn) const {
  std::shared_ptr<const CacheReceipt> receipt;
  {
    std::lock_guard guard(index_mutex_);
    const WorkflowIndex& index = index_of(workflow);
    if (auto it = index.nodes.find(node); it != index.nodes.end() && it->second.key == key) receipt = it->second.receipt;
  }
  if (receipt) {
    if (auto hit = recognise(receipt)) return hit;
  }
  return lookup(key, warn);
}

void Cache::flush_locked(WorkflowIndex& index) const {
  if (index.dirty.empty()) return;
  CacheLock lock(root_);  // so gc never decides on a half-updated set of references
  // Merge: other processes may have recorded other nodes of this workflow since we read the file.
  std::map<std::string, IndexEntry> merged = read_workflow_index(root_, index.workflow);
  for (const auto& node : index.dirty) merged[node] = index.nodes[node];
  // Atomic but not fsync()ed: an index only explains re-runs and roots gc; losing it in a power cut
  // costs at most a rebuild.
  replace_file(index_file(root_, index.workflow), index_text(index.workflow, merged), false);
  std::error_code ec;
  fs::remove(legacy_index_file(root_, index.workflow), ec);  // now merged into the new file
  index.nodes = std::move(merged);
  index.dirty.clear();
  index.last_flush = std::chrono::steady_clock::now();
}

void Cache::record_last(const std::string& workflow, const std::string& node, const std::string& key,
                        const Artifact* artifact) {
  std::shared_ptr<const CacheReceipt> receipt = artifact ? artifact->receipt : nullptr;
  if (receipt && receipt->key != key) receipt.reset();  // not this key's entry: record the key alone
  std::lock_guard guard(index_mutex_);
  WorkflowIndex& index = index_of(workflow);
  // A fully cached re-run records what is already there, for every node: nothing to do. (Equal keys
  // mean equal inputs: the key is their digest.)
  if (auto it = index.nodes.find(node); it != index.nodes.end() && it->second.key == key) {
    const auto& known = it->second.receipt;
    if (!receipt || receipt == known || (known && *receipt == *known)) return;
  }
  index.nodes[node] = IndexEntry{key, std::move(receipt)};
  index.dirty.insert(node);
  if (std::chrono::steady_clock::now() - index.last_flush > std::chrono::seconds(1)) flush_locked(index);
}

std::optional<Cache::LastRun> Cache::last(const std::string& workflow, const std::string& node) const {
  std::string key;
  {
    std::lock_guard guard(index_mutex_);
    const WorkflowIndex& index = index_of(workflow);
    auto it = index.nodes.find(node);
    if (it == index.nodes.end()) return std::nullopt;  // never ran
    key = it->second.key;
  }
  // The inputs behind the key, from its entry. An entry that is gone (cleared) or unreadable leaves the
  // key alone: the caller can still tell "changed" from "never ran".
  LastRun last{KeyInputs{}, key};
  last.inputs.type.clear();
  std::string text;
  if (!is_valid_key(key) || !try_read_file(entry_dir(root_, key) / kArtifactFile, text)) return last;
  try {
    last.inputs = KeyInputs::from_json(json::parse(text).at("inputs"));
  } catch (const std::exception&) {
  }
  return last;
}

void Cache::flush_index() const {
  std::lock_guard guard(index_mutex_);
  for (auto& [_, index] : indexes_) flush_locked(*index);
}

std::vector<CacheEntryInfo> Cache::list() const {
  flush_index();  // this process's own references count too
  std::map<std::string, std::vector<std::string>> used_by;
  for (auto& [key, label] : read_index(root_)) used_by[key].push_back(std::move(label));

  std::vector<CacheEntryInfo> entries;
  std::error_code ec;
  for (fs::directory_iterator shard(root_ / "objects", ec), end; !ec && shard != end; shard.increment(ec)) {
    std::error_code inner_ec;
    for (fs::directory_iterator it(shard->path(), inner_ec); !inner_ec && it != end; it.increment(inner_ec)) {
      if (is_temporary(it->path())) continue;
      CacheEntryInfo info;
      info.key = it->path().filename().string();
      info.bytes = tree_bytes(it->path());
      std::error_code time_ec;
      info.written = fs::last_write_time(it->path() / kArtifactFile, time_ec);
      if (time_ec) info.written = fs::last_write_time(it->path(), time_ec);
      try {
        info.type = json::parse(read_whole_file(it->path() / kArtifactFile)).value("type", std::string("?"));
      } catch (const std::exception&) {
        info.type = "?";  // corrupt; lookup() will say so and rebuild it
      }
      if (auto found = used_by.find(info.key); found != used_by.end()) {
        info.used_by = found->second;
        std::sort(info.used_by.begin(), info.used_by.end());
      }
      entries.push_back(std::move(info));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return entries;
}

fs::path Cache::make_scratch_dir() {
  auto scratch = std::make_unique<RunScratch>(root_ / "tmp");
  const fs::path dir = scratch->dir();
  std::lock_guard guard(scratch_mutex_);
  scratch_.push_back(std::move(scratch));
  return dir;
}

std::vector<DeadRun> Cache::collect_dead_runs() {
  std::error_code ec;
  if (!fs::is_directory(root_ / "tmp", ec)) return {};
  return aispflow::collect_dead_runs(root_ / "tmp");
}

Cache::GcResult Cache::gc() {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return {};
  flush_index();  // this process's own references count too
  CacheLock lock(root_);
  std::set<std::string> referenced;
  for (const auto& [key, label] : read_index(root_)) referenced.insert(key);

  const auto stale_before = fs::file_time_type::clock::now() - kStaleTempAge;
  auto is_stale = [&](const fs::path& p) {
    std::error_code time_ec;
    const auto written = fs::last_write_time(p, time_ec);
    return !time_ec && written < stale_before;
  };

  std::vector<fs::path> doomed;      // unreferenced entries
  std::vector<fs::path> leftovers;   // everything else gc may remove
  for (fs::directory_iterator shard(root_ / "objects", ec), end; !ec && shard != end; shard.increment(ec)) {
    std::error_code inner_ec;
    for (fs::directory_iterator it(shard->path(), inner_ec); !inner_ec && it != end; it.increment(inner_ec)) {
      if (is_temporary(it->path())) {
        if (is_stale(it->path())) leftovers.push_back(it->path());
      } else if (!referenced.count(it->path().filename().string())) {
        doomed.push_back(it->path());
      }
    }
  }
  // Temporary files of index writes that crashed before their rename.
  for (fs::recursive_directory_iterator it(root_ / "index", ec), end; !ec && it != end; it.increment(ec)) {
    if (is_temporary(it->path()) && is_stale(it->path())) leftovers.push_back(it->path());
  }
  GcResult result;
  // Scratch directories of runs that were killed before they could remove them (and whose every process is gone).
  result.dead_runs = collect_dead_runs();
  for (const auto& dead : result.dead_runs) {
    ++result.leftovers;
    result.bytes += dead.bytes;
  }
  // Parsed workflows: a pure speed-up, one per (file content, --set) ever run; rebuilt when needed.
  ec.clear();
  if (fs::exists(root_ / "workflows", ec)) leftovers.push_back(root_ / "workflows");

  // Returns whether `path` went, adding its size to the bytes freed.
  auto remove = [&](const fs::path& path) {
    std::error_code size_ec;
    const std::uintmax_t size = fs::is_directory(path, size_ec) ? tree_bytes(path) : fs::file_size(path, size_ec);
    std::error_code remove_ec;
    fs::remove_all(path, remove_ec);
    if (remove_ec) return false;
    result.bytes += size_ec ? 0 : size;
    return true;
  };
  for (const auto& path : doomed) result.entries += remove(path);
  for (const auto& path : leftovers) result.leftovers += remove(path);
  return result;
}

void Cache::clear() {
  {
    std::lock_guard guard(index_mutex_);
    indexes_.clear();  // pending updates point at entries about to go
  }
  {
    std::lock_guard guard(objects_fd_mutex_);  // objects/ is about to go: open the new one when needed
    if (const int fd = objects_fd_.exchange(-1); fd >= 0) ::close(fd);
  }
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return;
  CacheLock lock(root_);
  // Everything but the lock file: deleting it while another process waits on it would let a third
  // process lock a fresh file and run at the same time as the waiter.
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == "lock") continue;
    if (it->path().filename() == "tmp") {
      std::error_code tmp_ec;
      collect_dead_runs();
      continue;
    }
    fs::remove_all(it->path());
  }
}

}  // namespace aispflow
