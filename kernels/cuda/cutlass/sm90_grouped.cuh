#pragma once
// CUTLASS's sm90 pointer-array grouped GEMM (the MoE expert GEMM): one launch for every expert, each with its
// own M, problem sizes, pointers and strides read from device arrays. bf16 in and out, fp32 accumulation,
// B N-major (layout nn, B_g stored K x N), TMA warp-specialized cooperative, persistent group tile scheduler.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <cstring>
#include <vector>

#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda::cutlass_sm90 {

namespace gabi = aispflow::kernels::cuda::cutlass_abi;

template <int TM, int TN, int TK, int CM, int CN>
struct GroupedInstance {
  using Element = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::RowMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlign = 8;
  using TileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>;
  using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD*, kAlign, Element, LayoutD*, kAlign,
      cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA*, kAlign, Element, LayoutB*, kAlign, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using Shape3 = typename ProblemShape::UnderlyingProblemShape;

  // Device metadata: problem shapes, pointer arrays, stride arrays, back to back (each 256-byte aligned).
  struct Layout {
    std::size_t shapes, a, b, d, sa, sb, sd, total;
    explicit Layout(int g) {
      std::size_t at = 0;
      auto take = [&](std::size_t bytes) { const std::size_t here = at; at += (bytes + 255) / 256 * 256; return here; };
      shapes = take(sizeof(Shape3) * g);
      a = take(sizeof(void*) * g);
      b = take(sizeof(void*) * g);
      d = take(sizeof(void*) * g);
      sa = take(sizeof(StrideA) * g);
      sb = take(sizeof(StrideB) * g);
      sd = take(sizeof(StrideD) * g);
      total = at;
    }
  };

  static std::size_t metadata_bytes(int groups) { return Layout(groups).total; }

  // Host copies live as long as the arguments refer to them (CUTLASS reads host problem shapes at initialize).
  struct Host {
    std::vector<Shape3> shapes;
  };

  static typename Gemm::Arguments arguments(const gabi::GroupedArgs& g, void* metadata, Host& host) {
    const Layout lay(g.groups);
    char* base = static_cast<char*>(metadata);
    host.shapes.clear();
    for (int i = 0; i < g.groups; ++i) host.shapes.push_back({g.host_m[i], g.n, g.k});
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    cudaGetDevice(&hw.device_id);
    hw.sm_count = g.sm_count;
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGrouped,
        {g.groups, reinterpret_cast<Shape3*>(base + lay.shapes), host.shapes.data()},
        {reinterpret_cast<const Element**>(base + lay.a), reinterpret_cast<StrideA*>(base + lay.sa),
         reinterpret_cast<const Element**>(base + lay.b), reinterpret_cast<StrideB*>(base + lay.sb)},
        {{}, nullptr, reinterpret_cast<StrideD*>(base + lay.sd), reinterpret_cast<Element**>(base + lay.d),
         reinterpret_cast<StrideD*>(base + lay.sd)},
        hw};
    args.epilogue.thread.alpha = g.alpha;
    args.epilogue.thread.beta = 0.0f;
    return args;
  }

  // Uploads shapes, pointers and strides (synchronously: done once, before verification and timing).
  static int prepare(const gabi::GroupedArgs& g, void* metadata) {
    const Layout lay(g.groups);
    std::vector<char> blob(lay.total);
    auto put = [&](std::size_t offset, int i, const auto& value) {
      std::memcpy(blob.data() + offset + sizeof(value) * std::size_t(i), &value, sizeof(value));
    };
    for (int i = 0; i < g.groups; ++i) {
      const int m = g.host_m[i];
      put(lay.shapes, i, Shape3{m, g.n, g.k});
      put(lay.a, i, g.host_a[i]);
      put(lay.b, i, g.host_b[i]);
      put(lay.d, i, g.host_c[i]);
      put(lay.sa, i, cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(m, g.k, 1)));
      put(lay.sb, i, cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(g.n, g.k, 1)));
      put(lay.sd, i, cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(m, g.n, 1)));
    }
    return cudaMemcpy(metadata, blob.data(), blob.size(), cudaMemcpyHostToDevice) == cudaSuccess ? gabi::kOk
                                                                                                 : gabi::kLaunchFailed;
  }
  static int can_implement(const gabi::GroupedArgs& g, void* metadata) {
    Host host;
    return Gemm::can_implement(arguments(g, metadata, host)) == cutlass::Status::kSuccess ? gabi::kOk
                                                                                          : gabi::kCannotImplement;
  }
  static std::size_t workspace_bytes(const gabi::GroupedArgs& g, void* metadata) {
    Host host;
    return Gemm::get_workspace_size(arguments(g, metadata, host));
  }
  // Stream-ordered work only (capturable); the shared-memory attribute is set once (see sm90_gemm.cuh).
  static int run(const gabi::GroupedArgs& g, void* metadata, void* workspace) {
    static const cudaError_t attribute = [] {
      constexpr int smem = Kernel::SharedStorageSize;
      return smem >= (48 << 10) ? cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem)
                                : cudaSuccess;
    }();
    if (attribute != cudaSuccess) return gabi::kLaunchFailed;
    Host host;
    const auto args = arguments(g, metadata, host);
    if (Kernel::initialize_workspace(args, workspace, g.stream, nullptr) != cutlass::Status::kSuccess)
      return gabi::kLaunchFailed;
    auto params = Kernel::to_underlying_arguments(args, workspace);
    return Gemm::run(params, g.stream) == cutlass::Status::kSuccess ? gabi::kOk : gabi::kLaunchFailed;
  }
  static constexpr gabi::GroupedOps ops{&metadata_bytes, &prepare, &can_implement, &workspace_bytes, &run};
};

}  // namespace aispflow::kernels::cuda::cutlass_sm90
