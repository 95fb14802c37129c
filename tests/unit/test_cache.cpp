// The artifact cache: keys, store/lookup, atomicity, corruption, concurrency, "why", gc, clear.
#include "pipeline/cache.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/hash.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

// Every file or directory under `dir` whose name marks it as temporary.
std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().find(".tmp-") != std::string::npos) out.push_back(it->path());
  }
  return out;
}

KeyInputs sample_inputs() {
  KeyInputs k;
  k.type = "command";
  k.type_version = 2;
  k.params = json::parse(R"({"run": "echo a", "providers": ["a"], "timeout_s": 10})");
  k.input_digests = {{"make_a", "00112233445566778899aabbccddeeff"}};
  k.file_digests = {{"data/input.csv", "ffeeddccbbaa99887766554433221100"}};
  k.environment = json::parse(R"({"driver": "570.1", "gpus": [{"name": "H100", "sms": 132}]})");
  return k;
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();  // "Test/Param" for parameterized tests: keep it one directory
    std::replace(name.begin(), name.end(), '/', '_');
    base_ = fs::temp_directory_path() / ("aispflow_test_cache_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(base_);
    fs::create_directories(base_);
    cache_ = std::make_unique<Cache>(base_ / "cache");
  }
  void TearDown() override { fs::remove_all(base_); }

  // A scratch output directory holding `files` (relative name -> content), as a node would leave it.
  fs::path make_outputs(const std::map<std::string, std::string>& files) {
    const fs::path dir = base_ / ("out" + std::to_string(next_out_++));
    fs::create_directories(dir);
    for (const auto& [name, content] : files) write_file(dir / name, content);
    return dir;
  }

  // Stores an entry for `inputs` with one file and returns its key.
  std::string store_sample(const KeyInputs& inputs, const std::string& content = "x") {
    const std::string key = cache_key(inputs);
    cache_->store(key, inputs, json{{"value", content}}, Verdict::ok, make_outputs({{"f.txt", content}}));
    return key;
  }

  fs::path entry_dir(const std::string& key) { return base_ / "cache" / "objects" / key.substr(0, 2) / key; }

  // Stores an entry for sample_inputs() with f.txt = "abc", as node "node" of workflow "wf" would: recorded
  // as its last run (with the receipt) and the index written, so a new Cache sees it as the next run would.
  Artifact store_as_last_run(const json& data, Verdict verdict = Verdict::ok) {
    const KeyInputs inputs = sample_inputs();
    const std::string key = cache_key(inputs);
    const Artifact stored = cache_->store(key, inputs, data, verdict, make_outputs({{"f.txt", "abc"}}));
    cache_->record_last("wf", "node", key, &stored);
    cache_->flush_index();
    return stored;
  }

  std::vector<std::string> warnings_;
  std::function<void(const std::string&)> warn_ = [this](const std::string& w) { warnings_.push_back(w); };
  fs::path base_;
  std::unique_ptr<Cache> cache_;
  int next_out_ = 0;
};

// ---- keys --------------------------------------------------------------------------------------

TEST(CacheKey, StableUnderParamReordering) {
  KeyInputs a = sample_inputs(), b = sample_inputs();
  a.params = json::parse(R"({"m": 1, "n": {"x": [1, 2], "y": "s"}, "k": true})");
  b.params = json::parse(R"({"k": true, "n": {"y": "s", "x": [1, 2]}, "m": 1})");
  EXPECT_EQ(cache_key(a), cache_key(b));
  EXPECT_EQ(cache_key(a).size(), 32u);
}

TEST(CacheKey, ChangesForEveryField) {
  const KeyInputs base = sample_inputs();
  std::vector<KeyInputs> variants;
  auto vary = [&](auto change) {
    KeyInputs k = base;
    change(k);
    variants.push_back(k);
  };
  vary([](KeyInputs& k) { k.type = "other"; });
  vary([](KeyInputs& k) { k.type_version = 3; });
  vary([](KeyInputs& k) { k.params["run"] = "echo b"; });
  vary([](KeyInputs& k) { k.params["repeats"] = 5; });
  vary([](KeyInputs& k) { k.params.erase("timeout_s"); });
  vary([](KeyInputs& k) { k.params["timeout_s"] = "10"; });  // same text, other YAML type
  vary([](KeyInputs& k) { k.input_digests["make_a"] = "0"; });
  vary([](KeyInputs& k) { k.input_digests["make_b"] = "1"; });
  vary([](KeyInputs& k) { k.file_digests["data/input.csv"] = "2"; });
  vary([](KeyInputs& k) { k.file_digests.clear(); });
  vary([](KeyInputs& k) { k.environment["driver"] = "580.2"; });
  vary([](KeyInputs& k) { k.environment = nullptr; });

  std::set<std::string> keys{cache_key(base)};
  for (const auto& v : variants) keys.insert(cache_key(v));
  EXPECT_EQ(keys.size(), variants.size() + 1) << "some field change did not change the key";
}

