#pragma once
// One thread per local rank for the life of an exchange: run() gives every thread the same task at once and
// returns when all are done. Why: a process that drives several GPUs from one thread enqueues one GPU's NCCL
// work after the other, so the first GPU's part of an exchange waits for the host to reach the last GPU, and its
// time includes every other rank's launch (issue 18: 26 us in one process against 15 us one process per GPU at
// 32 KiB on two H200s). nccl-tests (-t) and MoE runtimes drive each GPU from its own thread; so do we. With one
// rank, tasks run on the calling thread and nothing is started.
#include <barrier>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace aispflow::kernels {

class RankThreads {
 public:
  explicit RankThreads(int n) : n_(n < 1 ? 1 : n), line_up_(n_) {
    if (n_ == 1) return;
    for (int i = 0; i < n_; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~RankThreads() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return n_; }

  // Runs task(i) on thread i for every i concurrently and waits for all; rethrows the first exception. With
  // `line_up`, every thread waits for all the others before it starts its task, so the ranks enqueue together
  // (as MPI_Barrier lines up the ranks of the mpirun launch).
  void run(const std::function<void(int)>& task, bool line_up = false) {
    if (n_ == 1) {
      task(0);
      return;
    }
    std::unique_lock lock(mutex_);
    task_ = &task;
    line_up_now_ = line_up;
    errors_.assign(std::size_t(n_), nullptr);
    done_ = 0;
    ++generation_;
    wake_.notify_all();
    finished_.wait(lock, [&] { return done_ == n_; });
    task_ = nullptr;
    for (const auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
  void loop(int i) {
    unsigned long seen = 0;
    for (;;) {
      const std::function<void(int)>* task = nullptr;
      bool line_up = false;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        task = task_;
        line_up = line_up_now_;
      }
      std::exception_ptr error;
      if (line_up) line_up_.arrive_and_wait();   // before the task: an exception can never leave a thread waiting here
      try {
        (*task)(i);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        errors_[std::size_t(i)] = error;
        if (++done_ == n_) finished_.notify_one();
      }
    }
  }

  const int n_;
  std::barrier<> line_up_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(int)>* task_ = nullptr;
  bool line_up_now_ = false, stop_ = false;
  unsigned long generation_ = 0;
  int done_ = 0;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace aispflow::kernels
