// Compiled instances of the Hopper GEMM kernel: bf16 kmajor, block N 128 / 192 / 256. Each dtype x
// major-mode family is its own translation unit so the heavy instances compile in parallel.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_bf16_kmajor(int block_n) {
  switch (block_n) {
    case 128: return hopper_instance_of<false, 128, false>();
    case 192: return hopper_instance_of<false, 192, false>();
    case 256: return hopper_instance_of<false, 256, false>();
  }
  return {};
}

}  // namespace aispflow::kernels::cuda::ours