// The key is documented (docs/cache.md) as the digest of the canonical JSON of KeyInputs; cache_key()
// writes that text by hand for speed. Any drift would silently invalidate every stored entry.
TEST(CacheKey, IsTheDigestOfTheCanonicalJsonOfKeyInputs) {
  KeyInputs k = sample_inputs();
  k.type = "t\"y\\pe";
  k.input_digests["node \"q\" \u00e9[x=1]"] = "0123";
  k.file_digests["dir/\tf\x01.csv"] = "4567";
  k.params["bad utf8"] = std::string("\xff\xfe");
  for (const json& environment : {json(nullptr), k.environment}) {
    k.environment = environment;
    Hasher expected;
    expected.add_field("aispflow cache key", "1");
    expected.add_field("inputs", k.to_json().dump(-1, ' ', false, json::error_handler_t::replace));
    EXPECT_EQ(cache_key(k), expected.hex());
  }
  k.input_digests.clear();
  k.file_digests.clear();
  Hasher expected;
  expected.add_field("aispflow cache key", "1");
  expected.add_field("inputs", k.to_json().dump(-1, ' ', false, json::error_handler_t::replace));
  EXPECT_EQ(cache_key(k), expected.hex());
}

TEST(CacheKey, KeyInputsRoundTripThroughJson) {
  const KeyInputs k = sample_inputs();
  EXPECT_EQ(KeyInputs::from_json(json::parse(k.to_json().dump())), k);
}

// ---- store and lookup --------------------------------------------------------------------------

TEST_F(CacheTest, StoreThenLookupRoundTripsDataFilesAndSubdirectories) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  const fs::path out = make_outputs({{"a.txt", "alpha\n"}, {"sub/x.csv", "m,n\n1,2\n"}, {"sub/deeper/y", ""}});
  const json data{{"rows", 2}, {"name", "demo"}};

  const Artifact stored = cache_->store(key, inputs, data, Verdict::expectations_not_met, out);
  EXPECT_EQ(stored.files, (std::vector<std::string>{"a.txt", "sub/deeper/y", "sub/x.csv"}));
  EXPECT_FALSE(fs::exists(out / "a.txt")) << "files are moved into the cache, not copied";

  const auto found = cache_->lookup(key, warn_);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(found->data(), data);
  EXPECT_EQ(found->verdict, Verdict::expectations_not_met);
  EXPECT_EQ(found->files, stored.files);
  EXPECT_EQ(found->digest, stored.digest);
  EXPECT_EQ(found->dir, entry_dir(key));
  EXPECT_EQ(read_file(found->dir / "sub/x.csv"), "m,n\n1,2\n");
  EXPECT_EQ(read_file(found->dir / "a.txt"), "alpha\n");

  const json record = json::parse(read_file(found->dir / "artifact.json"));
  EXPECT_EQ(record["key"], key);
  EXPECT_EQ(record["type"], "command");
  EXPECT_EQ(KeyInputs::from_json(record["inputs"]), inputs);
  EXPECT_EQ(record["files"].size(), 3u);
  EXPECT_TRUE(record.contains("created"));
  EXPECT_TRUE(temporaries(base_ / "cache").empty());
}

TEST_F(CacheTest, StoreWithoutFiles) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  cache_->store(key, inputs, json{{"v", 1}}, Verdict::ok, fs::path());
  const auto found = cache_->lookup(key);
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->files.empty());
  EXPECT_EQ(found->data(), (json{{"v", 1}}));
}

TEST_F(CacheTest, ArtifactDigestDependsOnContentNotOnKey) {
  KeyInputs a = sample_inputs(), b = sample_inputs();
  b.params["run"] = "echo different";
  const auto da = cache_->store(cache_key(a), a, json{{"v", 1}}, Verdict::ok, make_outputs({{"f", "1"}})).digest;
  const auto db = cache_->store(cache_key(b), b, json{{"v", 1}}, Verdict::ok, make_outputs({{"f", "1"}})).digest;
  EXPECT_EQ(da, db) << "same output under another key must have the same digest (early cutoff)";

  const std::map<std::string, std::string> files{{"f", digest_bytes("1")}};
  EXPECT_EQ(artifact_digest(json{{"v", 1}}, Verdict::ok, files), da);
  EXPECT_NE(artifact_digest(json{{"v", 2}}, Verdict::ok, files), da);
  EXPECT_NE(artifact_digest(json{{"v", 1}}, Verdict::expectations_not_met, files), da);
  EXPECT_NE(artifact_digest(json{{"v", 1}}, Verdict::ok, {{"f", digest_bytes("2")}}), da);
  EXPECT_NE(artifact_digest(json{{"v", 1}}, Verdict::ok, {{"g", digest_bytes("1")}}), da);
}

