#include "kernels/cuda/candidate_search.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace aispflow::kernels::cuda {

namespace {

void fail(SearchCandidate& c, std::string reason) {
  c.status = "failed";
  c.verified = false;
  c.reason = std::move(reason);
}

// The epilogue on its own (gemm_data.hpp, compare_epilogue), on copy 0: the bare kernel's A*B is kept aside,
// then the fused kernel runs, and each fused element must be the epilogue of bare + bias.
bool check_epilogue(SearchCandidate& c, GemmProblem& problem, cudaStream_t stream) {
  if (!c.bare) {
    fail(c, std::string("verification failed: the ") + epilogue_name(problem.epilogue()) +
                " epilogue cannot be checked on its own (no launch of the same kernel without it)");
    return false;
  }
  const std::size_t bytes = std::size_t(problem.c_count()) * std::size_t(elem_bytes(problem.dtype().c));
  DeviceBuffer bare(bytes);
  problem.poison_output(stream, 0);
  c.bare(stream, 0);
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(bare.get(), problem.c(0), bytes, cudaMemcpyDeviceToDevice, stream));
  problem.poison_output(stream, 0);
  c.launch(stream, 0);
  EpilogueCheck e;
  e.epilogue = problem.epilogue();
  e.c_type = problem.dtype().c;
  e.fused = problem.c(0);
  e.bare = bare.get();
  e.bias = problem.bias();
  e.bias_type = problem.dtype().c;
  e.floor = problem.error_floor(0);
  e.n = problem.shape().n;
  e.k = problem.shape().k;
  e.count = problem.c_count();
  const EpilogueComparison cmp = compare_epilogue(e, stream);
  c.epilogue_check = {{"max_ratio", cmp.max_ratio},
                      {"method", "fused output vs the float64 epilogue of the same kernel's output without it, "
                                 "plus the bias; ratio of the error to its bound (kernels/cuda/gemm_data.hpp)"}};
  if (!c.bare_note.empty()) c.epilogue_check["bare"] = c.bare_note;
  if (!cmp.ok()) {
    fail(c, "verification failed: " + cmp.describe(problem.shape().n));
    return false;
  }
  return true;
}

}  // namespace

std::function<void(cudaStream_t)> rotating_launch(std::function<void(cudaStream_t, int)> launch, int copies) {
  auto next = std::make_shared<int>(0);
  return [launch = std::move(launch), copies, next](cudaStream_t s) { launch(s, (*next)++ % copies); };
}

// Poisons the output, runs once, checks the guards around C (when the problem has them), compares every element
// with the reference, on the first and the last operand copy, each against its own reference (the copies hold
// different data: a launch that reads the wrong copy fails); then the epilogue on its own.
void verify_candidate(SearchCandidate& c, GemmProblem& problem, cudaStream_t stream) {
  try {
    for (int copy : {0, problem.copies() - 1}) {
      problem.poison_output(stream, copy);
      problem.reset_guards(stream);
      c.launch(stream, copy);
      AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
      // A write outside C (guarded for code aispflow did not write) fails the candidate whatever C holds.
      if (auto outside = problem.check_guards(stream)) {
        fail(c, "memory check failed: " + *outside);
        return;
      }
      const Comparison cmp = problem.check_output(stream, copy);
      c.max_rel_err = std::max(c.max_rel_err, cmp.max_rel_err);
      const double bound = problem.tolerance() + c.extra_tolerance;
      if (cmp.non_finite != 0 || cmp.max_rel_err > bound) {
        char tolerance[32];
        std::snprintf(tolerance, sizeof tolerance, "%.3g", bound);
        fail(c, "verification failed" + (copy > 0 ? " on operand copy " + std::to_string(copy) : std::string()) +
                    ": " + cmp.describe(problem.shape().n) + ", tolerance " + tolerance);
        return;
      }
      if (problem.copies() == 1) break;
    }
    if (problem.epilogue() != Epilogue::none && !check_epilogue(c, problem, stream)) return;
    c.verified = true;
  } catch (const CudaError& e) {
    fail(c, e.what());
  }
}

