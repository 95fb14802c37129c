#pragma once
// The boundary between aispflow and one compiled CUTLASS instance. Host-only and free of CUTLASS types, so
// that only the instance translation units (sm90_gemm.cuh, sm100_gemm.cuh) pay for CUTLASS's headers.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace aispflow::kernels::cuda::cutlass_abi {

// One dense GEMM, aispflow's convention: C[M x N] = alpha * A[M x K] * B, A and C row-major; B row-major
// K x N (N-major, layout nn) or row-major N x K (K-major, layout nt) as the instance was built for.
struct GemmArgs {
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  // Block-scaled formats (mxfp8, nvfp4): the scale factors of A and B in CUTLASS's scale-factor layout.
  const void* scale_a = nullptr;
  const void* scale_b = nullptr;
  float alpha = 1.0f;           // fp8: scale_a * scale_b (per-tensor scales, as cuBLASLt applies them)
  int sm_count = 0;             // for persistent and stream-K schedulers
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Grouped GEMM (pointer array): problem g is C_g[m_g x n] = alpha * A_g[m_g x k] * B_g, every pointer and
// problem size in device memory (what CUTLASS's grouped kernels read).
struct GroupedArgs {
  int groups = 0;
  const int* host_m = nullptr;       // host copy of the m_g, for can_implement and the scheduler
  void* device_problem_shapes = nullptr;  // groups x {int m, n, k}
  const void** device_a = nullptr;
  const void** device_b = nullptr;
  void** device_c = nullptr;
  void* device_strides = nullptr;    // 3 x groups x int64[3]: strides of A, B, C (filled by fill_strides)
  int n = 0, k = 0;
  float alpha = 1.0f;
  int sm_count = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Status codes of the entry points below: 0 = success.
enum Status : int { kOk = 0, kCannotImplement = 1, kLaunchFailed = 2, kWrongArch = 3 };

// What every instance translation unit exports (as plain function pointers, see registry.cpp).
struct InstanceOps {
  // CUTLASS's can_implement() on these arguments (operand alignment, K and N multiples, cluster fit...).
  int (*can_implement)(const GemmArgs&);
  std::size_t (*workspace_bytes)(const GemmArgs&);
  // initialize() + run() on args.stream; asynchronous, capturable into a CUDA graph once initialized.
  int (*run)(const GemmArgs&);
};

}  // namespace aispflow::kernels::cuda::cutlass_abi