TEST_F(CacheTest, MissIsSilent) {
  EXPECT_FALSE(cache_->lookup(cache_key(sample_inputs()), warn_));
  EXPECT_TRUE(warnings_.empty());
  EXPECT_FALSE(cache_->lookup("../../etc", warn_));
}

TEST_F(CacheTest, SecondStoreOfSameKeyKeepsTheFirstEntry) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  const auto first = cache_->store(key, inputs, json{{"run", 1}}, Verdict::ok, make_outputs({{"f", "first"}}));
  const auto second = cache_->store(key, inputs, json{{"run", 2}}, Verdict::ok, make_outputs({{"f", "second"}}));
  EXPECT_EQ(second.data(), first.data());
  EXPECT_EQ(second.digest, first.digest);
  EXPECT_EQ(read_file(entry_dir(key) / "f"), "first");
  EXPECT_TRUE(temporaries(base_ / "cache").empty());
}

TEST_F(CacheTest, ReplacingStoreSwapsInTheNewEntry) {
  // A forced re-run must leave its own results in the cache (and so in --out), not the old ones.
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  const auto first = cache_->store(key, inputs, json{{"run", 1}}, Verdict::ok, make_outputs({{"f", "first"}}));
  const auto second =
      cache_->store(key, inputs, json{{"run", 2}}, Verdict::ok, make_outputs({{"f", "second"}}), /*replace=*/true);
  EXPECT_NE(second.digest, first.digest);
  EXPECT_EQ(second.data(), (json{{"run", 2}}));
  EXPECT_EQ(read_file(entry_dir(key) / "f"), "second");
  auto found = cache_->lookup(key, warn_);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->digest, second.digest);
  EXPECT_TRUE(warnings_.empty());
  EXPECT_TRUE(temporaries(base_ / "cache").empty()) << "the replaced entry is removed";
}

TEST_F(CacheTest, GcRemovesScratchOfDeadRunsAndParsedWorkflowsButNotLiveScratch) {
  const fs::path live = cache_->make_scratch_dir();   // this process: alive
  write_file(live / "0" / "partial.txt", "in progress");
  // A run killed before it could clean up; pid 2^22+1 is above Linux's pid_max, so never alive.
  const fs::path dead = base_ / "cache" / "tmp" / "run-4194305-0123456789abcdef";
  write_file(dead / "0" / "partial.txt", "abandoned");
  write_file(base_ / "cache" / "workflows" / "parsed.json", "{}");
  const auto gc = cache_->gc();
  EXPECT_EQ(gc.entries, 0u);
  EXPECT_EQ(gc.leftovers, 2u);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(base_ / "cache" / "workflows"));
  EXPECT_TRUE(fs::exists(live / "0" / "partial.txt"));
  cache_->clear();
  EXPECT_TRUE(fs::exists(live / "0" / "partial.txt")) << "clear must not pull a live run's outputs away";
}

TEST_F(CacheTest, OutputFileNamedArtifactJsonIsRejectedAndLeavesNothingBehind) {
  const KeyInputs inputs = sample_inputs();
  EXPECT_THROW(cache_->store(cache_key(inputs), inputs, json::object(), Verdict::ok,
                             make_outputs({{"artifact.json", "{}"}})),
               std::runtime_error);
  EXPECT_TRUE(temporaries(base_ / "cache").empty());
  EXPECT_FALSE(cache_->lookup(cache_key(inputs)));
}

// ---- atomicity -----------------------------------------------------------------------------------

TEST_F(CacheTest, CrashedWriterLeftoverIsIgnoredAndCollectedWhenOld) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  // What a writer killed before its rename leaves: a complete-looking entry under a temporary name.
  const fs::path old_tmp = entry_dir(key).string() + ".tmp-999999-deadbeef";
  write_file(old_tmp / "artifact.json", R"({"key": ")" + key + R"(", "data": {}, "digest": "x"})");
  const fs::path fresh_tmp = entry_dir(key).string() + ".tmp-999998-cafe";
  write_file(fresh_tmp / "artifact.json", "{}");
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(2));

  EXPECT_FALSE(cache_->lookup(key, warn_)) << "a temporary directory is never an entry";
  EXPECT_TRUE(warnings_.empty());
  EXPECT_TRUE(cache_->list().empty());

  const auto gc = cache_->gc();
  EXPECT_EQ(gc.entries, 0u);
  EXPECT_EQ(gc.leftovers, 1u);
  EXPECT_GT(gc.bytes, 0u);
  EXPECT_FALSE(fs::exists(old_tmp));
  EXPECT_TRUE(fs::exists(fresh_tmp)) << "a recent temporary may belong to a live writer";

  store_sample(inputs);  // the key's place is free
  EXPECT_TRUE(cache_->lookup(key));
}

