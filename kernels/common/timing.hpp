#pragma once
// Measurement policy and statistics, shared by every provider and probe (CPU and CUDA).
// The loop: warm up, then take samples until the relative spread settles (stdrel <= target after at
// least min_samples), or max_samples, or the time budget runs out. Report median, min, max, stdrel.
#include <cstddef>
#include <functional>
#include <string>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::kernels {

struct TimingPolicy {
  int warmup = 2;                 // untimed runs first
  int min_samples = 5;
  int max_samples = 200;
  double target_stdrel = 0.02;    // stop once the relative standard deviation is at or below this
  double budget_s = 2.0;          // stop sampling after this much time (the samples so far are reported)
  bool flush_cache = true;        // flush L2 / LLC between samples (GPU: always possible; CPU: optional)
  // GPU rest after each sample, as a multiple of the sample's time (`timing.rest`: "2x", the default, keeps the
  // power limiter out of comparisons; "0" samples back to back, the sustained, power-capped throughput a long
  // training step sees; any factor in between).
  double rest_factor = 2.0;
  // GPU `timing.code`: "warm" (the default: a kernel's instructions stay in the SMs' caches from its previous
  // sample, as in any back-to-back loop) or "cold" (a kernel of 256 KB of code runs on every SM before each sample,
  // so that the sample fetches its instructions afresh, as in a pipeline where other kernels run between launches;
  // bench/results/h100/ours_probe/NOTES.md steps 135 and 137).
  bool cold_code = false;
  // "2x" | "0" | "1.5x" | 1.5 -> the factor; throws std::invalid_argument naming what is accepted.
  static double parse_rest(const nlohmann::json& v);
  std::string rest_label() const;   // "2x", "0 (back to back)"
  // "warm" -> false, "cold" -> true; throws std::invalid_argument naming what is accepted.
  static bool parse_code(const nlohmann::json& v);
  static TimingPolicy from_json(const nlohmann::json& j);   // missing fields keep defaults
  nlohmann::json to_json() const;
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0;
  double stdrel = 0;              // standard deviation / mean
  int samples = 0;
  bool converged = false;         // stdrel target met (false: budget or max_samples ended sampling)
  nlohmann::json to_json() const; // {"median","min","max","stdrel"} in ms, as in the record schema
};

TimingStats summarize(std::vector<double> samples_ms, double target_stdrel);

// The shared sampling loop. `sample()` runs the work once and returns its duration in ms (measured by
// whatever clock fits: steady_clock on the CPU, CUDA events on the GPU). `between()` (optional) runs
// untimed between samples, e.g. a cache flush.
TimingStats measure(const TimingPolicy& policy, const std::function<double()>& sample,
                    const std::function<void()>& between = {});

// The order in which round `round` (1, 2, ...) of an interleaved measurement samples its `n` pieces of work: a
// permutation of 0..n-1, shuffled afresh each round by a fixed-seed generator (the same sequence on every run).
// In a fixed order each candidate always follows the same one, and a predecessor can leave the chip slower for
// the next sample despite the L2 flush and the rest: on an H100 a kernel sampled right after a stream-K candidate
// ran 5 % slower, after a 1x2 pair 1.5 % (NOTES.md step 132). Shuffled, every candidate follows every other about
// equally often, so such a carry-over is shared out instead of landing on whoever comes next.
std::vector<std::size_t> interleaved_round_order(int round, std::size_t n);

}  // namespace aispflow::kernels
