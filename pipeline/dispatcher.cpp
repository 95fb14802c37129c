#include "pipeline/dispatcher.hpp"

#include <memory>

namespace aispflow {

ResourceDispatcher::ResourceDispatcher(int job_slots, std::function<void(std::function<void()>)> launch)
    : launch_(std::move(launch)), free_slots_(job_slots < 1 ? 1 : job_slots) {}

void ResourceDispatcher::set_total_if_unknown(const std::string& resource, int total) {
  std::lock_guard lock(mutex_);
  free_.try_emplace(resource, total);
}

void ResourceDispatcher::submit(Resources needs, bool exclusive, Body body) {
  Job job{std::move(needs), exclusive, std::move(body)};
  {
    std::lock_guard lock(mutex_);
    if (!waiting_.empty() || !fits_locked(job)) {
      waiting_.push_back(std::move(job));
      return;  // whoever frees what it needs launches it
    }
    take_locked(job);
  }
  // It may start now and nobody waits ahead of it: run it right here, on the submitting task's thread
  // (saves a task hand-off per node, which matters for many small nodes).
  Lease lease(*this, job.needs, job.exclusive);
  job.body(lease);
}

bool ResourceDispatcher::fits_locked(const Job& job) const {
  if (exclusive_running_ || free_slots_ < 1) return false;
  if (job.exclusive && running_ > 0) return false;
  for (const auto& [resource, count] : job.needs) {
    if (count <= 0) continue;
    auto it = free_.find(resource);
    if (it == free_.end() || it->second < count) return false;
  }
  return true;
}

void ResourceDispatcher::take_locked(const Job& job) {
  --free_slots_;
  ++running_;
  for (const auto& [resource, count] : job.needs)
    if (count > 0) free_[resource] -= count;
  if (job.exclusive) exclusive_running_ = true;
}

std::vector<ResourceDispatcher::Job> ResourceDispatcher::take_startable_locked() {
  std::vector<Job> ready;
  // Stops as soon as nothing more can start (no free slot, or an exclusive job running), so a long
  // queue costs nothing per release.
  for (auto it = waiting_.begin(); it != waiting_.end() && free_slots_ > 0 && !exclusive_running_;) {
    if (!fits_locked(*it)) {
      if (it->exclusive) break;  // nobody overtakes a waiting exclusive job
      ++it;
      continue;
    }
    take_locked(*it);
    ready.push_back(std::move(*it));
    it = waiting_.erase(it);
  }
  return ready;
}

void ResourceDispatcher::launch_all(std::vector<Job> jobs) {
  for (auto& job : jobs) {
    // shared_ptr: std::function needs a copyable callable.
    auto shared = std::make_shared<Job>(std::move(job));
    launch_([this, shared] {
      Lease lease(*this, shared->needs, shared->exclusive);
      shared->body(lease);
    });
  }
}

void ResourceDispatcher::give_back(const Resources& needs, bool exclusive) {
  std::vector<Job> ready;
  {
    std::lock_guard lock(mutex_);
    ++free_slots_;
    --running_;
    for (const auto& [resource, count] : needs)
      if (count > 0) free_[resource] += count;
    if (exclusive) exclusive_running_ = false;
    ready = take_startable_locked();
  }
  launch_all(std::move(ready));
}

void ResourceDispatcher::Lease::release() {
  if (!owner_) return;
  ResourceDispatcher* owner = owner_;
  owner_ = nullptr;
  owner->give_back(needs_, exclusive_);
}

}  // namespace aispflow
