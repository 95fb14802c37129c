#pragma once
// The one candidate search behind every provider that picks among several kernels for a case: `ours.cluster`
// with autotune (and any provider with a single candidate), the same steps `cublaslt.sweep` takes:
//   1. verify every candidate: output poisoned with NaN, one launch, the guard bytes around C checked (problems
//      that have them), every element compared with the reference, on the first and on the last operand copy
//      (each copy holds its own data and has its own reference); with an epilogue, also the epilogue on its own
//      (compare_epilogue: the fused output against the same kernel's output without the epilogue, `bare`); a
//      candidate failing any check is `failed` and never timed;
//   2. screen the verified ones with a short timing (only when there are more than `finalists`);
//   3. time the finalists interleaved (Harness::time_interleaved: same clocks and power state for all);
//   4. the fastest finalist wins; when several were timed, the winner is timed once more on its own (its
//      confirmation round), and that is the time the record reports: the minimum of several finalists' medians
//      would favour whichever finalist's noise ran low.
// Providers supply the candidates; the search knows nothing about what they run.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/timing.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/harness.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda {

class GemmProblem;

struct SearchCandidate {
  std::string kernel;              // the record's `kernel` if this candidate wins
  nlohmann::json identity;         // provider-specific identity fields for the record's `candidates` entry
                                   // ({"config": ...} for ours.*, {"heuristic_rank", "algo"} for cuBLASLt)
  BoundLaunch launch;              // enqueues one GEMM on an operand copy
  // The same kernel without the epilogue (A*B into C of the copy): needed, with an epilogue, for its check. A
  // candidate with an epilogue and no `bare` fails verification (a check that cannot run is not a pass).
  BoundLaunch bare;
  std::string bare_note;           // how `bare` relates to `launch` when it is not the very same kernel
  double extra_tolerance = 0;      // added to the problem's tolerance (OurKernel::extra_rounding)
  // Filled by the search:
  std::string status = "ok";       // "ok" | "failed"
  std::string reason;
  bool verified = false;
  double max_rel_err = 0;
  std::optional<Measurement> screen, full;
  std::optional<Measurement> confirmation;   // the winner's own round, when several finalists were timed
  nlohmann::json epilogue_check;             // {"max_ratio", "bound", "bare"} when the epilogue was checked
  // The measurement the record reports: the confirmation round when there is one, else `full`.
  const Measurement& reported() const { return confirmation ? *confirmation : *full; }
  nlohmann::json to_json() const;
};

// A record that ends `failed`, untimed, with the reason (a search without a winner: `candidate` is the one whose
// kernel and error the record names).
void record_failure(GemmRecord& rec, std::string reason);
void record_failure(GemmRecord& rec, const SearchCandidate& candidate, std::string reason);

// The winner into its record: `kernel`, verified, its error, and its reported measurement (time, timing,
// warnings, the epilogue check).
void record_winner(GemmRecord& rec, const SearchCandidate& winner);
// What every GPU GEMM record says about its problem: the tolerance, the seed of its random operands, its operand
// copies (when more than one) and, for fp8, the per-tensor scales (docs/records.md).
void record_problem(GemmRecord& rec, const GemmProblem& problem, std::uint64_t seed);

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

// A fresh random seed for a problem's operands (records keep it, so `aispflow replay` rebuilds the same data).
std::uint64_t random_seed();
// How many operand copies a problem keeps for timing: with L2 flushing asked for, enough that a graph of short
// launches still reads cold operands (GemmProblem::copies_for_cold_l2 on `device`'s L2), else 1.
int operand_copies_for(const TimingPolicy& timing, const GemmShape& shape, const LtDtype& spec, int device);
// A launch for the harness whose calls take the operand copies in turn (0, 1, ..., copies - 1, 0, ...), so that
// a graph of short launches reads cold operands.
std::function<void(cudaStream_t)> rotating_launch(std::function<void(cudaStream_t, int)> launch, int copies);

// A short policy for screening: enough samples to rank candidates, little time each.
TimingPolicy screening_policy(const TimingPolicy& full);

// The search's correctness check on one candidate (step 1 above): output poisoned with NaN, one launch, every
// element compared with the reference, on the first and the last operand copy, then the epilogue on its own.
// Sets status, verified, max_rel_err, epilogue_check and reason.
void verify_candidate(SearchCandidate& c, GemmProblem& problem, cudaStream_t stream);

// A provider that can list, for a case, every candidate it could have recorded, bound to a problem: the same
// candidates its search times. `aispflow replay` (kernels/cuda/replay.hpp) finds among them the kernel a record
// names and launches exactly that one again, under a profiler.
class CandidateSource {
 public:
  virtual ~CandidateSource() = default;
  // The problem must outlive the candidates' launches. Throws CudaError when the GPU fails.
  virtual std::vector<SearchCandidate> candidates_for(const GemmCase& c, const GemmProblem& problem) = 0;
};

}  // namespace aispflow::kernels::cuda
