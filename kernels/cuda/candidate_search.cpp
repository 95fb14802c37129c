#include "kernels/cuda/candidate_search.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"

namespace aispflow::kernels::cuda {

namespace {

// Poisons the output, runs once, checks the guards around C (when the problem has them), compares every element
// with the reference, on the first and the last operand copy (same data at other addresses: what could differ is alignment-dependent behaviour).
void verify(SearchCandidate& c, GemmProblem& problem, cudaStream_t stream) {
  try {
    for (int copy : {0, problem.copies() - 1}) {
      problem.poison_output(stream, copy);
      problem.reset_guards(stream);
      c.launch(stream, copy);
      AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
      // A write outside C (guarded for code aispflow did not write) fails the candidate whatever C holds.
      if (auto outside = problem.check_guards(stream)) {
        c.status = "failed";
        c.verified = false;
        c.reason = "memory check failed: " + *outside;
        return;
      }
      const Comparison cmp = problem.check_output(stream, copy);
      c.max_rel_err = std::max(c.max_rel_err, cmp.max_rel_err);
      const double bound = problem.tolerance() + c.extra_tolerance;
      if (cmp.non_finite != 0 || cmp.max_rel_err > bound) {
        char tolerance[32];
        std::snprintf(tolerance, sizeof tolerance, "%.3g", bound);
        c.status = "failed";
        c.verified = false;
        c.reason = "verification failed" + (copy > 0 ? " on operand copy " + std::to_string(copy) : std::string()) +
                   ": " + cmp.describe(problem.shape().n) + ", tolerance " + tolerance;
        return;
      }
      if (problem.copies() == 1) break;
    }
    c.verified = true;
  } catch (const CudaError& e) {
    c.status = "failed";
    c.verified = false;
    c.reason = e.what();
  }
}

// Each launch of a graph takes the next operand copy, so a graph of short launches still reads cold operands.
std::function<void(cudaStream_t)> rotating(const SearchCandidate& c, int copies) {
  auto next = std::make_shared<int>(0);
  return [launch = c.launch, copies, next](cudaStream_t s) { launch(s, (*next)++ % copies); };
}

}  // namespace

nlohmann::json SearchCandidate::to_json() const {
  nlohmann::json j = identity.is_object() ? identity : nlohmann::json::object();
  j["kernel"] = kernel;
  j["status"] = status;
  j["verified"] = verified;
  j["max_rel_err"] = max_rel_err;
  if (!reason.empty()) j["reason"] = reason;
  if (screen) j["screen_time_ms"] = screen->stats.to_json();
  if (full) j["time_ms"] = full->stats.to_json();
  return j;
}

TimingPolicy screening_policy(const TimingPolicy& full) {
  TimingPolicy p = full;
  p.min_samples = std::min(full.min_samples, 5);
  p.max_samples = std::min(full.max_samples, 30);
  p.budget_s = std::min(full.budget_s, 0.25);
  p.warmup = std::max(1, std::min(full.warmup, 2));
  return p;
}

std::optional<std::size_t> run_candidate_search(std::vector<SearchCandidate>& candidates, GemmProblem& problem,
                                                Harness& harness, const TimingPolicy& timing,
                                                const SearchOptions& options) {
  const cudaStream_t stream = harness.stream();
  for (auto& c : candidates) verify(c, problem, stream);
  // A candidate that failed by writing outside C left the guards broken: restore them, so that a check after
  // timing (plugin providers) sees only what the timed candidates did.
  problem.reset_guards(stream);

  std::vector<std::size_t> finalists;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].verified) finalists.push_back(i);
  if (int(finalists.size()) > options.finalists) {
    for (std::size_t i : finalists) {
      try {
        candidates[i].screen = harness.time(screening_policy(timing), rotating(candidates[i], problem.copies()));
      } catch (const CudaError& e) {
        candidates[i].status = "failed";
        candidates[i].reason = std::string("timing failed: ") + e.what();
      }
    }
    std::erase_if(finalists, [&](std::size_t i) { return !candidates[i].screen; });
    std::stable_sort(finalists.begin(), finalists.end(), [&](std::size_t a, std::size_t b) {
      return candidates[a].screen->stats.median_ms < candidates[b].screen->stats.median_ms;
    });
    if (int(finalists.size()) > options.finalists) finalists.resize(std::size_t(options.finalists));
    if (const auto keep = options.always_final; keep && *keep < candidates.size() && candidates[*keep].screen &&
                                                 std::find(finalists.begin(), finalists.end(), *keep) == finalists.end())
      finalists.push_back(*keep);
  }
  if (finalists.empty()) return std::nullopt;

  std::vector<std::function<void(cudaStream_t)>> launches;
  for (std::size_t i : finalists) launches.push_back(rotating(candidates[i], problem.copies()));
  try {
    // Interleaved rounds: every finalist is sampled under the same clocks and power state.
    auto measured = harness.time_interleaved(timing, launches);
    for (std::size_t f = 0; f < finalists.size(); ++f) {
      measured[f].operand_copies = problem.copies();
      candidates[finalists[f]].full = std::move(measured[f]);
    }
  } catch (const CudaError& e) {
    for (std::size_t i : finalists) {
      candidates[i].status = "failed";
      candidates[i].reason = std::string("timing failed: ") + e.what();
    }
    return std::nullopt;
  }
  std::optional<std::size_t> winner;
  for (std::size_t i : finalists)
    if (candidates[i].full &&
        (!winner || candidates[i].full->stats.median_ms < candidates[*winner].full->stats.median_ms))
      winner = i;
  return winner;
}

}  // namespace aispflow::kernels::cuda
