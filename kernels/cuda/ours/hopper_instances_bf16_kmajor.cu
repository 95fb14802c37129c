// Compiled instances of the Hopper GEMM kernel: bf16 kmajor, block N 32 / 64 / 128 / 192 / 256 (and 240, compiled in
// hopper_instances_bf16_n240.cu), the 256 x 128 tile, and the ping-pong schedule at block N 128. Each dtype x
// major-mode family is its own translation unit so the heavy instances compile in parallel.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_bf16_n240(bool b_mn_major);   // hopper_instances_bf16_n240.cu

HopperInstance hopper_instance_bf16_kmajor(int block_m, int block_n, bool ping_pong) {
  if (block_m == 256) return block_n == 128 && !ping_pong ? hopper_instance_of<false, 256, 128, false, false>() : HopperInstance{};
  if (block_m != 128) return {};
  if (ping_pong) return block_n == 128 ? hopper_instance_of<false, 128, 128, false, true>() : HopperInstance{};
  switch (block_n) {
    case 32: return hopper_instance_of<false, 128, 32, false, false>();
    case 64: return hopper_instance_of<false, 128, 64, false, false>();
    case 128: return hopper_instance_of<false, 128, 128, false, false>();
    case 192: return hopper_instance_of<false, 128, 192, false, false>();
    case 240: return hopper_instance_bf16_n240(false);
    case 256: return hopper_instance_of<false, 128, 256, false, false>();
  }
  return {};
}

}  // namespace aispflow::kernels::cuda::ours
