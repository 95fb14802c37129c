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

#include "kernels/cuda/cutlass/adapter_entry_points.cuh"
#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda::cutlass_sm90 {

namespace abi = aispflow::kernels::cuda::cutlass_abi;

// The manifest's schedule words. `*_swap` rows run the same kernels on the transposed problem,
// C^T[N x M] = B[N x K] * A^T (A and B exchanged, D column-major): for decode GEMMs (M <= 128) the large N
// becomes CUTLASS's M, so a 128x64 tile covers 64 tokens without the half-empty M tile a 128-row tile has
// at M = 64 (cooperative kernels need tile M >= 128), and N supplies the tiles that fill the SMs.
enum class Schedule { cooperative, pingpong, stream_k, cooperative_swap, pingpong_swap, stream_k_swap };
constexpr bool swapped(Schedule s) {
  return s == Schedule::cooperative_swap || s == Schedule::pingpong_swap || s == Schedule::stream_k_swap;
}
constexpr Schedule unswapped(Schedule s) {
  return s == Schedule::cooperative_swap ? Schedule::cooperative
         : s == Schedule::pingpong_swap  ? Schedule::pingpong
         : s == Schedule::stream_k_swap  ? Schedule::stream_k
                                         : s;
}

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
// Swapped (C^T = B * A^T): CUTLASS's A is our B (N x K: RowMajor when K-major, else ColumnMajor), its B is our
// A read as K x M ColumnMajor, and its D is our row-major C read as N x M ColumnMajor.
template <class In, bool BKMajor, int TM, int TN, int TK, int CM, int CN, Schedule S>
struct Instance {
  static constexpr bool kSwap = swapped(S);
  using ElementA = typename In::type;
  using ElementB = ElementA;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = std::conditional_t<kSwap, std::conditional_t<BKMajor, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor>,
                                     cutlass::layout::RowMajor>;
  using LayoutB = std::conditional_t<kSwap || BKMajor, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = std::conditional_t<kSwap, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementA>::value;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  using TileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>;
  using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using Policy = SchedulePolicy<unswapped(S)>;
  static constexpr bool kStreamK = unswapped(S) == Schedule::stream_k;
  static constexpr bool kFp8 = cutlass::sizeof_bits<ElementA>::value == 8;

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
    // The problem CUTLASS sees: (M, N) exchanged and the operands with them when swapped.
    const int m = kSwap ? g.n : g.m, n = kSwap ? g.m : g.n;
    const void* a = kSwap ? g.b : g.a;
    const void* b = kSwap ? g.a : g.b;
    const auto sa = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(m, g.k, 1));
    const auto sb = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(n, g.k, 1));
    const auto sd = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(m, n, 1));
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    cudaGetDevice(&hw.device_id);
    hw.sm_count = g.sm_count;
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {m, n, g.k, 1},
                                  {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb},
                                  {{}, nullptr, sd, static_cast<ElementD*>(g.c), sd},
                                  hw};
    args.epilogue.thread.alpha = g.alpha;
    args.epilogue.thread.beta = 0.0f;
    args.scheduler.max_swizzle_size = g.swizzle;
    args.scheduler.raster_order = static_cast<decltype(args.scheduler.raster_order)>(g.raster);
    if constexpr (kStreamK) {
      // splits > 1: split-K into that many K ranges (CUTLASS caps it at the SM count and the K tiles); 1:
      // CUTLASS's heuristic (stream-K, split-K or data-parallel from the tile and SM counts).
      using Mode = cutlass::gemm::kernel::detail::DecompositionMode;
      args.scheduler.splits = g.splits > 1 ? g.splits : 1;
      args.scheduler.decomposition_mode = g.splits > 1 ? Mode::SplitK : Mode::Heuristic;
      using Reduction = cutlass::gemm::kernel::detail::ReductionMode;
      args.scheduler.reduction_mode = g.reduction == 1 ? Reduction::Nondeterministic : Reduction::Deterministic;
    }
    // fp8: how many wgmma k-blocks (32 deep) accumulate in the tensor core before they are added into the fp32
    // accumulator; each promotion waits for every wgmma in flight. 0: CUTLASS's default (4, one 128-deep K tile).
    if constexpr (kFp8)
      if (g.promotion_interval > 0) args.mainloop.mma_promotion_interval = uint32_t(g.promotion_interval);
    return args;
  }
};

}  // namespace aispflow::kernels::cuda::cutlass_sm90

// One manifest row -> the exported entry points (see instance_abi.hpp), in a generated translation unit.
#define AISPFLOW_CUTLASS_SM90(symbol, dtype, b_k_major, tm, tn, tk, cm, cn, schedule)                          \
  extern const ::aispflow::kernels::cuda::cutlass_abi::InstanceOps symbol =                                 \
      ::aispflow::kernels::cuda::cutlass_abi::AdapterEntryPoints<::aispflow::kernels::cuda::cutlass_sm90::Instance<  \
          ::aispflow::kernels::cuda::cutlass_sm90::dtype, b_k_major, tm, tn, tk, cm, cn,                       \
          ::aispflow::kernels::cuda::cutlass_sm90::Schedule::schedule>>::ops;
