// A killed run takes its processes with it (pipeline/child_process.hpp), keeps the measurement lock until they are
// gone, and the next run collects the scratch directory it left (pipeline/run_scratch.hpp). With the real
// `aispflow` binary, killed with SIGKILL:
//   - a `command` node's `sleep 600` (and one that left the process group) is gone within 2 s;
//   - an mpi `alltoall` of 2 and 4 ranks: no rank, mpirun or daemon is left within 2 s;
//   - a run started right after the kill starts measuring only once those processes are gone (its run.json
//     interval against the last time one was seen), and says whom it waits for;
//   - the killed run's scratch directory is removed by the next run, a live run's is not, and `cache gc` reports
//     what it removed.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/processes.hpp"
#include "support/text_files.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using aispflow::test::describe_processes;
using aispflow::test::marked_names;
using aispflow::test::marked_processes;
using aispflow::test::quote;
using aispflow::test::read_file;
using aispflow::test::wait_until_none;
using SystemClock = std::chrono::system_clock;

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

long long epoch_ms(const std::string& iso) {
  std::tm tm{};
  const char* rest = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest || *rest != '.') throw std::runtime_error("not ISO 8601 with milliseconds: " + iso);
  return (long long)timegm(&tm) * 1000 + std::stoi(std::string(rest + 1, 3));
}

