#pragma once
// The three entry points every CUTLASS 3.x GEMM instance exports (instance_abi.hpp's InstanceOps), shared by the
// sm90 and sm100 instance templates: they differ in how a manifest row becomes a CUTLASS kernel and its
// arguments, not in how that kernel is asked whether it can run, for its workspace, or launched.
//
// `I` is an instance template's class: `I::Gemm` (a GemmUniversalAdapter), `I::Kernel` (its kernel) and
// `static typename I::Gemm::Arguments arguments(const cutlass_abi::GemmArgs&)`.
#include <cuda_runtime.h>

#include <cstddef>

#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>

#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda::cutlass_abi {

template <class I>
struct AdapterEntryPoints {
  using Gemm = typename I::Gemm;
  using Kernel = typename I::Kernel;

  static int can_implement(const GemmArgs& g) {
    return Gemm::can_implement(I::arguments(g)) == cutlass::Status::kSuccess ? kOk : kCannotImplement;
  }
  static std::size_t workspace_bytes(const GemmArgs& g) { return Gemm::get_workspace_size(I::arguments(g)); }
  // Only stream-ordered work per call (workspace set-up, the launch), so a call can be captured into a CUDA
  // graph; the kernel's shared-memory attribute is set once, on the first (uncaptured, verification) call,
  // instead of on every call as GemmUniversalAdapter::initialize() would.
  static int run(const GemmArgs& g) {
    static const cudaError_t attribute = [] {
      constexpr int smem = Kernel::SharedStorageSize;
      return smem >= (48 << 10) ? cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem)
                                : cudaSuccess;
    }();
    if (attribute != cudaSuccess) return kLaunchFailed;
    const auto args = I::arguments(g);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return kCannotImplement;
    if (Kernel::initialize_workspace(args, g.workspace, g.stream, nullptr) != cutlass::Status::kSuccess)
      return kLaunchFailed;
    auto params = Kernel::to_underlying_arguments(args, g.workspace);
    return Gemm::run(params, g.stream) == cutlass::Status::kSuccess ? kOk : kLaunchFailed;
  }
  static constexpr InstanceOps ops{&can_implement, &workspace_bytes, &run};
};

}  // namespace aispflow::kernels::cuda::cutlass_abi
