#include "kernels/common/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace aispflow::kernels {

TimingPolicy TimingPolicy::from_json(const nlohmann::json& j) {
  TimingPolicy p;
  if (!j.is_object()) return p;
  p.warmup = j.value("warmup", p.warmup);
  p.min_samples = j.value("min_samples", p.min_samples);
  p.max_samples = j.value("max_samples", p.max_samples);
  p.target_stdrel = j.value("target_stdrel", p.target_stdrel);
  p.budget_s = j.value("budget_s", p.budget_s);
  p.flush_cache = j.value("flush_cache", p.flush_cache);
  if (j.contains("rest")) p.rest_factor = parse_rest(j["rest"]);
  if (j.contains("code")) p.cold_code = parse_code(j["code"]);
  p.min_samples = std::max(1, p.min_samples);
  p.max_samples = std::max(p.min_samples, p.max_samples);
  return p;
}

nlohmann::json TimingPolicy::to_json() const {
  nlohmann::json j = {{"warmup", warmup},         {"min_samples", min_samples}, {"max_samples", max_samples},
                      {"target_stdrel", target_stdrel}, {"budget_s", budget_s}, {"flush_cache", flush_cache},
                      {"rest", rest_label()}};
  // Only when set: the policies of existing workflows (and their cache keys) stay as they were.
  if (cold_code) j["code"] = "cold";
  return j;
}

bool TimingPolicy::parse_code(const nlohmann::json& v) {
  if (v == "cold") return true;
  if (v == "warm") return false;
  throw std::invalid_argument("timing.code: expected \"warm\" (the default) or \"cold\" (each sample's instructions "
                              "fetched afresh), got " + v.dump());
}

double TimingPolicy::parse_rest(const nlohmann::json& v) {
  double factor = -1;
  if (v.is_number()) {
    factor = v.get<double>();
  } else if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && (s.back() == 'x' || s.back() == 'X')) s.pop_back();
    try {
      std::size_t used = 0;
      factor = std::stod(s, &used);
      if (used != s.size()) factor = -1;
    } catch (const std::exception&) {
      factor = -1;
    }
  }
  if (!(factor >= 0) || factor > 100)
    throw std::invalid_argument("timing.rest: expected \"2x\" (the default: rest twice each sample's time), \"0\" "
                                "(back to back, sustained) or a factor between 0 and 100 such as \"1.5x\"; got " +
                                v.dump());
  return factor;
}

std::string TimingPolicy::rest_label() const {
  if (rest_factor == 0) return "0 (back to back)";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%gx", rest_factor);
  return buffer;
}

nlohmann::json TimingStats::to_json() const {
  return {{"median", median_ms}, {"min", min_ms}, {"max", max_ms}, {"mean", mean_ms}, {"stdrel", stdrel}};
}

TimingStats summarize(std::vector<double> samples_ms, double target_stdrel) {
  TimingStats s;
  s.samples = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  s.min_ms = samples_ms.front();
  s.max_ms = samples_ms.back();
  s.median_ms = n % 2 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / double(n);
  double var = 0;
  for (double x : samples_ms) var += (x - s.mean_ms) * (x - s.mean_ms);
  var = n > 1 ? var / double(n - 1) : 0.0;
  s.stdrel = s.mean_ms > 0 ? std::sqrt(var) / s.mean_ms : 0.0;
  s.converged = n > 1 && s.stdrel <= target_stdrel;
  return s;
}

std::vector<std::size_t> interleaved_round_order(int round, std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  // splitmix64 of the round number seeds a Fisher-Yates shuffle: deterministic, independent rounds, and no
  // dependence on the standard library's distributions (which differ between implementations).
  std::uint64_t state = 0x9e3779b97f4a7c15ull * std::uint64_t(round) + 0x5eedull;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[std::size_t(next() % i)]);
  return order;
}

TimingStats measure(const TimingPolicy& policy, const std::function<double()>& sample,
                    const std::function<void()>& between) {
  for (int i = 0; i < policy.warmup; ++i) {
    if (between) between();
    sample();
  }
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(policy.min_samples));
  while (true) {
    if (between) between();
    samples.push_back(sample());
    const int n = static_cast<int>(samples.size());
    if (n >= policy.max_samples) break;
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (n >= policy.min_samples) {
      // Stop once the spread has settled; otherwise keep sampling until the budget runs out. The spread is
      // judged on the samples so far, so an outlier early on is diluted rather than ending the run.
      if (summarize(samples, policy.target_stdrel).converged) break;
      if (elapsed >= policy.budget_s) break;
    }
  }
  return summarize(std::move(samples), policy.target_stdrel);
}

}  // namespace aispflow::kernels
