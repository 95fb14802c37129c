#pragma once
// Split-K's last step, shared by the reduce kernel (hopper_kernels.cu) and the GEMM's reducer CTAs (hopper_gemm.cuh).
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/epilogue.cuh"
#include "kernels/cuda/ours/hopper_params.hpp"

namespace aispflow::kernels::cuda::ours {

// Four consecutive outputs of one row, from element i of [batch][m][n] (n is a multiple of 8, so they share the
// row): the first `splits` fp32 partials summed in split order (through L2: other CTAs wrote them), then scale, bias
// and GELU as the epilogue asks, bf16 out.
__device__ inline void finish_split_k4(const HopperParams& p, std::int64_t i, int splits, __nv_bfloat16* c) {
  const std::int64_t count = std::int64_t(p.batch) * p.m * p.n;
  float4 sum = __ldcg(reinterpret_cast<const float4*>(p.partials + i));
  for (int s = 1; s < splits; ++s) {
    const float4 x = __ldcg(reinterpret_cast<const float4*>(p.partials + s * count + i));
    sum.x += x.x;
    sum.y += x.y;
    sum.z += x.z;
    sum.w += x.w;
  }
  const float scale = (p.scale_a && p.scale_b) ? (*p.scale_a) * (*p.scale_b) : 1.0f;
  const auto* bias = static_cast<const __nv_bfloat16*>(p.bias);
  const float in[4] = {sum.x, sum.y, sum.z, sum.w};
  __align__(8) __nv_bfloat16 out[4];
  for (int e = 0; e < 4; ++e) {
    float v = scale * in[e];
    if (p.epilogue != 0) v += __bfloat162float(bias[(i + e) % p.n]);
    if (p.epilogue == 2) v = gelu_tanh_fast(v);
    out[e] = __float2bfloat16_rn(v);
  }
  *reinterpret_cast<uint2*>(c + i) = *reinterpret_cast<const uint2*>(out);
}

}  // namespace aispflow::kernels::cuda::ours
