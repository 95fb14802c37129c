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
  // The tile scheduler's run-time options (the profiler's --swizzle_size / --raster_order): how many CTA rows
  // (or columns) of tiles are walked together, so that tiles sharing A or B rows run at the same time and hit
  // in L2. 1 and heuristic are CUTLASS's defaults.
  int swizzle = 1;              // 1 | 2 | 4 | 8
  int raster = 0;               // 0 heuristic | 1 along M | 2 along N
  // Stream-K scheduler instances only: > 1 asks for split-K into that many K ranges, 1 leaves the decomposition
  // to CUTLASS's heuristic (stream-K / split-K / data-parallel). The provider chooses it and records it.
  int splits = 1;
  // Stream-K scheduler instances only: how the K ranges of one tile are summed in the workspace. 0 deterministic
  // (each range waits for the one before it: a chain), 1 nondeterministic (every range adds as soon as the first
  // has stored: fp32 additions in arrival order, so the last bits can differ between runs).
  int reduction = 0;
  // fp8 instances only: wgmma k-blocks between promotions into the fp32 accumulator (a multiple of 4, the
  // k-blocks of one K tile); 0 = CUTLASS's default, 4.
  int promotion_interval = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Grouped GEMM (pointer array, the MoE expert GEMM): problem g is C_g[m_g x n] = alpha * A_g[m_g x k] * B_g[k x n],
// all row-major; host arrays of the sizes and pointers, which the instance uploads (GroupedOps::prepare).
struct GroupedArgs {
  int groups = 0;
  const int* host_m = nullptr;
  const void* const* host_a = nullptr;
  const void* const* host_b = nullptr;
  void* const* host_c = nullptr;
  int n = 0, k = 0;
  float alpha = 1.0f;
  int sm_count = 0;
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

struct GroupedOps {
  std::size_t (*metadata_bytes)(int groups);           // device bytes for shapes, pointers, strides
  int (*prepare)(const GroupedArgs&, void* metadata);  // uploads them (synchronous)
  int (*can_implement)(const GroupedArgs&, void* metadata);
  std::size_t (*workspace_bytes)(const GroupedArgs&, void* metadata);
  int (*run)(const GroupedArgs&, void* metadata, void* workspace);
};

// The grouped instance of this build (kernels/cuda/cutlass/sm90_grouped_bf16.cu), sm_90a.
extern const GroupedOps sm90_grouped_bf16;
extern const char* const sm90_grouped_bf16_name;

}  // namespace aispflow::kernels::cuda::cutlass_abi
