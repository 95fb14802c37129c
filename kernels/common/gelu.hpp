#pragma once
// GELU in its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the form cuBLASLt's GELU epilogue and
// the frameworks' "fast GELU" compute (the erf form differs from it by up to ~1e-3). One definition for the CUDA
// reference GEMM and aispflow's kernels (kernels/cuda/epilogue.cuh) and for host code, so a plain unit test can
// hold it against independently computed values on a machine without a GPU (tests/unit/test_gelu.cpp).
#include <cmath>

#include "kernels/common/host_device.hpp"

namespace aispflow::kernels {

AISPFLOW_HOST_DEVICE inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

}  // namespace aispflow::kernels
