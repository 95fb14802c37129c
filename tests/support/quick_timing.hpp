#pragma once
// The timing policy of unit tests that run real kernels: a handful of samples, no cache flush. These tests
// check that results are verified, recorded and shaped right, not how fast anything is (speed targets
// live in bench/).
#include "kernels/common/timing.hpp"

namespace aispflow::test {

inline kernels::TimingPolicy quick_timing(double budget_s = 0.2) {
  kernels::TimingPolicy p;
  p.warmup = 1;
  p.min_samples = 3;
  p.max_samples = 5;
  p.budget_s = budget_s;
  p.flush_cache = false;
  return p;
}

}  // namespace aispflow::test
