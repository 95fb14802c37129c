// cuBLASLt's heuristic top algorithm for a problem, as a launch the probes (hopper_probe, hopper_timeline) time beside
// ours. A host file of its own: nvcc 13.0's front end fails an internal assertion on a
// std::vector<cublasLtMatmulHeuristicResult_t> in hopper_timeline.cu's translation unit, which includes the
// kernel's device headers.
#include "bench/tools/lt_heuristic_top.hpp"

#include <memory>

namespace aispflow::bench {

std::optional<kernels::cuda::BoundLaunch> lt_heuristic_top(kernels::cuda::GpuContext& ctx,
                                                                  const kernels::cuda::GemmProblem& problem) {
  auto plan = std::make_shared<kernels::cuda::LtPlan>(ctx, problem);
  const auto candidates = plan->candidates(1);
  if (candidates.empty()) return std::nullopt;
  const cublasLtMatmulAlgo_t algo = candidates.front().algo;
  return [plan, algo](cudaStream_t stream, int copy) { plan->run(algo, stream, copy); };
}

}  // namespace aispflow::bench
