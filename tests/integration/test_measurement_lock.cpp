// One measurement per device across processes (pipeline/measurement_lock.hpp): two `aispflow run` processes
// started together never have exclusive nodes running at the same time (their run.json intervals do not
// overlap) and both succeed; with separate lock directories (no shared lock) the same runs do overlap, so the
// interval check can fail. A waiting run names the holder; --lock-timeout fails the node with that name; a lock
// holder that is killed releases the device.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "pipeline/measurement_lock.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using aispflow::MeasurementLock;
using aispflow::MeasurementLockOptions;
using aispflow::test::quote;
using aispflow::test::read_file;

// Three exclusive nodes per run: a real CPU GEMM sweep (exclusive by type) and two commands marked exclusive
// that take a known time, so that two runs started together would certainly overlap without the lock.
const char* kWorkflow =
    "name: locked\n"
    "nodes:\n"
    "  sweep:\n"
    "    type: gemm_sweep\n"
    "    params:\n"
    "      providers: [cpu.blocked]\n"
    "      dtypes: [fp32]\n"
    "      shapes: [{name: s, m: 128, n: 128, k: 128}]\n"
    "      timing: {warmup: 1, min_samples: 5, max_samples: 20, budget_s: 0.2}\n"
    "  hold_a:\n"
    "    type: command\n"
    "    exclusive: true\n"
    "    params: {run: \"sleep 1.2\"}\n"
    "  hold_b:\n"
    "    type: command\n"
    "    exclusive: true\n"
    "    params: {run: \"sleep 1.2\"}\n";

// "2026-11-24T01:02:03.456Z" -> milliseconds since the epoch.
long long epoch_ms(const std::string& iso) {
  std::tm tm{};
  const char* rest = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest || *rest != '.') throw std::runtime_error("not ISO 8601 with milliseconds: " + iso);
  return (long long)timegm(&tm) * 1000 + std::stoi(std::string(rest + 1, 3));
}

struct Interval {
  std::string node;
  long long from, to;
};

std::vector<Interval> exclusive_intervals(const fs::path& run_json) {
  const json j = json::parse(read_file(run_json));
  std::vector<Interval> out;
  for (const auto& n : j.at("nodes"))
    if (n.at("status") == "ran")
      out.push_back({n.at("name"), epoch_ms(n.at("started_at")), epoch_ms(n.at("finished_at"))});
  return out;
}

bool any_overlap(const std::vector<Interval>& a, const std::vector<Interval>& b, std::string* which) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.from < y.to && y.from < x.to) {
        *which = x.node + " and " + y.node;
        return true;
      }
  return false;
}

std::string this_host_cpu() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !*host) return "cpu-localhost";
  return std::string("cpu-") + host;
}

class MeasurementLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-lock-" + std::to_string(rd()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "wf.yaml") << kWorkflow;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // One `aispflow run` in its own cache and output folder, with the given lock directory.
  std::string command(const std::string& name, const fs::path& lock_dir, const std::string& extra = "") const {
    return "AISPFLOW_LOCK_DIR=" + quote(lock_dir.string()) + " timeout 120 " +
           quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) + " run wf.yaml --backend cpu --progress lines" +
           " --cache " + name + "-cache --out " + name + "-out " + extra + " > " + name + ".out 2> " + name + ".err";
  }
  int shell(const std::string& line) const {
    const int status = std::system(("cd " + quote(dir_.string()) + " && " + line).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // Both runs started at once; returns their exit codes.
  std::pair<int, int> run_two(const fs::path& lock_a, const fs::path& lock_b) {
    auto a = std::async(std::launch::async, [&] { return shell(command("a", lock_a)); });
    auto b = std::async(std::launch::async, [&] { return shell(command("b", lock_b)); });
    return {a.get(), b.get()};
  }
  std::string text(const std::string& file) const { return read_file(dir_ / file); }
  fs::path dir_;
};

TEST_F(MeasurementLockTest, ConcurrentRunsNeverMeasureAtTheSameTime) {
  const auto [a, b] = run_two(dir_ / "locks", dir_ / "locks");
  ASSERT_EQ(a, 0) << text("a.out") << text("a.err");
  ASSERT_EQ(b, 0) << text("b.out") << text("b.err");
  const auto ia = exclusive_intervals(dir_ / "a-out/run.json");
  const auto ib = exclusive_intervals(dir_ / "b-out/run.json");
  ASSERT_EQ(ia.size(), 3u);
  ASSERT_EQ(ib.size(), 3u);
  std::string which;
  EXPECT_FALSE(any_overlap(ia, ib, &which)) << "exclusive nodes of two runs overlapped: " << which;
  // One of the two waited, and said for whom.
  const std::string logs = text("a.err") + text("b.err");   // node logs go to stderr
  EXPECT_NE(logs.find("waiting for the measurement lock on " + this_host_cpu()), std::string::npos) << logs;
  EXPECT_NE(logs.find("held by pid "), std::string::npos) << logs;
}

// The control: the same two runs with nothing shared between them do overlap, so the check above can fail.
TEST_F(MeasurementLockTest, WithoutASharedLockTheSameRunsOverlap) {
  const auto [a, b] = run_two(dir_ / "locks-a", dir_ / "locks-b");
  ASSERT_EQ(a, 0) << text("a.err");
  ASSERT_EQ(b, 0) << text("b.err");
  std::string which;
  EXPECT_TRUE(any_overlap(exclusive_intervals(dir_ / "a-out/run.json"), exclusive_intervals(dir_ / "b-out/run.json"),
                          &which))
      << "two unlocked runs started together should have measured at the same time";
}

TEST_F(MeasurementLockTest, LockTimeoutFailsTheNodeNamingTheHolder) {
  MeasurementLockOptions holder;
  holder.dir = dir_ / "locks";
  holder.workflow = "someone-elses";
  holder.node = "their_peaks";
  MeasurementLock held({this_host_cpu()}, holder);
  const int code = shell(command("a", dir_ / "locks", "--lock-timeout 0.5"));
  EXPECT_EQ(code, 1) << "a node that could not get the device fails the run";
  const std::string err = text("a.err");
  EXPECT_NE(err.find("--lock-timeout"), std::string::npos) << err;
  EXPECT_NE(err.find("held by pid " + std::to_string(getpid())), std::string::npos) << err;
  EXPECT_NE(err.find("their_peaks"), std::string::npos) << err;
  // Nothing was measured, and nothing half-done was cached: the failed nodes have no cache entry.
  const json run = json::parse(text("a-out/run.json"));
  for (const auto& n : run.at("nodes")) EXPECT_NE(n.at("status"), "ran") << n.dump();
}

TEST_F(MeasurementLockTest, WaiterProceedsWhenTheHolderReleases) {
  auto waiter = std::async(std::launch::async, [&] {
    MeasurementLockOptions holder;
    holder.dir = dir_ / "locks";
    holder.node = "brief";
    auto held = std::make_unique<MeasurementLock>(std::vector<std::string>{this_host_cpu()}, holder);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto run = std::async(std::launch::async, [&] { return shell(command("a", dir_ / "locks")); });
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    held.reset();
    return run.get();
  });
  ASSERT_EQ(waiter.get(), 0) << text("a.err");
  EXPECT_NE(text("a.err").find("waiting for the measurement lock"), std::string::npos) << text("a.err");
  EXPECT_NE(text("a.err").find("node brief"), std::string::npos) << "the holder is named: " << text("a.err");
}

TEST(MeasurementLock, AKilledHolderReleasesTheDevice) {
  const fs::path dir = fs::temp_directory_path() / ("aispflow-test-lock-kill-" + std::to_string(getpid()));
  MeasurementLockOptions options;
  options.dir = dir;
  options.timeout_s = 0.2;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MeasurementLock held({"gpu-GPU-test"}, options);
    if (write(ready[1], "x", 1) != 1) _exit(2);
    pause();   // killed by the parent, with the lock held
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_THROW(MeasurementLock({"gpu-GPU-test"}, options), std::runtime_error) << "the child holds it";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_NO_THROW(MeasurementLock({"gpu-GPU-test"}, options)) << "the kernel released the dead holder's lock";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(MeasurementLock, DevicesAreLockedInOneOrderAndNamedSafely) {
  EXPECT_EQ(aispflow::measurement_lock_file_name("gpu-GPU-8f2c-01"), "gpu-GPU-8f2c-01.lock");
  EXPECT_EQ(aispflow::measurement_lock_file_name("cpu-a/b c"), "cpu-a_b_c.lock");
  const fs::path dir = fs::temp_directory_path() / ("aispflow-test-lock-order-" + std::to_string(getpid()));
  MeasurementLockOptions options;
  options.dir = dir;
  options.timeout_s = 0.2;
  // Same devices in another order and repeated: one lock each, and a second locker of either device waits.
  MeasurementLock both({"gpu-b", "gpu-a", "gpu-b"}, options);
  EXPECT_THROW(MeasurementLock({"gpu-a"}, options), std::runtime_error);
  EXPECT_THROW(MeasurementLock({"gpu-b"}, options), std::runtime_error);
  EXPECT_NO_THROW(MeasurementLock({"gpu-c"}, options));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