nlohmann::json SearchCandidate::to_json() const {
  nlohmann::json j = identity.is_object() ? identity : nlohmann::json::object();
  j["kernel"] = kernel;
  j["status"] = status;
  j["verified"] = verified;
  j["max_rel_err"] = max_rel_err;
  if (!reason.empty()) j["reason"] = reason;
  if (!epilogue_check.is_null()) j["epilogue_check"] = epilogue_check;
  if (screen) j["screen_time_ms"] = screen->stats.to_json();
  if (full) j["time_ms"] = full->stats.to_json();
  if (confirmation) j["confirmation_time_ms"] = confirmation->stats.to_json();
  return j;
}

void record_failure(GemmRecord& rec, std::string reason) {
  rec.status = "failed";
  rec.verified = false;
  rec.time.reset();
  rec.reason = std::move(reason);
}

void record_failure(GemmRecord& rec, const SearchCandidate& candidate, std::string reason) {
  record_failure(rec, std::move(reason));
  rec.kernel = candidate.kernel;
  rec.max_rel_err = candidate.max_rel_err;
}

void record_winner(GemmRecord& rec, const SearchCandidate& w) {
  rec.kernel = w.kernel;
  rec.verified = true;
  rec.max_rel_err = w.max_rel_err;
  const Measurement& m = w.reported();
  rec.time = m.stats;
  rec.extra["timing"] = m.timing_json();
  if (w.confirmation)
    rec.extra["timing"]["confirmation"] = "timed again on its own after winning the interleaved rounds; "
                                          "the time reported is this round's";
  if (!m.warnings.empty()) rec.extra["warnings"] = m.warnings;
  if (!w.epilogue_check.is_null()) rec.extra["epilogue_check"] = w.epilogue_check;
}

void record_problem(GemmRecord& rec, const GemmProblem& problem, std::uint64_t seed) {
  rec.tolerance = problem.tolerance();
  rec.extra["seed"] = seed;
  if (problem.copies() > 1)
    rec.extra["operand_copies"] = {{"copies", problem.copies()}, {"bytes_each", problem.operand_bytes_per_copy()}};
  if (problem.dtype().ab == Elem::e4m3)
    rec.extra["scales"] = {{"a", problem.scale_a()}, {"b", problem.scale_b()}, {"output", "bf16, unscaled"}};
}

std::uint64_t random_seed() { return (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

int operand_copies_for(const TimingPolicy& timing, const GemmShape& shape, const LtDtype& spec, int device) {
  if (!timing.flush_cache) return 1;
  return GemmProblem::copies_for_cold_l2(shape, spec, double(system_info().devices[std::size_t(device)].l2_bytes),
                                         Harness::kMaxGraphLaunches);
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
  for (auto& c : candidates) verify_candidate(c, problem, stream);
  // A candidate that failed by writing outside C left the guards broken: restore them, so that a check after
  // timing (plugin providers) sees only what the timed candidates did.
  problem.reset_guards(stream);

  std::vector<std::size_t> finalists;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].verified) finalists.push_back(i);
  if (int(finalists.size()) > options.finalists) {
    for (std::size_t i : finalists) {
      try {
        candidates[i].screen =
            harness.time(screening_policy(timing), rotating_launch(candidates[i].launch, problem.copies()));
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
  for (std::size_t i : finalists) launches.push_back(rotating_launch(candidates[i].launch, problem.copies()));
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
  if (winner && finalists.size() > 1) {
    // Its own confirmation round: the rounds that chose it report the lowest of several medians, biased low.
    SearchCandidate& w = candidates[*winner];
    try {
      Measurement m = harness.time(timing, rotating_launch(w.launch, problem.copies()));
      m.operand_copies = problem.copies();
      w.confirmation = std::move(m);
    } catch (const CudaError& e) {
      w.status = "failed";
      w.reason = std::string("timing failed in its confirmation round: ") + e.what();
      return std::nullopt;
    }
  }
  return winner;
}

}  // namespace aispflow::kernels::cuda