TEST(AtomicWriteFile, WritesReplacesAndLeavesNoTemporaries) {
  const fs::path dir = fs::temp_directory_path() / ("aispflow_test_atomic_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path file = dir / "nested" / "run.json";
  atomic_write_file(file, "first");
  EXPECT_EQ(read_file(file), "first");
  atomic_write_file(file, std::string("sec\0ond", 7));
  EXPECT_EQ(read_file(file), std::string("sec\0ond", 7));
  EXPECT_TRUE(temporaries(dir).empty());
  fs::remove_all(dir);
}

TEST(AtomicWriteFile, FailureNamesThePath) {
  try {
    atomic_write_file("/proc/aispflow-cannot-write-here/x.json", "x");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("aispflow-cannot-write-here"), std::string::npos) << e.what();
  }
}

// ---- corruption ----------------------------------------------------------------------------------

struct Corruption {
  const char* name;
  std::function<void(const fs::path& entry)> damage;
  const char* expected_why;  // part of the warning
};
void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

class CorruptEntryTest : public CacheTest, public ::testing::WithParamInterface<Corruption> {};

TEST_P(CorruptEntryTest, IsAMissWithAWarningAndCanBeStoredAgain) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  const fs::path out = make_outputs({{"f.txt", "payload"}, {"sub/g.csv", "1,2"}});
  cache_->store(key, inputs, json{{"value", "v"}}, Verdict::ok, out);
  ASSERT_TRUE(cache_->lookup(key));

  GetParam().damage(entry_dir(key));

  std::optional<Artifact> found;
  EXPECT_NO_THROW(found = cache_->lookup(key, warn_));
  EXPECT_FALSE(found);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("cache entry " + key + " is corrupt ("), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find(GetParam().expected_why), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("); it will be rebuilt"), std::string::npos) << warnings_[0];

  store_sample(inputs, "rebuilt");
  const auto again = cache_->lookup(key, warn_);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->data()["value"], "rebuilt");
  EXPECT_EQ(warnings_.size(), 1u);
}

TEST_P(CorruptEntryTest, StoreOverACorruptEntryWithoutLookupReplacesIt) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);
  cache_->store(key, inputs, json{{"value", "v"}}, Verdict::ok, make_outputs({{"f.txt", "payload"}, {"sub/g.csv", "1,2"}}));
  GetParam().damage(entry_dir(key));
  store_sample(inputs, "fresh");
  const auto found = cache_->lookup(key, warn_);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->data()["value"], "fresh");
  EXPECT_TRUE(warnings_.empty());
}

std::string truncated(const std::string& s) { return s.substr(0, s.size() / 2); }

