#pragma once
// The CPU backend's `peak` probes: STREAM-style memory bandwidth (copy, triad, read) and FMA-bound compute
// throughput (fp32, fp64), each returned as a Ceiling (see kernels/common/backend.hpp).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels {

// Bytes per array the bandwidth probes use when the caller does not say: 4x the last-level cache and at
// least 64 MiB, so that the arrays stream from DRAM rather than from cache.
std::int64_t default_bandwidth_array_bytes();

// Three fp64 arrays and the STREAM loops over them: what measure_cpu_bandwidth times, exposed so that the
// benchmark can time this very triad side by side with a reference loop. Each loop returns its wall time
// in ms; the arrays are first touched by the same TBB static partition the loops use.
class StreamArrays {
 public:
  explicit StreamArrays(std::int64_t array_bytes);

  double copy_ms();    // c[i] = a[i]
  double triad_ms();   // a[i] = b[i] + s * c[i]
  double read_ms();    // sum of a[i]
  std::int64_t elements() const { return n_; }
  // The arrays themselves, for running a reference loop over exactly the same memory.
  double* a() { return a_.get(); }
  double* b() { return b_.get(); }
  double* c() { return c_.get(); }
  double array_bytes() const { return double(n_) * sizeof(double); }

 private:
  struct Free {
    void operator()(double* p) const noexcept { std::free(p); }
  };
  using Array = std::unique_ptr<double[], Free>;   // from std::aligned_alloc
  std::int64_t n_;
  Array a_, b_, c_;
};

// "dram.copy" (c = a; 2 arrays counted), "dram.triad" (a = b + s*c; 3 arrays), "dram.read" (sum of a;
// 1 array), in GB/s. fp64 arrays, first touched by the same TBB static partition that the timed loop
// uses, so each thread streams memory that is local to it.
std::vector<Ceiling> measure_cpu_bandwidth(std::int64_t array_bytes, const TimingPolicy& timing);

// "cpu_core.fp32" / "cpu_core.fp64": independent FMA chains held in registers on every thread, in
// TFLOP/s (2 FLOP per FMA lane). Throws std::invalid_argument for a dtype other than fp32 or fp64.
Ceiling measure_cpu_fma(const std::string& dtype, const TimingPolicy& timing);

}  // namespace aispflow::kernels