long long epoch_ms(SystemClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

class RunProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-processes-" + std::to_string(rd()));
    fs::create_directories(dir_);
    mark_ = aispflow::test::unique_marker();
    other_mark_ = aispflow::test::unique_marker();
  }
  void TearDown() override {
    for (const auto& mark : {mark_, other_mark_})   // never leave a failed test's processes behind
      for (pid_t pid : marked_processes(mark)) ::kill(pid, SIGKILL);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void workflow(const std::string& file, const std::string& text) const { std::ofstream(dir_ / file) << text; }

  // `aispflow run FILE` in the background, marked (by default with mark_), with this test's lock directory and
  // cache; its pid is aispflow's own (sh and env exec it).
  pid_t start(const std::string& file, const std::string& name, const std::string& cache = "cache",
              const std::string& mark = "") const {
    const std::string cmd = "cd " + quote(dir_.string()) + " && exec env " + quote(mark.empty() ? mark_ : mark) +
                            " AISPFLOW_LOCK_DIR=" +
                            quote((dir_ / "locks").string()) + " " +
                            quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) + " run " + file +
                            " --backend cpu --progress lines --cache " + cache + " --out " + name + "-out > " + name +
                            ".out 2> " + name + ".err";
    pid_t pid = 0;
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return -1;
    return pid;
  }
  static int finish(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits until at least `count` marked processes are named `name` (comm, at most 15 characters).
  bool wait_for_processes(const std::string& name, std::size_t count, std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::size_t n = 0;
      for (const auto& p : marked_names(mark_)) n += p == name;
      if (n >= count) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  void kill_driver(pid_t pid) const {
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  }
  std::vector<fs::path> scratch_dirs(const std::string& cache = "cache") const {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (fs::directory_iterator it(dir_ / cache / "tmp", ec), end; !ec && it != end; it.increment(ec))
      dirs.push_back(it->path());
    return dirs;
  }
  // The started_at of `node` in a run's run.json, in ms since the epoch.
  long long node_started_ms(const std::string& name, const std::string& node) const {
    const json run = json::parse(read_file(dir_ / (name + "-out") / "run.json"));
    for (const auto& n : run.at("nodes"))
      if (n.at("name") == node) return epoch_ms(n.at("started_at").get<std::string>());
    throw std::runtime_error("no node " + node + " in " + name + "-out/run.json");
  }
  std::string text(const std::string& file) const { return read_file(dir_ / file); }

  // A run whose exclusive node takes the device (a command: every run on this host measures "cpu-<host>").
  void quick_measuring_workflow() const {
    workflow("quick.yaml", "name: quick\nnodes:\n  measure:\n    type: command\n    exclusive: true\n"
                           "    params: {run: \"true\"}\n");
  }

  fs::path dir_;
  std::string mark_;         // the run that is killed
  std::string other_mark_;   // runs that must not count as its processes
};

TEST_F(RunProcessesTest, ACommandsProcessesEndWithAKilledDriver) {
  workflow("sleep.yaml", "name: sleepy\nnodes:\n  nap:\n    type: command\n"
                         "    params: {run: \"setsid sleep 600 & sleep 600\"}\n");
  const pid_t driver = start("sleep.yaml", "a");
  ASSERT_GT(driver, 0);
  ASSERT_TRUE(wait_for_processes("sleep", 2, 30s)) << text("a.err");
  kill_driver(driver);
  EXPECT_TRUE(wait_until_none(mark_, 2s)) << "2 s after SIGKILL of the driver: " << describe_processes(marked_processes(mark_));
}

// The holder ignores SIGTERM, so its processes outlive the driver by the 2 s grace period: a run started right
// after the kill must wait for them, and must say whom it waits for.
TEST_F(RunProcessesTest, ARunStartedAfterTheKillWaitsForTheOrphansToEnd) {
  workflow("hold.yaml", "name: hold\nnodes:\n  holding:\n    type: command\n    exclusive: true\n"
                        "    params: {run: \"trap '' TERM; while :; do sleep 0.1; done\"}\n");
  quick_measuring_workflow();
  const pid_t driver = start("hold.yaml", "a");
  ASSERT_GT(driver, 0);
  ASSERT_TRUE(wait_for_processes("sleep", 1, 30s)) << text("a.err");
  kill_driver(driver);
  const pid_t second = start("quick.yaml", "b", "cache-b", other_mark_);
  SystemClock::time_point last_seen{};
  ASSERT_TRUE(wait_until_none(mark_, 10s, &last_seen)) << describe_processes(marked_processes(mark_));
  ASSERT_EQ(finish(second), 0) << text("b.err");
  const long long started = node_started_ms("b", "measure");
  EXPECT_GE(started, epoch_ms(last_seen)) << "the second run measured while the first run's processes still ran";
  const std::string err = text("b.err");
  EXPECT_NE(err.find("waiting for the measurement lock"), std::string::npos) << err;
  EXPECT_NE(err.find("held by pid " + std::to_string(driver)), std::string::npos) << err;
  EXPECT_NE(err.find("that process is gone"), std::string::npos) << err;
}

TEST_F(RunProcessesTest, AnMpiAlltoallEndsWithAKilledDriverAndTheNextRunDoesNotOverlapIt) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)";
  quick_measuring_workflow();
  for (int ranks : {2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const std::string name = "a" + std::to_string(ranks);
    workflow(name + ".yaml", "name: a2a\nnodes:\n  a2a:\n    type: alltoall\n    params: {transport: mpi, ranks: " +
                                 std::to_string(ranks) +
                                 ", sizes: [1048576], skews: [0], dtypes: [bf16], warmup: 2, iterations: 1000000, "
                                 "timeout_s: 300}\n");
    const pid_t driver = start(name + ".yaml", name, "cache-" + name);
    ASSERT_GT(driver, 0);
    ASSERT_TRUE(wait_for_processes("aispflow-comm-r", std::size_t(ranks), 60s)) << text(name + ".err");
    std::this_thread::sleep_for(300ms);   // exchanging now
    const auto names = marked_names(mark_);
    EXPECT_NE(std::find(names.begin(), names.end(), "mpirun"), names.end()) << describe_processes(marked_processes(mark_));
    kill_driver(driver);
    const pid_t second =
        start("quick.yaml", "b" + std::to_string(ranks), "cache-b" + std::to_string(ranks), other_mark_);
    SystemClock::time_point last_seen{};
    EXPECT_TRUE(wait_until_none(mark_, 2s, &last_seen))
        << "2 s after SIGKILL of the driver: " << describe_processes(marked_processes(mark_));
    ASSERT_TRUE(wait_until_none(mark_, 30s, &last_seen));
    ASSERT_EQ(finish(second), 0) << text("b" + std::to_string(ranks) + ".err");
    EXPECT_GE(node_started_ms("b" + std::to_string(ranks), "measure"), epoch_ms(last_seen))
        << "the second run measured while the killed run's ranks still ran";
  }
}

