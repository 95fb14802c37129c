#pragma once
// One CUTLASS 3.x sm100 (Blackwell, tcgen05 + TMEM accumulators) GEMM instance from a manifest.def row:
// bf16 on the 1-SM or 2-SM (cluster pair) UMMA, or block-scaled MXFP8 / NVFP4. Compiled for sm_100a only.
// Block-scaled operands come with their scale factors already in CUTLASS's interleaved scale-factor layout
// (Sm1xxBlkScaledConfig); aispflow does not produce that layout yet (docs/cutlass.md), so the providers
// record those instances as skipped even on a Blackwell GPU; they are compiled so the build proves they are.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/cuda/cutlass/adapter_entry_points.cuh"
#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda::cutlass_sm100 {

namespace abi = aispflow::kernels::cuda::cutlass_abi;

enum class Schedule { tcgen05_1sm, tcgen05_2sm };

// Tags named as manifest.def spells the dtypes.
struct bf16 {
  using type = cutlass::bfloat16_t;
  static constexpr bool block_scaled = false;
  template <bool TwoSm> using Kernel = std::conditional_t<TwoSm, cutlass::gemm::KernelTmaWarpSpecialized2SmSm100,
                                                          cutlass::gemm::KernelTmaWarpSpecialized1SmSm100>;
};
struct mxfp8 {   // e4m3 elements, one E8M0 scale per 32 consecutive K elements
  using type = cutlass::mx_float8_t<cutlass::float_e4m3_t>;
  static constexpr bool block_scaled = true;
  template <bool TwoSm> using Kernel = std::conditional_t<TwoSm, cutlass::gemm::KernelTmaWarpSpecialized2SmMxf8f6f4Sm100,
                                                          cutlass::gemm::KernelTmaWarpSpecialized1SmMxf8f6f4Sm100>;
};
struct nvfp4 {   // e2m1 elements, one E4M3 scale per 16 consecutive K elements
  using type = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
  static constexpr bool block_scaled = true;
  template <bool TwoSm> using Kernel = std::conditional_t<TwoSm, cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                                                          cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100>;
};

template <class In, bool BKMajor, int TM, int TN, int TK, int CM, int CN, Schedule S>
struct Instance {
  static constexpr bool kTwoSm = S == Schedule::tcgen05_2sm;
  using ElementA = typename In::type;
  using ElementB = ElementA;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = std::conditional_t<BKMajor, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = cutlass::layout::RowMajor;
  using OpClass = std::conditional_t<In::block_scaled, cutlass::arch::OpClassBlockScaledTensorOp,
                                     cutlass::arch::OpClassTensorOp>;
  static constexpr int kAlignAB = In::block_scaled ? (std::is_same_v<In, nvfp4> ? 32 : 16)
                                                   : 128 / cutlass::sizeof_bits<ElementA>::value;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  using MmaTileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>;
  using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using EpilogueSchedule = std::conditional_t<kTwoSm, cutlass::epilogue::TmaWarpSpecialized2Sm,
                                              cutlass::epilogue::TmaWarpSpecialized1Sm>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, MmaTileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, ElementD, LayoutD,
      kAlignD, EpilogueSchedule>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, OpClass, ElementA, LayoutA, kAlignAB, ElementB, LayoutB, kAlignAB, float, MmaTileShape,
      ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename In::template Kernel<kTwoSm>>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, void>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const abi::GemmArgs& g) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    const auto sa = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(g.m, g.k, 1));
    const auto sb = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(g.n, g.k, 1));
    const auto sd = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(g.m, g.n, 1));
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    cudaGetDevice(&hw.device_id);
    hw.sm_count = g.sm_count;
    typename Gemm::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {g.m, g.n, g.k, 1};
    if constexpr (In::block_scaled) {
      using Config = typename CollectiveMainloop::Sm1xxBlkScaledConfig;
      using ElementSF = typename ElementA::ScaleFactorType;
      using ElementData = typename ElementA::DataType;
      args.mainloop = {static_cast<const ElementData*>(g.a), sa, static_cast<const ElementData*>(g.b), sb,
                       static_cast<const ElementSF*>(g.scale_a),
                       Config::tile_atom_to_shape_SFA(cute::make_shape(g.m, g.n, g.k, 1)),
                       static_cast<const ElementSF*>(g.scale_b),
                       Config::tile_atom_to_shape_SFB(cute::make_shape(g.m, g.n, g.k, 1))};
    } else {
      args.mainloop = {static_cast<const ElementA*>(g.a), sa, static_cast<const ElementB*>(g.b), sb};
    }
    args.epilogue = {{}, nullptr, sd, static_cast<ElementD*>(g.c), sd};
    args.epilogue.thread.alpha = g.alpha;
    args.epilogue.thread.beta = 0.0f;
    args.hw_info = hw;
    return args;
  }
};

}  // namespace aispflow::kernels::cuda::cutlass_sm100

#define AISPFLOW_CUTLASS_SM100(symbol, dtype, b_k_major, tm, tn, tk, cm, cn, schedule)                         \
  extern const ::aispflow::kernels::cuda::cutlass_abi::InstanceOps symbol =                                 \
      ::aispflow::kernels::cuda::cutlass_abi::AdapterEntryPoints<::aispflow::kernels::cuda::cutlass_sm100::Instance< \
          ::aispflow::kernels::cuda::cutlass_sm100::dtype, b_k_major, tm, tn, tk, cm, cn,                      \
          ::aispflow::kernels::cuda::cutlass_sm100::Schedule::schedule>>::ops;
