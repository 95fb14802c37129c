#pragma once
// The fixture of gpu-labelled tests that call the CUDA backend directly (only built with CUDA): skips with the
// reason where no CUDA device is usable, and gives each test a context on GPU 0.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kernels/common/gemm.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace aispflow::test {

// A GEMM shape named "MxNxKxbatch".
inline kernels::GemmShape shape_of(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
  kernels::GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  s.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + "x" + std::to_string(batch);
  return s;
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kernels::cuda_device_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    ctx_ = std::make_unique<kernels::cuda::GpuContext>(0);
  }
  kernels::cuda::GpuContext& ctx() { return *ctx_; }
  std::function<kernels::cuda::GpuContext&()> context_fn() {
    return [this]() -> kernels::cuda::GpuContext& { return *ctx_; };
  }
  // For tests that check results, not speed: a few samples in a short budget (caches flushed, as sweeps do).
  static kernels::TimingPolicy quick() {
    kernels::TimingPolicy p;
    p.warmup = 1;
    p.min_samples = 3;
    p.max_samples = 20;
    p.budget_s = 0.1;
    return p;
  }
  std::unique_ptr<kernels::cuda::GpuContext> ctx_;
};

}  // namespace aispflow::test
