// The CUTLASS grouped GEMM instance of the cutlass.grouped provider (compiled for sm_90a by cutlass.cmake).
#include "kernels/cuda/cutlass/sm90_grouped.cuh"
namespace aispflow::kernels::cuda::cutlass_abi {
const GroupedOps sm90_grouped_bf16 = cutlass_sm90::GroupedInstance<128, 256, 64, 2, 1>::ops;
const char* const sm90_grouped_bf16_name =
    "cutlass3x_sm90_tensorop_gemm_grouped_bf16_bf16_f32_void_bf16_128x256x64_2x1x1_0_ttt_align8_"
    "warpspecialized_cooperative_epi_tma_ptr_array";
}
