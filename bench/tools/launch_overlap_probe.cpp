// Whether a library's GEMM kernels overlap the kernel before them through programmatic dependent launch (PDL),
// and what that overlap is worth in the harness's graphs of back-to-back launches (NOTES.md step 102).
//   1. Each GEMM is captured twice into a graph; the probe prints every kernel node's name and launch attribute
//      (programmatic stream serialization) and every edge's type and port: a programmatic edge is PDL.
//   2. The harness times the GEMM alone, a 4-byte memset alone, and the pair (GEMM then the memset). The memset
//      waits for the whole GEMM, and the next GEMM cannot start before it: pair - memset - alone is the overlap
//      the GEMMs had with each other, up to the gap an extra graph node adds (the CUTLASS rows, built without
//      PDL, measure that gap).
//   launch_overlap_probe          cuBLASLt's heuristic top and the CUTLASS decode rows on the decode shapes,
//                                 and 4096^3, bf16 and fp8
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/cutlass_manifest.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cutlass/cutlass_provider.hpp"
#include "kernels/cuda/cutlass/registry.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/device_buffer.hpp"

using namespace aispflow::kernels;
using namespace aispflow::kernels::cuda;

namespace {

// The kernels and edges of two launches captured on `stream`.
void print_graph(const char* who, const std::function<void(cudaStream_t)>& launch, cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  AISPFLOW_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch(stream);
  launch(stream);
  AISPFLOW_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t n = 0;
  AISPFLOW_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  AISPFLOW_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  auto index_of = [&](cudaGraphNode_t x) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] == x) return int(i);
    return -1;
  };
  std::printf("  %s graph: %zu nodes\n", who, n);
  for (std::size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type;
    AISPFLOW_CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &type));
    if (type != cudaGraphNodeTypeKernel) {
      std::printf("    node %zu: type %d\n", i, int(type));
      continue;
    }
    // The driver API's view: libraries (cuBLASLt) launch CUfunctions, which the runtime's node query rejects.
    CUDA_KERNEL_NODE_PARAMS p{};
    const char* name = "?";
    if (cuGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(nodes[i]), &p) != CUDA_SUCCESS ||
        cuFuncGetName(&name, p.func) != CUDA_SUCCESS)
      name = "?";
    CUlaunchAttributeValue v{};
    const bool pss = cuGraphKernelNodeGetAttribute(reinterpret_cast<CUgraphNode>(nodes[i]),
                                                   CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, &v) ==
                         CUDA_SUCCESS && v.programmaticStreamSerializationAllowed;
    std::printf("    node %zu: kernel %.100s grid %ux%ux%u block %u smem %u programmatic_serialization %d\n", i, name,
                p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.sharedMemBytes, int(pss));
  }
  std::size_t e = 0;
  AISPFLOW_CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e));
  std::vector<cudaGraphNode_t> from(e), to(e);
  std::vector<cudaGraphEdgeData> data(e);
  AISPFLOW_CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &e));
  for (std::size_t i = 0; i < e; ++i)
    std::printf("    edge %d -> %d: type %s, from port %d\n", index_of(from[i]), index_of(to[i]),
                data[i].type == cudaGraphDependencyTypeProgrammatic ? "PROGRAMMATIC" : "default", int(data[i].from_port));
  AISPFLOW_CUDA_CHECK(cudaGraphDestroy(graph));
}

