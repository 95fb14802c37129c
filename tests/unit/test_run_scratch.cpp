// A run's scratch directory (pipeline/run_scratch.hpp) is in use exactly while its run, or a process that run
// started, lives: not after the run ends or is killed, not for a process that merely has the same pid; the
// collector removes only what is not in use, and unfinished ".new-" directories once they are an hour old.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "pipeline/child_process.hpp"
#include "pipeline/run_scratch.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using aispflow::collect_dead_runs;
using aispflow::run_scratch_in_use;
using aispflow::RunScratch;

class RunScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    tmp_ = fs::temp_directory_path() / ("aispflow-test-scratch-" + std::to_string(rd())) / "tmp";
    fs::create_directories(tmp_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_.parent_path(), ec);
  }
  fs::path tmp_;
};

TEST_F(RunScratchTest, InUseWhileItsRunLivesAndCollectedAfter) {
  fs::path dir;
  {
    RunScratch scratch(tmp_);
    dir = scratch.dir();
    EXPECT_EQ(dir.filename().string().rfind("run-" + std::to_string(::getpid()) + "-", 0), 0u) << dir;
    std::string owner;
    EXPECT_TRUE(run_scratch_in_use(dir, &owner));
    EXPECT_NE(owner.find("pid " + std::to_string(::getpid()) + " on "), std::string::npos) << owner;
    EXPECT_TRUE(collect_dead_runs(tmp_).empty());
    EXPECT_TRUE(fs::exists(dir));
  }
  // Same pid, still alive, but the run is over: that is not the run.
  EXPECT_FALSE(run_scratch_in_use(dir));
  const auto removed = collect_dead_runs(tmp_);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].dir, dir);
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(RunScratchTest, AKilledRunsDirectoryIsCollected) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t run = ::fork();
  ASSERT_GE(run, 0);
  if (run == 0) {
    static RunScratch scratch(tmp_);
    if (::write(ready[1], "x", 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(std::distance(fs::directory_iterator(tmp_), fs::directory_iterator()), 1);
  const fs::path dir = fs::directory_iterator(tmp_)->path();
  EXPECT_TRUE(run_scratch_in_use(dir));
  EXPECT_TRUE(collect_dead_runs(tmp_).empty()) << "a live run's directory was collected";
  ::kill(run, SIGKILL);
  ::waitpid(run, nullptr, 0);
  const auto removed = collect_dead_runs(tmp_);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_NE(removed[0].owner.find("pid " + std::to_string(run)), std::string::npos) << removed[0].owner;
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(RunScratchTest, AProcessTheRunStartedKeepsItInUse) {
  std::optional<aispflow::ChildProcess> child;
  fs::path dir;
  {
    RunScratch scratch(tmp_);
    dir = scratch.dir();
    aispflow::ChildSpec spec;
    spec.argv = {"/bin/sh", "-c", "sleep 1"};
    child.emplace(spec);
  }
  EXPECT_TRUE(run_scratch_in_use(dir)) << "the run's child still lives";
  EXPECT_TRUE(collect_dead_runs(tmp_).empty());
  ASSERT_TRUE(child->wait_for(10s));
  EXPECT_FALSE(run_scratch_in_use(dir));
}

TEST_F(RunScratchTest, UnfinishedDirectoriesGoOnlyWhenOld) {
  const fs::path fresh = tmp_ / ".new-1-fresh", old = tmp_ / ".new-2-old", foreign = tmp_ / "not-ours";
  for (const auto& d : {fresh, old, foreign}) fs::create_directories(d);
  fs::last_write_time(old, fs::file_time_type::clock::now() - 2h);
  const auto removed = collect_dead_runs(tmp_);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].dir, old);
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_TRUE(fs::exists(foreign)) << "only aispflow's own directories are collected";
}

}  // namespace
