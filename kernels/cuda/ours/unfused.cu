// The elementwise half of cublaslt.unfused (unfused.cpp): C = epilogue(C + bias) in place.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/epilogue.cuh"
#include "kernels/cuda/ours/unfused.hpp"

namespace aispflow::kernels::cuda::ours {

namespace {

// C = epilogue(C + bias[col]) in place, 8 bf16 (16 bytes) per thread step; n is a multiple of 8 (checked).
__global__ void bias_gelu_kernel(__nv_bfloat16* __restrict__ c, const __nv_bfloat16* __restrict__ bias,
                                 std::int64_t count, std::int64_t n, int epilogue) {
  for (std::int64_t i = 8 * (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x); i < count;
       i += 8 * std::int64_t(gridDim.x) * blockDim.x) {
    uint4 raw = *reinterpret_cast<const uint4*>(c + i);
    const uint4 braw = *reinterpret_cast<const uint4*>(bias + i % n);
    auto* v = reinterpret_cast<__nv_bfloat16*>(&raw);
    const auto* bv = reinterpret_cast<const __nv_bfloat16*>(&braw);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      float x = __bfloat162float(v[e]) + __bfloat162float(bv[e]);
      if (epilogue == 2) x = gelu_tanh_fast(x);
      v[e] = __float2bfloat16_rn(x);
    }
    *reinterpret_cast<uint4*>(c + i) = raw;
  }
}

}  // namespace

void launch_bias_epilogue(void* c, const void* bias, std::int64_t count, std::int64_t n, int epilogue,
                          cudaStream_t stream) {
  const unsigned blocks = unsigned(std::min<std::int64_t>((count / 8 + 255) / 256, 132 * 8));
  bias_gelu_kernel<<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(c), static_cast<const __nv_bfloat16*>(bias),
                                               count, n, epilogue);
  AISPFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace aispflow::kernels::cuda::ours