INSTANTIATE_TEST_SUITE_P(
    Cache, CorruptEntryTest,
    ::testing::Values(
        Corruption{"TruncatedArtifactJson",
                   [](const fs::path& e) { write_file(e / "artifact.json", truncated(read_file(e / "artifact.json"))); },
                   "artifact.json is unreadable"},
        Corruption{"EmptyArtifactJson", [](const fs::path& e) { write_file(e / "artifact.json", ""); },
                   "artifact.json is unreadable"},
        Corruption{"MissingArtifactJson", [](const fs::path& e) { fs::remove(e / "artifact.json"); },
                   "artifact.json is unreadable"},
        Corruption{"DeletedFile", [](const fs::path& e) { fs::remove(e / "sub/g.csv"); }, "file sub/g.csv is missing"},
        Corruption{"TruncatedFile", [](const fs::path& e) { write_file(e / "f.txt", "pay"); }, "file f.txt has 3 bytes"},
        Corruption{"SameSizeDifferentBytes", [](const fs::path& e) { write_file(e / "f.txt", "PAYLOAD"); },
                   "file f.txt has changed content"},
        Corruption{"EditedData",
                   [](const fs::path& e) {
                     json doc = json::parse(read_file(e / "artifact.json"));
                     doc["data"]["value"] = "tampered";
                     write_file(e / "artifact.json", doc.dump());
                   },
                   "does not match its digest"},
        Corruption{"FileListNotAList",
                   [](const fs::path& e) {
                     json doc = json::parse(read_file(e / "artifact.json"));
                     doc["files"] = 42;
                     write_file(e / "artifact.json", doc.dump());
                   },
                   "artifact.json is malformed"},
        Corruption{"EscapingFileName",
                   [](const fs::path& e) {
                     json doc = json::parse(read_file(e / "artifact.json"));
                     doc["files"][0]["name"] = "../../outside";
                     write_file(e / "artifact.json", doc.dump());
                   },
                   "leaves the entry"}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- concurrency ---------------------------------------------------------------------------------

// What every process stores for key number i, so that whichever process wins, the content is known.
KeyInputs concurrent_inputs(int i) {
  KeyInputs k = sample_inputs();
  k.params = json{{"i", i}};
  return k;
}
std::string concurrent_content(int i) { return std::string(1000 + i, static_cast<char>('a' + i % 26)); }

TEST_F(CacheTest, ConcurrentProcessesStoreAndLookUpSafely) {
  constexpr int kProcesses = 8;
  constexpr int kSharedKeys = 12;   // every process stores these
  constexpr int kPrivateKeys = 6;   // per process, not shared
  const fs::path root = base_ / "cache";

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int failures = 0;
      try {
        Cache cache(root);
        const fs::path scratch = base_ / ("proc" + std::to_string(p));
        for (int round = 0; round < kSharedKeys + kPrivateKeys; ++round) {
          const int i = round < kSharedKeys ? (round + p) % kSharedKeys : 1000 + p * 100 + round;
          const KeyInputs inputs = concurrent_inputs(i);
          const std::string key = cache_key(inputs);
          const fs::path out = scratch / std::to_string(round);
          write_file(out / "sub" / "data.bin", concurrent_content(i));
          const Artifact a = cache.store(key, inputs, json{{"i", i}}, Verdict::ok, out);
          const auto found = cache.lookup(key, [&](const std::string&) { ++failures; });
          if (!found || found->data() != json{{"i", i}} || found->digest != a.digest ||
              read_file(found->dir / "sub" / "data.bin") != concurrent_content(i)) {
            ++failures;
          }
          cache.record_last("wf", "node" + std::to_string(i % 5), key);
          if (!cache.last("wf", "node" + std::to_string(i % 5))) ++failures;
        }
      } catch (...) {
        ++failures;
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " saw a bad entry";
  }

  // Afterwards every entry is intact and nothing temporary is left over.
  std::vector<int> all;
  for (int i = 0; i < kSharedKeys; ++i) all.push_back(i);
  for (int p = 0; p < kProcesses; ++p)
    for (int round = kSharedKeys; round < kSharedKeys + kPrivateKeys; ++round) all.push_back(1000 + p * 100 + round);
  for (int i : all) {
    const auto found = cache_->lookup(cache_key(concurrent_inputs(i)), warn_);
    ASSERT_TRUE(found) << "entry " << i;
    EXPECT_EQ(read_file(found->dir / "sub" / "data.bin"), concurrent_content(i));
  }
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(cache_->list().size(), all.size());
  EXPECT_TRUE(temporaries(root).empty());
}

// ---- last run and "why" --------------------------------------------------------------------------

TEST_F(CacheTest, RecordLastRoundTripsAndEncodesMatrixNames) {
  const std::vector<std::string> nodes{"plain", "per_size[size=1]", "gemm[m=4096,n=1,dtype=f16]",
                                       "per_size%5Bsize%3D1%5D", ".hidden", "..", "a/b", std::string(400, 'n')};
  int n = 0;
  std::vector<std::string> keys;
  for (const auto& node : nodes) {
    KeyInputs inputs = sample_inputs();
    inputs.params = json{{"n", n}};
    keys.push_back(store_sample(inputs));  // the inputs behind a key come from its entry
    cache_->record_last("demo[x=1]", node, keys.back());
    ++n;
  }
  n = 0;
  for (const auto& node : nodes) {
    const auto last = cache_->last("demo[x=1]", node);
    ASSERT_TRUE(last) << node;
    EXPECT_EQ(last->key, keys[n]) << node;
    EXPECT_EQ(last->inputs.params, (json{{"n", n}})) << node;
    ++n;
  }
  // A key whose entry is gone still says "ran before", with no inputs to compare against.
  cache_->record_last("demo[x=1]", "orphan", "0123456789abcdef");
  ASSERT_TRUE(cache_->last("demo[x=1]", "orphan"));
  EXPECT_TRUE(cache_->last("demo[x=1]", "orphan")->inputs.type.empty());
  EXPECT_FALSE(cache_->last("demo[x=1]", "never_ran"));
  EXPECT_FALSE(cache_->last("other", "plain"));

  // One index file per workflow; another process (a fresh Cache) reads back what this one wrote.
  cache_->flush_index();
  const fs::path index = base_ / "cache" / "index";
  std::size_t files = 0, dirs = 0;
  for (const auto& e : fs::recursive_directory_iterator(index)) (e.is_directory() ? dirs : files)++;
  EXPECT_EQ(dirs, 0u);
  EXPECT_EQ(files, 1u);
  Cache reader(base_ / "cache");
  n = 0;
  for (const auto& node : nodes) {
    const auto last = reader.last("demo[x=1]", node);
    ASSERT_TRUE(last) << node;
    EXPECT_EQ(last->key, keys[n++]) << node;
  }
}

TEST_F(CacheTest, IndexUpdatesOfTwoProcessesMerge) {
  // Two runs of one workflow at once, each recording different nodes: neither loses the other's.
  Cache first(base_ / "cache"), second(base_ / "cache");
  EXPECT_FALSE(second.last("wf", "a"));  // second has read the (empty) index before first writes
  first.record_last("wf", "a", "ka");
  first.flush_index();
  second.record_last("wf", "b", "kb");
  second.flush_index();
  Cache reader(base_ / "cache");
  ASSERT_TRUE(reader.last("wf", "a"));
  ASSERT_TRUE(reader.last("wf", "b"));
  EXPECT_EQ(reader.last("wf", "a")->key, "ka");
  EXPECT_EQ(reader.last("wf", "b")->key, "kb");
}

TEST_F(CacheTest, CorruptIndexFileMeansNoPreviousRun) {
  cache_->record_last("wf", "n", "k1");
  cache_->flush_index();
  for (const auto& e : fs::recursive_directory_iterator(base_ / "cache" / "index"))
    if (e.is_regular_file()) write_file(e.path(), "{not json");
  Cache fresh(base_ / "cache");
  EXPECT_FALSE(fresh.last("wf", "n"));
  fresh.record_last("wf", "n", "k2");
  fresh.flush_index();
  Cache reader(base_ / "cache");
  ASSERT_TRUE(reader.last("wf", "n"));
  EXPECT_EQ(reader.last("wf", "n")->key, "k2");
}

// ---- fast hits: recognising the last run's entry from its metadata ---------------------------------

// Overwrites `file` in place with other bytes of the same length and puts its modification time back:
// the one edit a stat() cannot see.
void rewrite_keeping_size_and_time(const fs::path& file, char from, char to) {
  struct stat before {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  std::string text = read_file(file);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text[at] = to;
  {
    std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);  // same inode
    out << text;
  }
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
}

TEST_F(CacheTest, LastRunsEntryIsRecognisedWithoutReadingItsRecord) {
  const Artifact stored = store_as_last_run(json{{"value", "x"}}, Verdict::expectations_not_met);
  const std::string key = cache_key(sample_inputs());

  // The record's bytes change but not its size, inode or time: only reading it could tell. The fast path
  // does not read it -- the hit carries the digest, verdict and files the receipt recorded...
  rewrite_keeping_size_and_time(entry_dir(key) / "artifact.json", 'x', 'y');
  Cache next_run(base_ / "cache");
  const auto hit = next_run.lookup_for("wf", "node", key, warn_);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->digest, stored.digest);
  EXPECT_EQ(hit->verdict, Verdict::expectations_not_met);
  EXPECT_EQ(hit->files, std::vector<std::string>{"f.txt"});
  EXPECT_EQ(hit->dir, entry_dir(key));
  // ...and reads the record only when its data is asked for, checking it then: a corrupt entry is
  // removed, so the next run rebuilds it.
  try {
    hit->data();
    ADD_FAILURE() << "an altered record was used";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match its digest"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(entry_dir(key)));
  EXPECT_FALSE(next_run.lookup_for("wf", "node", key, warn_));
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, RecognisedHitLoadsItsDataOnFirstUse) {
  store_as_last_run(json{{"value", 7}});
  const std::string key = cache_key(sample_inputs());
  Cache next_run(base_ / "cache");
  const auto hit = next_run.lookup_for("wf", "node", key, warn_);
  ASSERT_TRUE(hit);
  const Artifact copy = *hit;  // copies share one load
  EXPECT_EQ(hit->data(), (json{{"value", 7}}));
  EXPECT_EQ(&copy.data(), &hit->data());
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, AnEntryThatChangedSinceTheLastRunIsCheckedInFull) {
  store_as_last_run(json{{"value", 1}});
  const KeyInputs inputs = sample_inputs();
  const std::string key = cache_key(inputs);

  // Edited through a hard link (as under --out): same size, but the time moves, so the fast path
  // declines and the full check hashes the file.
  fs::create_hard_link(entry_dir(key) / "f.txt", base_ / "link.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  write_file(base_ / "link.txt", "abd");
  Cache next_run(base_ / "cache");
  EXPECT_FALSE(next_run.lookup_for("wf", "node", key, warn_));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("f.txt has changed content"), std::string::npos) << warnings_[0];

  // A replaced entry (a forced re-run elsewhere) is a new record file: found by the full lookup, with
  // its new data, and the index learns the new receipt.
  const Artifact first = cache_->store(key, inputs, json{{"value", 2}}, Verdict::ok, make_outputs({{"f.txt", "abc"}}));
  cache_->record_last("wf", "node", key, &first);
  cache_->flush_index();
  cache_->store(key, inputs, json{{"value", 3}}, Verdict::ok, make_outputs({{"f.txt", "xyz"}}), /*replace=*/true);
  Cache after_replace(base_ / "cache");
  const auto hit = after_replace.lookup_for("wf", "node", key, warn_);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->data(), (json{{"value", 3}}));
  EXPECT_EQ(read_file(hit->dir / "f.txt"), "xyz");
}

TEST_F(CacheTest, ReceiptsSurviveTheIndexFileWhateverTheNames) {
  // Names with the index format's own separators in them.
  const std::vector<std::string> nodes{"tab\there", "new\nline", "percent%41", "per_size[size=1]", "é"};
  std::vector<Artifact> stored;
  int n = 0;
  for (const auto& node : nodes) {
    KeyInputs inputs = sample_inputs();
    inputs.params = json{{"n", n++}};
    const std::string key = cache_key(inputs);
    stored.push_back(cache_->store(key, inputs, json{{"node", node}}, Verdict::ok,
                                   make_outputs({{"a\tb.txt", node}, {"sub/%x.csv", "1"}})));
    cache_->record_last("wf\t%", node, key, &stored.back());
  }
  cache_->flush_index();
  Cache next_run(base_ / "cache");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto last = next_run.last("wf\t%", nodes[i]);
    ASSERT_TRUE(last) << nodes[i];
    const auto hit = next_run.lookup_for("wf\t%", nodes[i], last->key, warn_);
    ASSERT_TRUE(hit) << nodes[i];
    EXPECT_EQ(hit->files, stored[i].files);
    EXPECT_EQ(hit->data()["node"], nodes[i]);
  }
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, MalformedOrEscapingReceiptsOnlyCostTheFastPath) {
  const Artifact stored = store_as_last_run(json{{"value", 1}});
  const std::string key = cache_key(sample_inputs());
  const fs::path index = base_ / "cache" / "index" / "wf.index";
  for (const std::string& receipt : {std::string("\tnot-a-number\tok\t1\t2\t3\t4\t0"),
                                     // claims a file outside the entry, with otherwise plausible facts
                                     std::string("\t") + stored.digest + "\tok\t1\t2\t3\t4\t1\t../../etc/passwd\t5\t6"}) {
    write_file(index, "aispflow-index 2\nworkflow\twf\nnode\tnode\t" + key + receipt + "\n");
    Cache next_run(base_ / "cache");
    ASSERT_TRUE(next_run.last("wf", "node")) << receipt;
    EXPECT_EQ(next_run.last("wf", "node")->key, key);
    const auto hit = next_run.lookup_for("wf", "node", key, warn_);  // the full lookup
    ASSERT_TRUE(hit) << receipt;
    EXPECT_EQ(hit->files, std::vector<std::string>{"f.txt"});
    EXPECT_EQ(hit->data(), (json{{"value", 1}}));
  }
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CacheTest, IndexOfAnOlderVersionIsReadAndReplaced) {
  const std::string key = store_sample(sample_inputs());
  write_file(base_ / "cache" / "index" / "wf.json", R"({"workflow": "wf", "nodes": {"node": ")" + key + R"("}})");
  Cache next_run(base_ / "cache");
  ASSERT_TRUE(next_run.last("wf", "node"));
  EXPECT_EQ(next_run.last("wf", "node")->key, key);
  EXPECT_EQ(next_run.gc().entries, 0u) << "gc counts the old index's references";
  const auto hit = next_run.lookup_for("wf", "node", key, warn_);  // no receipt yet: a full lookup
  ASSERT_TRUE(hit);
  next_run.record_last("wf", "node", key, &*hit);
  next_run.flush_index();
  EXPECT_FALSE(fs::exists(base_ / "cache" / "index" / "wf.json"));
  EXPECT_TRUE(fs::exists(base_ / "cache" / "index" / "wf.index"));
  EXPECT_EQ(Cache(base_ / "cache").last("wf", "node")->key, key);
}

