// Compiled instances of the Hopper GEMM kernel at block N 144 and 160 (NOTES.md step 53): the widths cuBLASLt's
// heuristic runs where N is 2880 or 5760 (144 divides both: no part-empty last column of tiles) and 5120 (160).
// bf16 and fp8 (promote4 and promote8), B K-major only: MN-major B is loaded in 64-column boxes, which these widths
// are not made of. Their epilogue chunks are 16 and 32 columns (hopper_params.hpp: epilogue_chunk_cols). Their
// own translation unit, so that they compile beside the other families.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_n144_n160(bool fp8, int block_n, int promote_every) {
  if (!fp8) {
    switch (block_n) {
      case 144: return hopper_instance_of<false, 128, 144, false, false>();
      case 160: return hopper_instance_of<false, 128, 160, false, false>();
    }
    return {};
  }
  switch (block_n * 10 + promote_every) {
    case 1444: return hopper_instance_of<true, 128, 144, false, false, 4>();
    case 1448: return hopper_instance_of<true, 128, 144, false, false, 8>();
    case 1604: return hopper_instance_of<true, 128, 160, false, false, 4>();
    case 1608: return hopper_instance_of<true, 128, 160, false, false, 8>();
  }
  return {};
}

}  // namespace aispflow::kernels::cuda::ours
