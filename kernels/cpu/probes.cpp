// STREAM-style bandwidth and FMA compute probes for the CPU backend.
#include "kernels/cpu/probes.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include "kernels/common/fingerprint.hpp"
#include "kernels/cpu/simd.hpp"

namespace aispflow::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double elapsed_ms(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

std::string mib_text(double bytes) { return std::to_string(std::int64_t(bytes / 1048576.0 + 0.5)) + " MiB"; }

// Page-aligned and deliberately NOT initialised here: the first write decides which thread's memory node
// the page lands on, and that write must come from the thread that will stream it (first touch).
double* allocate_untouched(std::int64_t count) {
  const std::size_t bytes = (std::size_t(count) * sizeof(double) + 4095) / 4096 * 4096;
  auto* p = static_cast<double*>(std::aligned_alloc(4096, bytes));
  if (!p) throw std::bad_alloc();
  return p;
}

// Every loop over the arrays, the first-touch one included, goes through this one function: the same
// range and tbb::static_partitioner give each thread the same contiguous slice every time.
template <class Body>
void for_each_slice(std::int64_t n, const Body& body) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n),
                    [&](const tbb::blocked_range<std::int64_t>& r) { body(r.begin(), r.end()); },
                    tbb::static_partitioner());
}

volatile double g_sink;   // keeps the read probe's sums observable, so the loop cannot be removed

Ceiling bandwidth_ceiling(const std::string& name, double bytes_per_run, const TimingStats& t,
                          const std::string& method) {
  return {{"name", name},
          {"kind", "memory"},
          {"unit", "GB/s"},
          {"value", bytes_per_run / (t.median_ms * 1e-3) / 1e9},
          {"method", method},
          {"source", "measured"},
          {"time_ms", t.to_json()},
          {"samples", t.samples},
          {"converged", t.converged}};
}

}  // namespace

std::int64_t default_bandwidth_array_bytes() {
  return std::max<std::int64_t>(4 * last_level_cache_bytes(), std::int64_t(64) << 20);
}

StreamArrays::StreamArrays(std::int64_t array_bytes)
    : n_(std::max<std::int64_t>(array_bytes / std::int64_t(sizeof(double)), 1024)),
      a_(allocate_untouched(n_)), b_(allocate_untouched(n_)), c_(allocate_untouched(n_)) {
  double *a = a_.get(), *b = b_.get(), *c = c_.get();
  // Non-zero initial values (as STREAM uses) keep every operation on ordinary numbers.
  for_each_slice(n_, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.5;
    }
  });
}

double StreamArrays::copy_ms() {
  const double* a = a_.get();
  double* c = c_.get();
  const auto start = clock_type::now();
  for_each_slice(n_, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) c[i] = a[i];
  });
  return elapsed_ms(start);
}

double StreamArrays::triad_ms() {
  double* a = a_.get();
  const double *b = b_.get(), *c = c_.get();
  const double scalar = 3.0;
  const auto start = clock_type::now();
  for_each_slice(n_, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + scalar * c[i];
  });
  return elapsed_ms(start);
}

double StreamArrays::read_ms() {
  const double* a = a_.get();
  const auto start = clock_type::now();
  for_each_slice(n_, [=](std::int64_t lo, std::int64_t hi) {
    // Sixteen independent partial sums: a single running sum would be one chain of dependent adds,
    // bound by the add latency rather than by memory. Separate lanes vectorise without reassociation.
    double partial[16] = {};
    std::int64_t i = lo;
    for (; i + 16 <= hi; i += 16)
      for (int j = 0; j < 16; ++j) partial[j] += a[i + j];
    for (; i < hi; ++i) partial[0] += a[i];
    double total = 0;
    for (double p : partial) total += p;
    g_sink = total;
  });
  return elapsed_ms(start);
}