TEST(ExplainChange, EqualInputsGiveNoReason) { EXPECT_EQ(explain_change(sample_inputs(), sample_inputs()), ""); }

TEST(ExplainChange, EachKindOfChange) {
  const KeyInputs before = sample_inputs();
  auto explain = [&](auto change) {
    KeyInputs now = before;
    change(now);
    return explain_change(before, now);
  };
  EXPECT_EQ(explain([](KeyInputs& k) { k.type_version = 3; }), "node type version 2 → 3");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params["providers"] = {"a", "b"}; }), "params changed: providers [a] → [a, b]");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params["repeats"] = 5; }), "params changed: repeats (new) 5");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params.erase("timeout_s"); }), "params changed: timeout_s 10 (removed)");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params["run"] = ""; }), "params changed: run echo a → \"\"");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params["timeout_s"] = 20; k.params["run"] = "echo b"; }),
            "params changed: run echo a → echo b, timeout_s 10 → 20");
  EXPECT_EQ(explain([](KeyInputs& k) { k.params["shape"] = {{"m", 1}, {"n", "x"}}; }),
            "params changed: shape (new) {m: 1, n: x}");
  EXPECT_EQ(explain([](KeyInputs& k) { k.input_digests["make_a"] = "new"; }), "input make_a changed");
  EXPECT_EQ(explain([](KeyInputs& k) { k.input_digests["make_b"] = "1"; }), "input make_b added");
  EXPECT_EQ(explain([](KeyInputs& k) { k.input_digests.clear(); }), "input make_a removed");
  EXPECT_EQ(explain([](KeyInputs& k) { k.file_digests["data/input.csv"] = "new"; }), "file data/input.csv changed");
  EXPECT_EQ(explain([](KeyInputs& k) { k.environment["driver"] = "580.2"; }),
            "environment changed: driver 570.1 → 580.2");
  EXPECT_EQ(explain([](KeyInputs& k) { k.environment["gpus"][0]["name"] = "H200"; }),
            "environment changed: gpus[0].name H100 → H200");
  EXPECT_EQ(explain([](KeyInputs& k) { k.type = "shell"; }), "node type command → shell");
}