// Verified first, as every timed kernel is (verify_candidate: the search's check, on the first and the last
// operand copy); that first, uncaptured launch also lets CUTLASS set its kernel's shared-memory attribute before
// the capture. `word` is the memset's 4-byte target.
void compare(const char* who, GpuContext& ctx, GemmProblem& problem, const TimingPolicy& timing,
             const BoundLaunch& gemm, const DeviceBuffer& word) {
  SearchCandidate check;
  check.kernel = who;
  check.launch = gemm;
  verify_candidate(check, problem, ctx.stream());
  if (!check.verified) {
    std::printf("  %s: not timed: %s\n", who, check.reason.c_str());
    return;
  }
  print_graph(who, [&](cudaStream_t s) { gemm(s, 0); }, ctx.stream());
  auto memset = [&word](cudaStream_t s) { AISPFLOW_CUDA_CHECK(cudaMemsetAsync(word.get(), 0, word.bytes(), s)); };
  const int copies = problem.copies();
  const double alone = ctx.harness().time(timing, rotating_launch(gemm, copies)).stats.median_ms;
  const double gap = ctx.harness().time(timing, memset).stats.median_ms;
  const double pair = ctx.harness()
                          .time(timing, rotating_launch([&](cudaStream_t s, int c) { gemm(s, c); memset(s); }, copies))
                          .stats.median_ms;
  std::printf("  %s (verified, max rel err %.2e): alone %.2f us, memset %.2f us, pair %.2f us: "
              "pair - memset - alone = %+.2f us\n",
              who, check.max_rel_err, alone * 1e3, gap * 1e3, pair * 1e3, (pair - gap - alone) * 1e3);
}

}  // namespace

int main() {
  if (system_info().devices.empty()) {
    std::printf("no GPU: %s\n", system_info().why_no_device.c_str());
    return 0;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  GpuContext ctx(0);
  const int sms = system_info().devices.front().sm_count;
  TimingPolicy timing;
  timing.warmup = 3;
  timing.min_samples = 10;
  timing.max_samples = 50;
  timing.target_stdrel = 0.01;
  timing.budget_s = 1.0;
  std::mt19937_64 rng(22);
  const DeviceBuffer word(4);
  struct Case { std::int64_t m, n, k; const char* dtype; };
  for (const Case cs : {Case{64, 2880, 4096, "fp8_e4m3"}, Case{64, 5120, 2880, "fp8_e4m3"},
                        Case{64, 2880, 4096, "bf16"}, Case{64, 5120, 2880, "bf16"},
                        Case{4096, 4096, 4096, "bf16"}, Case{4096, 4096, 4096, "fp8_e4m3"}}) {
    GemmShape s;
    s.m = cs.m; s.n = cs.n; s.k = cs.k;
    s.name = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k);
    const GemmCase gc{s, cs.dtype, "nt", "none"};
    const LtDtype spec = *lt_dtype(cs.dtype);
    const int copies = operand_copies_for(timing, s, spec, 0);
    GemmProblem problem(s, spec, rng(), ctx.stream(), copies, GemmVariant::of(gc));
    std::printf("== %s %s nt (%d operand copies)\n", s.name.c_str(), cs.dtype, copies);
    try {
      LtPlan plan(ctx, problem);
      const auto cands = plan.candidates(1);
      if (!cands.empty()) {
        const auto algo = cands.front().algo;
        compare("cublasLt heuristic top", ctx, problem, timing, [&](cudaStream_t st, int c) { plan.run(algo, st, c); },
                word);
      }
    } catch (const std::exception& e) { std::printf("  cublasLt: %s\n", e.what()); }
    for (const CutlassInstance* inst : cutlass_instances_for(gc)) {
      const bool decode = cs.m <= 64;
      if (decode != (inst->schedule == "pingpong_swap")) continue;   // the decode rows on decode, the pick elsewhere
      if (!decode && inst->set != "pick") continue;
      const cutlass_abi::InstanceOps* o = cutlass_ops(*inst);
      if (!o) continue;
      cutlass_abi::GemmArgs base = cutlass_problem_args(problem, sms);
      if (o->can_implement(base) != cutlass_abi::kOk) continue;
      DeviceBuffer workspace(o->workspace_bytes(base));
      base.workspace = workspace.get();
      base.workspace_bytes = workspace.bytes();
      const std::string who = "CUTLASS " + inst->symbol();
      try {
        compare(who.c_str(), ctx, problem, timing, cutlass_launch(o, base, problem, inst->symbol()), word);
      } catch (const std::exception& e) { std::printf("  %s: %s\n", who.c_str(), e.what()); }
    }
  }
  return 0;
}
