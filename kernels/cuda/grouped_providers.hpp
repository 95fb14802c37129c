#pragma once
// GEMM providers for grouped (MoE-routed) shapes, GemmShape::groups (docs/nodes.md, gemm_shapes routing:):
// expert g computes C_g[m_g x N] = A_g[m_g x K] * B_g[K x N], bf16, layout nn, no epilogue.
//   cutlass.grouped    CUTLASS's sm90 pointer-array grouped kernel: one launch for all experts;
//   cublaslt.grouped   cuBLAS's grouped GEMM API (cublasGemmGroupedBatchedEx) where this toolkit has it, else
//                      one GEMM per expert on one stream; extra["method"] says which;
//   cublas.per_expert  one cublasGemmEx per expert on one stream (what a framework without grouped GEMM runs);
//   padded             every expert padded to the largest group: cuBLASLt's strided batched GEMM over
//                      experts x max(m_g) rows, as an implementation without grouped GEMM runs it.
// TFLOP/s counts real rows only (GemmShape::flops). A plain batched shape (batch > 1, no groups) runs as equal
// groups of m rows. Operands live in the padded layout of GemmProblem (batch = experts, m = the largest group):
// expert g's rows start at g * m; grouped results are verified group by group against the same fp32 reference.
#include <functional>
#include <memory>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/context.hpp"

namespace aispflow::kernels::cuda {

enum class GroupedMethod { cutlass, cublas_grouped, per_expert, padded };

std::unique_ptr<GemmProvider> make_grouped_provider(GroupedMethod method, std::function<GpuContext&()> context);
const std::vector<std::string>& grouped_provider_names();   // in the enum's order

}  // namespace aispflow::kernels::cuda