TEST(ExplainChange, SeveralReasonsMostImportantFirst) {
  const KeyInputs before = sample_inputs();
  KeyInputs now = before;
  now.environment["driver"] = "580.2";
  now.file_digests["data/input.csv"] = "new";
  now.input_digests["make_a"] = "new";
  now.params["repeats"] = 5;
  now.type_version = 3;
  EXPECT_EQ(explain_change(before, now),
            "node type version 2 → 3; params changed: repeats (new) 5; input make_a changed; "
            "file data/input.csv changed; environment changed: driver 570.1 → 580.2");
}

TEST(ExplainChange, ManyEnvironmentDifferencesAreCounted) {
  KeyInputs before = sample_inputs(), now = sample_inputs();
  before.environment = json{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}};
  now.environment = json{{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}, {"e", 2}};
  EXPECT_EQ(explain_change(before, now), "environment changed: a 1 → 2, b 1 → 2, c 1 → 2, and 2 more");
  now.environment = nullptr;
  EXPECT_EQ(explain_change(before, now), "environment changed: a 1 (removed), b 1 (removed), c 1 (removed), and 2 more");
}

// ---- list, gc, clear -----------------------------------------------------------------------------

TEST_F(CacheTest, ListShowsTypeSizeAndUsers) {
  KeyInputs a = sample_inputs(), b = sample_inputs();
  b.type = "gemm";
  const std::string ka = store_sample(a, "12345");
  const std::string kb = store_sample(b);
  cache_->record_last("wf", "n1", ka);
  cache_->record_last("wf", "n2[x=1]", ka);

  const auto entries = cache_->list();
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) {
    EXPECT_GT(e.bytes, 5u);
    if (e.key == ka) {
      EXPECT_EQ(e.type, "command");
      EXPECT_EQ(e.used_by, (std::vector<std::string>{"wf/n1", "wf/n2[x=1]"}));
    } else {
      EXPECT_EQ(e.key, kb);
      EXPECT_EQ(e.type, "gemm");
      EXPECT_TRUE(e.used_by.empty());
    }
  }
}

