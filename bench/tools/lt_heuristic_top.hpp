#pragma once
#include <optional>

#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::bench {

// A launch of cuBLASLt's heuristic top algorithm for `problem` (it keeps its plan alive); none when the heuristic
// offers no algorithm. Throws what LtPlan throws.
std::optional<kernels::cuda::BoundLaunch> lt_heuristic_top(kernels::cuda::GpuContext& ctx,
                                                                  const kernels::cuda::GemmProblem& problem);

}  // namespace aispflow::bench