TEST_F(RunProcessesTest, LeftoversOfDeadRunsAreCollectedAndLiveRunsAreLeftAlone) {
  workflow("sleep.yaml", "name: sleepy\nnodes:\n  nap:\n    type: command\n    params: {run: \"sleep 600\"}\n");
  workflow("brief.yaml", "name: brief\nnodes:\n  nap:\n    type: command\n    params: {run: \"sleep 5\"}\n");
  workflow("other.yaml", "name: other\nnodes:\n  hello:\n    type: command\n    params: {run: \"echo hi\"}\n");
  // Two runs in one cache, each in the middle of its node; the first is then killed.
  const pid_t killed = start("sleep.yaml", "a");
  ASSERT_TRUE(wait_for_processes("sleep", 1, 30s)) << text("a.err");
  const pid_t live = start("brief.yaml", "live", "cache", other_mark_);
  auto scratch_of = [&](pid_t pid) {
    for (const auto& d : scratch_dirs())
      if (d.filename().string().rfind("run-" + std::to_string(pid) + "-", 0) == 0) return d;
    return fs::path();
  };
  for (int i = 0; i < 600 && scratch_of(live).empty(); ++i) std::this_thread::sleep_for(50ms);
  const fs::path live_dir = scratch_of(live), killed_dir = scratch_of(killed);
  ASSERT_FALSE(live_dir.empty()) << text("live.err");
  ASSERT_FALSE(killed_dir.empty());
  kill_driver(killed);
  ASSERT_TRUE(wait_until_none(mark_, 5s));
  EXPECT_TRUE(fs::exists(killed_dir)) << "nothing removed it yet";
  // Planted: a directory named after a live pid (this test's) whose lock nobody holds: a reused pid is not that
  // run. And two from an older aispflow (no lock file): a dead pid's goes, a live pid's stays.
  const fs::path reused = dir_ / "cache/tmp" / ("run-" + std::to_string(::getpid()) + "-0123456789abcdef");
  fs::create_directories(reused);
  std::ofstream(reused / "owner.lock") << "{\"pid\": " << ::getpid() << "}\n";
  const fs::path old_dead = dir_ / "cache/tmp/run-2147483000-0000000000000000";
  const fs::path old_live = dir_ / "cache/tmp" / ("run-" + std::to_string(::getpid()) + "-1111111111111111");
  fs::create_directories(old_dead);
  fs::create_directories(old_live);

  const pid_t next = start("other.yaml", "next", "cache", other_mark_);
  ASSERT_EQ(finish(next), 0) << text("next.err");
  const std::string err = text("next.err");
  EXPECT_FALSE(fs::exists(killed_dir)) << "the killed run's directory is still there";
  EXPECT_NE(err.find(killed_dir.filename().string()), std::string::npos) << err;
  EXPECT_NE(err.find("left by a run that is gone (pid " + std::to_string(killed)), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(reused)) << "a reused pid kept a dead run's directory";
  EXPECT_FALSE(fs::exists(old_dead));
  EXPECT_TRUE(fs::exists(old_live)) << "an older run's directory was removed while its pid lives";
  EXPECT_TRUE(fs::exists(live_dir)) << "a live run's directory was removed";
  EXPECT_EQ(err.find(live_dir.filename().string()), std::string::npos) << err;
  EXPECT_EQ(finish(live), 0) << text("live.err");

  // `aispflow cache gc` says what it removed.
  const fs::path planted = dir_ / "cache/tmp/run-2147483001-2222222222222222";
  fs::create_directories(planted);
  std::ofstream(planted / "owner.lock") << "{\"pid\": 2147483001, \"host\": \"elsewhere\", \"started\": \"then\"}\n";
  const auto gc = aispflow::test::run_in(dir_, quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) + " cache gc --cache cache");
  ASSERT_EQ(gc.code, 0) << gc.err;
  EXPECT_NE(gc.out.find(planted.filename().string()), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("pid 2147483001 on elsewhere, started then"), std::string::npos) << gc.out;
  EXPECT_FALSE(fs::exists(planted));
}

}  // namespace
