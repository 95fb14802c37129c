// The child-process facility (pipeline/child_process.hpp): a child's status is its program's own; whatever the
// program leaves behind ends with it; stop() ends the whole tree, a process that ignores SIGTERM and one that left
// the process group included; a child outlives the thread that started it but not the process; descriptors held
// by children keep an flock until the last of them has gone.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "pipeline/child_process.hpp"
#include "support/processes.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using aispflow::ChildProcess;
using aispflow::ChildSpec;
using aispflow::test::describe_processes;
using aispflow::test::marked_processes;
using aispflow::test::unique_marker;
using aispflow::test::wait_until_none;

ChildSpec shell(const std::string& script, const std::string& marker) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = aispflow::environment_with({{marker.substr(0, marker.find('=')), marker.substr(marker.find('=') + 1)}});
  spec.stop_grace = 300ms;
  return spec;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(ChildProcess, StatusIsTheProgramsOwn) {
  const std::string mark = unique_marker();
  ChildProcess exits(shell("exit 3", mark));
  ASSERT_TRUE(exits.wait_for(10s));
  EXPECT_TRUE(WIFEXITED(exits.status()));
  EXPECT_EQ(WEXITSTATUS(exits.status()), 3);

  ChildProcess killed(shell("kill -TERM $$", mark));
  ASSERT_TRUE(killed.wait_for(10s));
  ASSERT_TRUE(WIFSIGNALED(killed.status()));
  EXPECT_EQ(WTERMSIG(killed.status()), SIGTERM);

  ChildSpec missing;
  missing.argv = {"/no/such/program"};
  ChildProcess cannot(missing);
  ASSERT_TRUE(cannot.wait_for(10s));
  EXPECT_EQ(WEXITSTATUS(cannot.status()), 127);
}

TEST(ChildProcess, WhatTheProgramLeavesBehindEndsWithIt) {
  const std::string mark = unique_marker();
  // One background job in the program's group, one that left it (setsid): both outlive the shell.
  ChildProcess child(shell("sleep 600 & setsid sleep 600 & exit 0", mark));
  ASSERT_TRUE(child.wait_for(10s));
  EXPECT_EQ(WEXITSTATUS(child.status()), 0);
  EXPECT_TRUE(marked_processes(mark).empty()) << "left running: " << describe_processes(marked_processes(mark));
}

TEST(ChildProcess, StopEndsTheWholeTreeEvenWhatIgnoresSigterm) {
  const std::string mark = unique_marker();
  ChildProcess child(shell("trap '' TERM; setsid sleep 600 & sleep 600 & while :; do sleep 1; done", mark));
  std::this_thread::sleep_for(300ms);
  ASSERT_GE(marked_processes(mark).size(), 3u);
  const auto start = std::chrono::steady_clock::now();
  child.stop();
  ASSERT_TRUE(child.wait_for(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(WIFSIGNALED(child.status())) << "the shell ignored SIGTERM: SIGKILL after the grace period";
  EXPECT_TRUE(marked_processes(mark).empty()) << "left running: " << describe_processes(marked_processes(mark));
}

// PR_SET_PDEATHSIG fires when the parent *thread* ends; a TBB worker may end while its child runs. The child
// must not notice.
TEST(ChildProcess, OutlivesTheThreadThatStartedIt) {
  const std::string mark = unique_marker();
  std::unique_ptr<ChildProcess> child;
  std::thread([&] { child = std::make_unique<ChildProcess>(shell("sleep 1; exit 7", mark)); }).join();
  ASSERT_TRUE(child->wait_for(10s));
  EXPECT_TRUE(WIFEXITED(child->status())) << "killed by signal " << WTERMSIG(child->status());
  EXPECT_EQ(WEXITSTATUS(child->status()), 7);
}

// The process that started a child dies by SIGKILL: the child, and what it started, go within the grace period.
TEST(ChildProcess, EndsWhenTheProcessThatStartedItDies) {
  const std::string mark = unique_marker();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(ready[0]);
    try {
      static ChildProcess child(shell("sleep 600 & setsid sleep 600 & sleep 600", mark));
      if (::write(ready[1], "x", 1) != 1) ::_exit(2);
      ::pause();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  std::this_thread::sleep_for(200ms);
  ASSERT_GE(marked_processes(mark).size(), 4u) << describe_processes(marked_processes(mark));   // keeper + 3
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  EXPECT_TRUE(wait_until_none(mark, 2s)) << "still running 2 s after: " << describe_processes(marked_processes(mark));
}

// A descriptor registered with HeldByChildren keeps its flock while any child lives, after this process has
// closed its own copy.
TEST(ChildProcess, HeldDescriptorsKeepTheirLockUntilTheLastChildEnds) {
  const fs::path file = fs::temp_directory_path() / ("aispflow-test-held-" + std::to_string(::getpid()));
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const std::string mark = unique_marker();
  std::optional<ChildProcess> child;
  {
    aispflow::HeldByChildren held(fd);
    child.emplace(shell("sleep 1", mark));
  }
  ChildProcess unrelated(shell("sleep 1", mark));   // started after: does not hold it
  ::close(fd);
  const int other = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(other, 0);
  EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0) << "the child still holds the lock";
  ASSERT_TRUE(child->wait_for(10s));
  EXPECT_EQ(::flock(other, LOCK_EX | LOCK_NB), 0) << "the last holder has gone";
  ::close(other);
  fs::remove(file);
}

TEST(ChildProcess, OutputOfAShortProgram) {
  EXPECT_EQ(aispflow::output_of({"/bin/sh", "-c", "echo hello; echo there >&2"}).value_or("?"), "hello\nthere\n");
  EXPECT_FALSE(aispflow::output_of({"/bin/sh", "-c", "exit 1"}).has_value());
  EXPECT_FALSE(aispflow::output_of({"/bin/sh", "-c", "sleep 5"}, 200ms).has_value());
}

}  // namespace
