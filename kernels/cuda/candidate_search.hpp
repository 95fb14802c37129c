#pragma once
// The one candidate search behind every provider that picks among several kernels for a case: `ours.cluster`
// with autotune (and any provider with a single candidate), the same steps `cublaslt.sweep` takes:
//   1. verify every candidate: output poisoned with NaN, one launch, the guard bytes around C checked (problems
//      that have them), every element compared with the reference, on the first and on the last operand copy; a candidate failing any check is `failed` and never timed;
//   2. screen the verified ones with a short timing (only when there are more than `finalists`);
//   3. time the finalists interleaved (Harness::time_interleaved: same clocks and power state for all);
//   4. the fastest finalist wins.
// Providers supply the candidates; the search knows nothing about what they run.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/timing.hpp"
#include "kernels/cuda/harness.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda {

class GemmProblem;

struct SearchCandidate {
  std::string kernel;              // the record's `kernel` if this candidate wins
  nlohmann::json identity;         // provider-specific identity fields for the record's `candidates` entry
                                   // ({"config": ...} for ours.*, {"heuristic_rank", "algo"} for cuBLASLt)
  BoundLaunch launch;              // enqueues one GEMM on an operand copy
  double extra_tolerance = 0;      // added to the problem's tolerance (OurKernel::extra_rounding)
  // Filled by the search:
  std::string status = "ok";       // "ok" | "failed"
  std::string reason;
  bool verified = false;
  double max_rel_err = 0;
  std::optional<Measurement> screen, full;
  nlohmann::json to_json() const;
};

struct SearchOptions {
  int finalists = 3;               // timed with the full policy, interleaved
  // A candidate that reaches the final whatever its screening time (cuBLASLt's heuristic top: so the sweep's
  // winner is, in the same measurement pass, never slower than what the plain provider would pick).
  std::optional<std::size_t> always_final;
};

// Runs the search over `candidates` on `problem` with the harness; returns the index of the winner, or nullopt
// when no candidate passed verification and timing (their reasons are in the candidates).
std::optional<std::size_t> run_candidate_search(std::vector<SearchCandidate>& candidates, GemmProblem& problem,
                                                Harness& harness, const TimingPolicy& timing,
                                                const SearchOptions& options = {});

// A short policy for screening: enough samples to rank candidates, little time each.
TimingPolicy screening_policy(const TimingPolicy& full);

}  // namespace aispflow::kernels::cuda
