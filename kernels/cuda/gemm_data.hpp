#pragma once
// Device-side helpers for verified GEMMs: random operands (never zeros), the fp32-accumulating reference
// GEMM, and the comparison of a provider's output with it. Host API; the kernels live in gemm_data.cu.
//
// Layout convention (as everywhere in aispflow): C[M x N] = scale * A[M x K] * B[K x N], row-major,
// `batch` independent problems stored back to back. A provider may store B transposed (row-major
// N x K, i.e. "B^T"), which cuBLASLt's fp8 kernels require; the reference is told which.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace aispflow::kernels::cuda {

enum class Elem { f32, f16, bf16, e4m3 };
int elem_bytes(Elem e);
const char* elem_name(Elem e);

// The fused output operation of a GEMM (kernels::GemmCase::epilogue): C = epi(scale * A*B + bias[col]).
// GELU is the tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), kernels/cuda/epilogue.cuh.
enum class Epilogue { none, bias, bias_gelu };
// "none" | "bias" | "bias_gelu"; throws std::invalid_argument for anything else.
Epilogue epilogue_from_name(const std::string& name);
const char* epilogue_name(Epilogue e);

// Fills count elements with values uniform in [-1, 1] with |x| >= 1/64 (as kernels/common/verify.hpp
// does on the CPU), rounded to the element type: never zero, not even after rounding to fp8 e4m3.
// Counter-based: the same seed gives the same values whatever the launch geometry.
void fill_random(void* data, Elem type, std::int64_t count, std::uint64_t seed, cudaStream_t stream);

// Sets every byte to 0xFF: NaN in f32/f16/bf16 (and in e4m3), so an output element the provider never
// writes is caught by compare_to_reference.
void poison(void* data, std::size_t bytes, cudaStream_t stream);

struct RefGemm {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  Elem ab_type = Elem::f32;
  bool b_transposed = false;   // B stored as row-major N x K
  const void* a = nullptr;
  const void* b = nullptr;
  float scale = 1.0f;          // per-tensor scales folded in (fp8: scale_a * scale_b)
  Epilogue epilogue = Epilogue::none;
  const void* bias = nullptr;  // [n] of bias_type, shared by every row and batch (epilogue bias, bias_gelu)
  Elem bias_type = Elem::f32;
  float* c = nullptr;          // fp32 output [batch][m][n]
  float* floor = nullptr;      // [batch][m][n]: scale * sum_k |a * b| / sqrt(k), the error metric's floor
};
// The simple reference: each output element a plain fp32 sum over k of the operands converted to fp32, then
// the epilogue in fp32.
// It also writes the error floor used by compare_to_reference, so the GPU check uses the same metric as
// the CPU float64 check (kernels/common/verify.cpp): rel = |c - r| / max(|r|, sum|a*b| / sqrt(k)).
void reference_gemm(const RefGemm& g, cudaStream_t stream);

struct Comparison {
  double max_rel_err = 0;      // max |c - ref| / max(|ref|, floor); +inf when any element is not finite
  std::int64_t worst_index = -1;
  std::int64_t non_finite = 0; // NaN/Inf elements in c (unwritten elements are NaN, see poison)
  double worst_value = 0, worst_reference = 0;
  // "max rel err 3.1e-03 at C[12][40] (got 1.25, expected 1.2461)"; n = columns of C.
  std::string describe(std::int64_t n) const;
};
// Compares every element of c (of type c_type) with the fp32 reference. Synchronises the stream.
Comparison compare_to_reference(const void* c, Elem c_type, const float* ref, const float* floor, std::int64_t count,
                                cudaStream_t stream);

// The epilogue on its own, so that its check does not drown in the GEMM's accumulation error (at K = 8192 the
// bf16 tolerance of compare_to_reference, relative to the error floor, exceeds the whole difference between
// GELU and ReLU). `fused` is a kernel's output with the epilogue, `bare` the same kernel's output without it
// (A*B only, same operands). Each element of `fused` is compared with the epilogue applied in float64 to
// bare + bias, within what a correct pair can differ by: the rounding of `bare` to the output type (carried
// through GELU, whose slope is below 1.13), the rounding of `fused`, a hardware tanh (2^-11), and fp32
// accumulation-order differences between the two runs (8 u_fp32 sum|a*b|, from the reference's error floor).
// Independent of K: a ReLU instead of GELU misses by up to 0.17 where the bound is about 0.01.
struct EpilogueCheck {
  Epilogue epilogue = Epilogue::none;
  Elem c_type = Elem::bf16;
  const void* fused = nullptr;
  const void* bare = nullptr;
  const void* bias = nullptr;  // [n] of bias_type
  Elem bias_type = Elem::bf16;
  const float* floor = nullptr;  // the reference's error floor of the same copy
  std::int64_t n = 0, k = 0, count = 0;
};
struct EpilogueComparison {
  double max_ratio = 0;        // max |fused - epilogue(bare + bias)| / bound; > 1 fails; +inf for NaN/Inf
  std::int64_t worst_index = -1;
  std::int64_t non_finite = 0;
  double worst_value = 0, worst_expected = 0, worst_bare = 0;
  bool ok() const { return non_finite == 0 && max_ratio <= 1.0; }
  // "epilogue off by 12x its bound at C[3][7] (got 0, expected -0.17 = gelu(-0.75 = A*B -0.31 + bias))"
  std::string describe(std::int64_t n) const;
};
// Synchronises the stream.
EpilogueComparison compare_epilogue(const EpilogueCheck& check, cudaStream_t stream);

// Overwrites element `index` of c with `value` (tests use it to corrupt an output on purpose).
void set_element(void* c, Elem c_type, std::int64_t index, float value, cudaStream_t stream);

}  // namespace aispflow::kernels::cuda
