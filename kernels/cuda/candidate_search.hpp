#pragma once
// The profiler-style search shared by the sweeping GEMM providers: a list of candidate kernels for one
// GemmProblem, each verified (output poisoned with NaN, every element compared with the reference; a failure
// is never timed), the verified ones screened with a short timing, the fastest few timed interleaved with
// the caller's policy (Harness::time_interleaved: same clocks and power state for all), winner first.
// Every candidate (identity, status, verification, times) ends up in the record's extra["candidates"].
//
// NOTE: a local version with the shape the lead's shared helper is to have (kernels/cuda/cublaslt_provider.cpp
// still has its own loop); cutlass.select uses it so that both can be folded into one implementation.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

struct SearchCandidate {
  std::string kernel;                      // full identity, for the record's `kernel`
  nlohmann::json identity = nlohmann::json::object();
  // Enqueues the kernel on operand copy `copy`; throws CudaError on failure. Empty for a skipped candidate.
  std::function<void(cudaStream_t, int copy)> launch;
  std::string status = "ok";               // ok | failed | skipped
  std::string reason;
  bool verified = false;
  double max_rel_err = 0;
  std::optional<Measurement> screen, full;
  nlohmann::json to_json() const;
};

struct SearchOptions {
  int finalists = 3;          // how many screened candidates reach the interleaved final
  bool screen = true;         // false: every verified candidate goes to the final (a single-kernel provider)
  int always_final = -1;      // index of a candidate that reaches the final whenever it verifies (a default)
};

// Runs the search in place; returns the index of the winner (fastest finalist) or -1 when none verified and
// timed. Candidates already marked skipped are left alone.
int run_candidate_search(std::vector<SearchCandidate>& candidates, GemmProblem& problem, Harness& harness,
                         const TimingPolicy& timing, cudaStream_t stream, const SearchOptions& options);

// Fills a record from a finished search: winner's kernel, time, verification; extra["candidates"] and
// extra["search"] when `list_all`; failed with the first candidate's reason when there is no winner.
void record_search(GemmRecord& rec, const std::vector<SearchCandidate>& candidates, int winner, bool list_all);

}  // namespace aispflow::kernels::cuda
