// Compiled instances of the Hopper GEMM kernel: fp8, block N 128 / 192 (fp8 promotes each k-tile through a second set of
// accumulators, which at block N 256 would not fit in the registers), each also promoting by column halves. Each dtype x
// major-mode family is its own translation unit so the heavy instances compile in parallel.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_fp8(int block_n, bool halves_promotion) {
  if (halves_promotion) {
    switch (block_n) {
      case 128: return hopper_instance_of<true, 128, false, false, true>();
      case 192: return hopper_instance_of<true, 192, false, false, true>();
    }
    return {};
  }
  switch (block_n) {
    case 128: return hopper_instance_of<true, 128, false, false>();
    case 192: return hopper_instance_of<true, 192, false, false>();
  }
  return {};
}

}  // namespace aispflow::kernels::cuda::ours
