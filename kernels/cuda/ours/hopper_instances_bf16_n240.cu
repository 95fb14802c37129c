// Compiled instances of the Hopper GEMM kernel: bf16 128 x 240 tiles, B K-major and MN-major (cooperative; the
// autotune list runs them as 2x1 pairs).
// 240 = 2880 / 12 fills N = 2880 (gpt-oss's hidden size) with no partial tile column, where 256 leaves a last
// column of 64 live columns in 256 and 192 makes 480 tiles, 3.6 waves on 132 SMs (NOTES.md step 145). Its own
// translation unit so that it compiles beside the other families.
#include "kernels/cuda/ours/hopper_gemm.cuh"

namespace aispflow::kernels::cuda::ours {

HopperInstance hopper_instance_bf16_n240(bool b_mn_major) {
  return b_mn_major ? hopper_instance_of<false, 128, 240, true, false>()
                    : hopper_instance_of<false, 128, 240, false, false>();
}

}  // namespace aispflow::kernels::cuda::ours
