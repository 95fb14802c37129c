#pragma once
// The one path every CPU GEMM provider takes from a (shape, dtype) to a record:
//   allocate -> random, non-zero inputs -> C pre-filled with NaN -> run once -> verify against float64
//   -> mismatch: "failed", never timed | match: time with kernels::measure -> "ok" record.
// A provider only supplies the call that computes one GEMM.
#include <functional>
#include <optional>
#include <string>

#include "kernels/common/gemm.hpp"

namespace aispflow::kernels {

// Computes C = A * B for one GEMM of the shape's m, n, k (row-major, contiguous); batches are looped
// by the caller.
template <class T>
using CpuGemmCall = std::function<void(const T* a, const T* b, T* c)>;

struct CpuGemmJob {
  std::string provider;   // "cpu.blocked"
  std::string kernel;     // full identity, copied into the record
  GemmShape shape;
  std::string dtype;      // "fp32" for float, "fp64" for double
  TimingPolicy timing;
};

GemmRecord run_cpu_gemm(const CpuGemmJob& job, const CpuGemmCall<float>& call);
GemmRecord run_cpu_gemm(const CpuGemmJob& job, const CpuGemmCall<double>& call);

// Why (shape, dtype) cannot run on this host for memory reasons: the three operands must fit in half of
// physical memory. nullopt when they do.
std::optional<std::string> cpu_memory_limit(const GemmShape& shape, const std::string& dtype);

}  // namespace aispflow::kernels