TEST_F(CacheTest, GcKeepsReferencedEntriesAndRemovesTheRest) {
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) {
    KeyInputs k = sample_inputs();
    k.params["i"] = i;
    keys.push_back(store_sample(k, std::string(100, 'z')));
    if (i % 2 == 0) cache_->record_last("wf", "node" + std::to_string(i), keys.back());
  }
  const auto gc = cache_->gc();
  EXPECT_EQ(gc.entries, 2u);
  EXPECT_EQ(gc.leftovers, 0u);
  EXPECT_GT(gc.bytes, 200u);
  EXPECT_TRUE(cache_->lookup(keys[0], warn_));
  EXPECT_FALSE(cache_->lookup(keys[1], warn_));
  EXPECT_TRUE(cache_->lookup(keys[2], warn_));
  EXPECT_FALSE(cache_->lookup(keys[3], warn_));
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(cache_->gc().entries + cache_->gc().leftovers, 0u);
}

TEST_F(CacheTest, ClearRemovesEverythingButTheLock) {
  const KeyInputs inputs = sample_inputs();
  const std::string key = store_sample(inputs);
  cache_->record_last("wf", "n", key);
  cache_->clear();
  EXPECT_FALSE(cache_->lookup(key));
  EXPECT_FALSE(cache_->last("wf", "n"));
  EXPECT_TRUE(cache_->list().empty());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(base_ / "cache")) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"lock"});
  store_sample(inputs);
  EXPECT_TRUE(cache_->lookup(key));
}

TEST_F(CacheTest, OperationsOnAMissingCacheDoNothing) {
  Cache missing(base_ / "does-not-exist");
  EXPECT_TRUE(missing.list().empty());
  EXPECT_EQ(missing.gc().entries, 0u);
  EXPECT_NO_THROW(missing.clear());
  EXPECT_FALSE(fs::exists(base_ / "does-not-exist"));
}

}  // namespace
}  // namespace aispflow
