#pragma once
// Starts node bodies when the machine resources they need are free, without ever parking a thread.
//
// Why not simply block the flow-graph task until its resources are free? Because a blocked TBB worker
// is a worker lost to everyone else: a node that runs its own parallel_for (the bandwidth probe) would
// measure with fewer threads, and a waiting thread inside such a parallel_for may steal the blocked
// task and wait on itself (a deadlock seen with `peak` + `gemm_sweep`). Here a node that cannot start
// is only a queue entry; whoever frees resources launches the next ones.
//
// Rules, in order of submission:
//   - every job takes one of `job_slots` slots (`--jobs`) plus its counted resources ({"gpu": 1});
//   - an exclusive job starts only when nothing else runs, and nothing starts while it runs;
//   - while an exclusive job waits, jobs queued behind it do not start (so it cannot starve);
//     other waiting jobs may be overtaken by later ones that fit (a GPU node waiting for the GPU does
//     not hold up CPU-only work).
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace aispflow {

class ResourceDispatcher {
 public:
  using Resources = std::map<std::string, int>;

  // Held by a running job; gives its resources back on release() or destruction, whichever is first.
  class Lease {
   public:
    Lease(ResourceDispatcher& owner, Resources needs, bool exclusive)
        : owner_(&owner), needs_(std::move(needs)), exclusive_(exclusive) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }
    void release();

   private:
    ResourceDispatcher* owner_;
    Resources needs_;
    bool exclusive_;
  };

  using Body = std::function<void(Lease&)>;
  // `launch` runs a ready job somewhere else (a task_arena's enqueue); it must not run it inline.
  ResourceDispatcher(int job_slots, std::function<void(std::function<void()>)> launch);

  // Sets the amount of `resource` the first time it is named (later calls do nothing).
  void set_total_if_unknown(const std::string& resource, int total);
  // Runs `body` at once on this thread when it may start and nobody waits ahead of it; otherwise queues
  // it, to be launched as soon as the rules above allow. `body` must not throw.
  void submit(Resources needs, bool exclusive, Body body);

 private:
  struct Job {
    Resources needs;
    bool exclusive = false;
    Body body;
  };
  bool fits_locked(const Job& job) const;
  void take_locked(const Job& job);           // accounts for a job that starts
  std::vector<Job> take_startable_locked();   // removes and accounts for the jobs that may start now
  void launch_all(std::vector<Job> jobs);
  void give_back(const Resources& needs, bool exclusive);

  std::function<void(std::function<void()>)> launch_;
  std::mutex mutex_;
  std::deque<Job> waiting_;
  Resources free_;
  int free_slots_;
  int running_ = 0;
  bool exclusive_running_ = false;
};

}  // namespace aispflow
