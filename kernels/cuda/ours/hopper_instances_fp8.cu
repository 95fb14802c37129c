// Compiled instances of the Hopper GEMM kernel: fp8, block N 32 / 64 (decode) and 128 / 192 (fp8 promotes each k-tile through a second set of
// accumulators, which at block N 256 would not fit in the registers), each promoting every 1, 4 or 8 k-tiles. Each dtype x
// major-mode family is its own translation unit so the heavy instances compile in parallel.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_fp8(int block_n, int promote_every) {
  switch (block_n * 10 + promote_every) {
    case 324: return hopper_instance_of<true, 128, 32, false, false, 4>();
    case 644: return hopper_instance_of<true, 128, 64, false, false, 4>();
    case 1281: return hopper_instance_of<true, 128, 128, false, false, 1>();
    case 1921: return hopper_instance_of<true, 128, 192, false, false, 1>();
    case 1284: return hopper_instance_of<true, 128, 128, false, false, 4>();
    case 1924: return hopper_instance_of<true, 128, 192, false, false, 4>();
    case 1288: return hopper_instance_of<true, 128, 128, false, false, 8>();
    case 1928: return hopper_instance_of<true, 128, 192, false, false, 8>();
  }
  return {};
}

}  // namespace aispflow::kernels::cuda::ours
