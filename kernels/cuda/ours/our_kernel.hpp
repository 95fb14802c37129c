#pragma once
// The host-side face of one configuration of one of aispflow's own GEMM kernels (ours.naive, ours.tiled,
// ours.wgmma, ours.cluster). A provider (ours_provider.hpp) owns a list of these, asks each whether it can
// run a case, binds the chosen one(s) to a verified problem (kernels/cuda/cublaslt_gemm.hpp's GemmProblem:
// random operands, bias, fp32 reference, operand copies) and hands the launches to the shared verify-and-time
// path. Device code stays in the kernel's own .cu file; nothing here includes CUDA device headers.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/common/gemm.hpp"
#include "kernels/cuda/gemm_data.hpp"

namespace aispflow::kernels::cuda {

class GemmProblem;

// Enqueues one GEMM of the bound problem on operand copy `copy` (0 .. problem.copies()-1). Capturable into a
// CUDA graph: no allocation, no synchronisation. Throws CudaError when the launch fails.
using BoundLaunch = std::function<void(cudaStream_t stream, int copy)>;

class OurKernel {
 public:
  virtual ~OurKernel() = default;
  // The record's `kernel` field: everything that identifies the code that ran, e.g.
  // "ours.cluster bf16 nt tile 128x256x64 stages 4 cluster 2x1 persistent swizzle 8 split-k 1 epilogue tma".
  virtual std::string identity(const GemmCase& c) const = 0;
  // The same as structured fields (tile, stages, cluster, schedule, split) for the record and autotune tables.
  virtual nlohmann::json config() const = 0;
  // nullopt when this configuration computes `c` correctly on the current device; otherwise why not
  // ("fp8 needs layout nt (K-major B)", "TMA needs 16-byte aligned rows: K % 8 != 0", "requires sm_90a").
  virtual std::optional<std::string> unsupported(const GemmCase& c) const = 0;
  // Prepares everything a launch needs for `problem` (tensor maps per operand copy, grid, workspace) and
  // returns the launcher, applying `epilogue` (the problem's own, or none: the same kernel without it, which the
  // epilogue check compares against). The problem must outlive the launcher.
  virtual BoundLaunch bind(const GemmProblem& problem, Epilogue epilogue) const = 0;
  BoundLaunch bind(const GemmProblem& problem) const;   // with the problem's epilogue
  // Relative error this configuration may add beyond the dtype's tolerance, and why: only for a computation
  // that rounds an intermediate by design (the unfused pair stores A*B in bf16 before the bias and GELU).
  virtual double extra_rounding() const { return 0.0; }
};

}  // namespace aispflow::kernels::cuda
