#pragma once
// One CUTLASS 3.x sm90 GEMM instance, built from the manifest's parameters (manifest.def) through CUTLASS's
// collective builders. Included only by the generated per-instance translation units (one TU per instance,
// so the instances compile in parallel and each only for its own architecture).
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/kernel/tile_scheduler.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda::cutlass_sm90 {

namespace abi = aispflow::kernels::cuda::cutlass_abi;

enum class Schedule { cooperative, pingpong, stream_k };

// Tags named as manifest.def spells the dtypes, so the generated TUs can pass the manifest's words through.
struct bf16 { using type = cutlass::bfloat16_t; };
struct fp8_e4m3 { using type = cutlass::float_e4m3_t; };

template <Schedule S> struct SchedulePolicy;
template <> struct SchedulePolicy<Schedule::cooperative> {
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using Tiles = cutlass::gemm::PersistentScheduler;
};
template <> struct SchedulePolicy<Schedule::pingpong> {
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
  using Tiles = cutlass::gemm::PersistentScheduler;
};
template <> struct SchedulePolicy<Schedule::stream_k> {
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using Tiles = cutlass::gemm::StreamKScheduler;
};

// B K-major (layout nt: B stored N x K) is CUTLASS's ColumnMajor K x N; B N-major (nn) is RowMajor.
template <class In, bool BKMajor, int TM, int TN, int TK, int CM, int CN, Schedule S>
struct Instance {
  using ElementA = typename In::type;
  using ElementB = ElementA;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = std::conditional_t<BKMajor, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementA>::value;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  using TileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>;
  using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using Policy = SchedulePolicy<S>;

  // No C source (beta = 0): ElementC void keeps the epilogue from reading one.
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, ElementD, LayoutD,
      kAlignD, typename Policy::Epilogue>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignAB, ElementB, LayoutB, kAlignAB,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Policy::Kernel>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, typename Policy::Tiles>;
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
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {g.m, g.n, g.k, 1},
                                  {static_cast<const ElementA*>(g.a), sa, static_cast<const ElementB*>(g.b), sb},
                                  {{}, nullptr, sd, static_cast<ElementD*>(g.c), sd},
                                  hw};
    args.epilogue.thread.alpha = g.alpha;
    args.epilogue.thread.beta = 0.0f;
    args.scheduler.max_swizzle_size = g.swizzle;
    args.scheduler.raster_order = static_cast<decltype(args.scheduler.raster_order)>(g.raster);
    return args;
  }
  static int can_implement(const abi::GemmArgs& g) {
    return Gemm::can_implement(arguments(g)) == cutlass::Status::kSuccess ? abi::kOk : abi::kCannotImplement;
  }
  static std::size_t workspace_bytes(const abi::GemmArgs& g) { return Gemm::get_workspace_size(arguments(g)); }
  // Only stream-ordered work per call (workspace set-up, the launch), so a call can be captured into a CUDA
  // graph; the kernel's shared-memory attribute is set once, on the first (uncaptured, verification) call,
  // instead of on every call as GemmUniversalAdapter::initialize() would.
  static int run(const abi::GemmArgs& g) {
    static const cudaError_t attribute = [] {
      constexpr int smem = Kernel::SharedStorageSize;
      return smem >= (48 << 10) ? cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem)
                                : cudaSuccess;
    }();
    if (attribute != cudaSuccess) return abi::kLaunchFailed;
    const auto args = arguments(g);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return abi::kCannotImplement;
    if (Kernel::initialize_workspace(args, g.workspace, g.stream, nullptr) != cutlass::Status::kSuccess)
      return abi::kLaunchFailed;
    auto params = Kernel::to_underlying_arguments(args, g.workspace);
    return Gemm::run(params, g.stream) == cutlass::Status::kSuccess ? abi::kOk : abi::kLaunchFailed;
  }
  static constexpr abi::InstanceOps ops{&can_implement, &workspace_bytes, &run};
};

}  // namespace aispflow::kernels::cuda::cutlass_sm90

// One manifest row -> the exported entry points (see instance_abi.hpp), in a generated translation unit.
#define AISPFLOW_CUTLASS_SM90(symbol, dtype, b_k_major, tm, tn, tk, cm, cn, schedule)                          \
  extern const ::aispflow::kernels::cuda::cutlass_abi::InstanceOps symbol =                                 \
      ::aispflow::kernels::cuda::cutlass_sm90::Instance<::aispflow::kernels::cuda::cutlass_sm90::dtype, b_k_major, \
                                                       tm, tn, tk, cm, cn,                                     \
                                                       ::aispflow::kernels::cuda::cutlass_sm90::Schedule::schedule>::ops;
