// RankThreads (kernels/common/rank_threads.hpp): each rank's task on its own thread, all at once, errors surfaced.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>

#include "kernels/common/rank_threads.hpp"

namespace {

using aispflow::kernels::RankThreads;

TEST(RankThreads, EveryRankRunsOnItsOwnThreadEveryTime) {
  RankThreads threads(3);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> mask = 0;
    std::mutex m;
    std::set<std::thread::id> ids;
    threads.run([&](int i) {
      mask |= 1 << i;
      std::lock_guard lock(m);
      ids.insert(std::this_thread::get_id());
    }, round % 2 == 1);
    EXPECT_EQ(mask.load(), 7);
    EXPECT_EQ(ids.size(), 3u);
    EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u);
  }
}

// Each task waits until all have begun: this ends only if the ranks really run at the same time.
TEST(RankThreads, TasksRunConcurrently) {
  RankThreads threads(3);
  for (bool line_up : {false, true}) {
    std::atomic<int> begun = 0;
    threads.run([&](int) {
      begun++;
      while (begun.load() < 3) std::this_thread::yield();
    }, line_up);
    EXPECT_EQ(begun.load(), 3);
  }
}

TEST(RankThreads, AnExceptionReachesTheCallerAndTheThreadsStayUsable) {
  RankThreads threads(2);
  EXPECT_THROW(threads.run([](int i) { if (i == 1) throw std::runtime_error("rank 1 failed"); }, true),
               std::runtime_error);
  std::atomic<int> ran = 0;
  threads.run([&](int) { ran++; }, true);
  EXPECT_EQ(ran.load(), 2);
}

TEST(RankThreads, OneRankRunsOnTheCallingThread) {
  RankThreads threads(1);
  std::thread::id id;
  threads.run([&](int) { id = std::this_thread::get_id(); }, true);
  EXPECT_EQ(id, std::this_thread::get_id());
}

}  // namespace