std::vector<Ceiling> measure_cpu_bandwidth(std::int64_t array_bytes, const TimingPolicy& timing) {
  if (array_bytes <= 0) array_bytes = default_bandwidth_array_bytes();
  StreamArrays arrays(array_bytes);
  const double bytes = arrays.array_bytes();

  // Each run covers the whole arrays, far larger than any cache: there is nothing to flush in between.
  TimingPolicy policy = timing;
  policy.flush_cache = false;
  const int threads = tbb::this_task_arena::max_concurrency();
  const std::string setup = "fp64 arrays of " + mib_text(bytes) + " each (last-level cache " +
                            mib_text(double(last_level_cache_bytes())) + "), " + std::to_string(threads) +
                            " threads, tbb::static_partitioner, first-touch initialised by the same partition";
  const TimingStats copy = measure(policy, [&] { return arrays.copy_ms(); });
  const TimingStats triad = measure(policy, [&] { return arrays.triad_ms(); });
  const TimingStats read = measure(policy, [&] { return arrays.read_ms(); });

  std::vector<Ceiling> out;
  out.push_back(bandwidth_ceiling("dram.copy", 2 * bytes, copy,
                                  "STREAM copy c[i] = a[i]; bytes = read + write (2 arrays); " + setup));
  out.push_back(bandwidth_ceiling("dram.triad", 3 * bytes, triad,
                                  "STREAM triad a[i] = b[i] + s*c[i]; bytes = 2 reads + 1 write (3 arrays); " +
                                      setup));
  out.push_back(bandwidth_ceiling("dram.read", bytes, read,
                                  "sum of a[i] with 16 partial sums; bytes = reads (1 array); " + setup));
  if (array_bytes < 4 * last_level_cache_bytes())
    for (auto& c : out)
      c["warnings"] = json::array({"arrays of " + mib_text(bytes) + " are not far larger than the last-level cache (" +
                                   mib_text(double(last_level_cache_bytes())) +
                                   "): this partly measures cache, not DRAM"});
  return out;
}

namespace {

// kChains independent accumulators per thread, each updated x = x * m + s per step: one FMA per lane.
// With m slightly below 1 the values settle to s / (1 - m) and never overflow or turn subnormal.
constexpr int kChains = 12;   // > FMA latency x FMA pipes on current x86 and ARM cores

template <class V>
double fma_chains(std::int64_t steps) {
  using T = typename V::T;
  using S = typename V::Scalar;
  T x[kChains];
  for (int j = 0; j < kChains; ++j) x[j] = V::set1(S(j + 1) * S(0.01));
  const T m = V::set1(S(0.999999)), s = V::set1(S(1e-6));
  for (std::int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) x[j] = V::fma(x[j], m, s);
  }
  double total = 0;
  for (int j = 0; j < kChains; ++j) total += double(V::sum(x[j]));
  return total;
}

template <class V>
Ceiling measure_fma(const std::string& dtype, const TimingPolicy& timing) {
  const int threads = tbb::this_task_arena::max_concurrency();
  // One FMA chain set per thread, all threads at once.
  auto run = [&](std::int64_t steps) {
    const auto start = clock_type::now();
    tbb::parallel_for(tbb::blocked_range<int>(0, threads, 1),
                      [&](const tbb::blocked_range<int>& r) {
                        for (int t = r.begin(); t != r.end(); ++t) g_sink = fma_chains<V>(steps);
                      },
                      tbb::static_partitioner());
    return elapsed_ms(start);
  };
  // Size one sample to about 20 ms so that thread start-up and timer resolution are noise, not signal.
  // The rate is judged on the fastest of three short runs: a run that another process interrupted would
  // otherwise make the probe think the machine is slow and size every sample far too small.
  std::int64_t steps = 1 << 16;
  for (int tries = 0; tries < 20; ++tries) {
    const double ms = std::min({run(steps), run(steps), run(steps)});
    if (ms >= 2.0) {
      steps = std::max<std::int64_t>(steps, std::int64_t(double(steps) * 20.0 / ms));
      break;
    }
    steps *= 4;
  }
  TimingPolicy policy = timing;
  policy.flush_cache = false;   // registers only: no memory traffic
  const TimingStats t = measure(policy, [&] { return run(steps); });
  const double flops = 2.0 * kChains * V::width * double(steps) * threads;
  return {{"name", "cpu_core." + dtype},
          {"kind", "compute"},
          {"unit", "TFLOP/s"},
          {"dtype", dtype},
          {"value", flops / (t.median_ms * 1e-3) / 1e12},
          {"method", std::to_string(kChains) + " independent " + simd::kIsa + " FMA chains of " +
                         std::to_string(V::width) + " " + dtype + " lanes per thread, " + std::to_string(threads) +
                         " threads, " + std::to_string(steps) + " steps; 2 FLOP per lane per FMA"},
          {"source", "measured"},
          {"time_ms", t.to_json()},
          {"samples", t.samples},
          {"converged", t.converged}};
}

}  // namespace

Ceiling measure_cpu_fma(const std::string& dtype, const TimingPolicy& timing) {
  if (dtype == "fp32") return measure_fma<simd::VecF>(dtype, timing);
  if (dtype == "fp64") return measure_fma<simd::VecD>(dtype, timing);
  throw std::invalid_argument("the cpu backend has no compute probe for dtype '" + dtype +
                              "' (it measures fp32 and fp64)");
}

}  // namespace aispflow::kernels
