#pragma once
// The CPU GEMM providers, one per file:
//   cpu.naive     naive_provider.cpp     float64-accumulating loops (fp32, fp64); the reference-quality one
//   cpu.blocked   blocked_provider.cpp   our packed, cache-blocked, vectorised fp32 GEMM (blocked_gemm.hpp)
//   cpu.openblas  openblas_provider.cpp  cblas_sgemm / cblas_dgemm from the system OpenBLAS
#include <memory>

#include "kernels/common/gemm.hpp"

namespace aispflow::kernels {

std::unique_ptr<GemmProvider> make_naive_provider();
std::unique_ptr<GemmProvider> make_blocked_provider();
std::unique_ptr<GemmProvider> make_openblas_provider();

// Above this many FLOP (2*m*n*k*batch) cpu.naive declines a shape: it exists to be obviously right, not fast.
inline constexpr double kNaiveFlopLimit = 2e10;

}  // namespace aispflow::kernels
