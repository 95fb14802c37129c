#pragma once
// Honest results start here: every provider checks its C against a float64 reference computed from the
// very same inputs before anything is timed, and fills its inputs with seeded random, never-zero values
// (zeros make any kernel look both correct and fast).
//
// Layout convention (as everywhere in kernels/): batch-major, row-major, contiguous:
//   A[batch][m][k], B[batch][k][n], C[batch][m][n].
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "kernels/common/gemm.hpp"

namespace aispflow::kernels {

// ---- tolerances ------------------------------------------------------------------------------------------

// The relative error a correct GEMM of this dtype and depth may show, in the metric of VerifyResult
// (see verify.cpp): output rounding of the dtype plus an fp32 (fp64 for "fp64") accumulation term growing
// like sqrt(k), with a safety factor. Tight enough that dropping a single k-term of a correct fp32 result
// is caught. Throws std::invalid_argument for an unknown dtype.
double default_tolerance(const std::string& dtype, std::int64_t k);

// ---- random inputs ---------------------------------------------------------------------------------------

// Element `index` of the seeded stream: uniform in [-1, 1] with |x| >= 1/64, so it is never zero, not even
// after rounding to bf16 or fp8 e4m3. Counter-based, so any slice of an array can be filled in parallel
// and the same (seed, index) always gives the same value on every machine.
double random_uniform(std::uint64_t seed, std::uint64_t index);
// Fill a host array with random_uniform(seed, i) (TBB-parallel for large arrays).
void fill_random(std::span<float> data, std::uint64_t seed);
void fill_random(std::span<double> data, std::uint64_t seed);

// ---- verification ----------------------------------------------------------------------------------------

struct VerifyOptions {
  // Every element is checked when the output has at most this many elements and the float64 reference
  // costs at most max_full_check_work multiply-adds; otherwise a random sample (plus the four corners of
  // the first and last batch) is checked. NaN/Inf are looked for in every element either way.
  std::int64_t max_full_check_elements = std::int64_t(1) << 20;
  double max_full_check_work = 1e9;
  int sample_count = 4096;
  std::uint64_t seed = 0x5eed'cafe'f00dULL;
};

// Verify contiguous host arrays (layout above).
VerifyResult verify_gemm(const GemmShape& shape, const float* a, const float* b, const float* c,
                         double tolerance, const VerifyOptions& options = {});
VerifyResult verify_gemm(const GemmShape& shape, const double* a, const double* b, const double* c,
                         double tolerance, const VerifyOptions& options = {});

// Element access as float64, for data held in another form (a host copy of bf16 or fp8 device data, a
// strided or transposed buffer...). Called concurrently from several threads: must be thread-safe.
using ElementFn = std::function<double(std::int64_t batch, std::int64_t row, std::int64_t col)>;
VerifyResult verify_gemm(const GemmShape& shape, const ElementFn& a, const ElementFn& b, const ElementFn& c,
                         double tolerance, const VerifyOptions& options = {});

}  // namespace aispflow::kernels
