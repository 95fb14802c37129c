#pragma once
// The CUTLASS GEMM providers (docs/cutlass.md):
//   cutlass         the manifest's `pick` instance for the case's dtype and B layout on this GPU's architecture:
//                   verified, then timed;
//   cutlass.select  the profiler search: every manifest instance for the dtype and layout; instances for another
//                   architecture, absent from this build or refused by CUTLASS's can_implement are recorded
//                   skipped with the reason; the rest verified, screened, the finalists (and always the `pick`
//                   instance) timed interleaved; the winner's CUTLASS name in `kernel`, every candidate in
//                   extra["candidates"]. Each runnable instance is tried with scheduler swizzles 1, 2, 4, 8
//                   (a run-time argument of the same kernel, as the CUTLASS profiler sweeps it), stream-K
//                   instances also with the split counts of cutlass_split_counts(), sm_90a fp8 instances with
//                   the promotion intervals of cutlass_promotion_intervals(); the winner's configuration is in
//                   extra["scheduler"] (swizzle, splits, decomposition) and extra["mainloop"].
#include <array>
#include <functional>
#include <optional>
#include <string>

#include "kernels/common/backend.hpp"
#include "kernels/common/cutlass_manifest.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda {

// What every CUTLASS run of `problem` shares: its sizes, fp8's scales applied as alpha, the SM count. A launch
// adds its run-time configuration, the workspace, the operand copy and the stream.
cutlass_abi::GemmArgs cutlass_problem_args(const GemmProblem& problem, int sm_count);
// One CUTLASS GEMM of `problem`'s operand copy `copy` with `args`: throws CudaError naming `kernel` when CUTLASS
// cannot implement it or the launch fails. `problem` must outlive the launch.
BoundLaunch cutlass_launch(const cutlass_abi::InstanceOps* ops, const cutlass_abi::GemmArgs& args,
                           GemmProblem& problem, const std::string& kernel);

class CutlassProvider : public GemmProvider {
 public:
  static constexpr int kFinalists = 3;
  // cutlass.select tries every runnable instance with each of these scheduler swizzles (docs/cutlass.md).
  static constexpr std::array<int, 4> kSwizzles = kCutlassSwizzles;
  CutlassProvider(std::function<GpuContext&()> context, bool select);
  std::string name() const override { return select_ ? "cutlass.select" : "cutlass"; }
  Requirements requirements() const override;
  std::optional<std::string> unsupported(const GemmCase& c) const override;
  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override;

 private:
  std::function<GpuContext&()> context_;
  bool select_;
};

}  // namespace aispflow::kernels::cuda
