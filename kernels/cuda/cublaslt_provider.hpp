#pragma once
// The cuBLASLt GEMM providers:
//   cublaslt        the heuristic's top algorithm: verified, then timed;
//   cublaslt.sweep  up to 32 heuristic candidates, each verified then screened with a short timing; the
//                   three fastest (and always the heuristic's top one) are re-timed with the full policy
//                   and the fastest of those wins. The winner's record carries its identity in `kernel`
//                   and every candidate (identity, verification, times) in extra["candidates"].
// A candidate that fails verification is "failed" and never timed.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"

namespace aispflow::kernels::cuda {

class CublasLtProvider : public GemmProvider, public CandidateSource {
 public:
  static constexpr int kSweepCandidates = 32;
  static constexpr int kSweepFinalists = 3;

  // `context` returns the GPU context to run on (created on first use by the backend).
  CublasLtProvider(std::function<GpuContext&()> context, bool sweep);
  std::string name() const override { return sweep_ ? "cublaslt.sweep" : "cublaslt"; }
  Requirements requirements() const override;
  std::optional<std::string> unsupported(const GemmCase& c) const override;
  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override;
  // The heuristic's top algorithm and its 32-long list: every kernel either provider may have recorded.
  std::vector<SearchCandidate> candidates_for(const GemmCase& c, const GemmProblem& problem) override;

 private:
  std::function<GpuContext&()> context_;
  bool sweep_;
};

// The rate the `cublaslt` provider achieves on an n^3 GEMM of `dtype` (verified first), as an achieved
// reference beside the tensor-pipe ceiling (tensor_pipe.hpp), never as a roof:
// {"name": "gemm.bf16", "kind": "achieved", "unit": "TFLOP/s", ...}. nullopt with *why set when the
// GEMM was skipped or failed.
std::optional<Ceiling> measure_gemm_ceiling(const std::function<GpuContext&()>& context, const std::string& dtype,
                                            std::int64_t n, const TimingPolicy& timing, std::string* why);

}  // namespace aispflow::kernels::cuda
