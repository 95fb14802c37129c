// gelu_tanh (kernels/common/gelu.hpp), the GELU that the CUDA reference GEMM and aispflow's fused kernels share,
// against values computed independently of it: the tanh form evaluated with mpmath 1.3.0 at 30 significant
// digits from the exact float inputs,
//   from mpmath import mp, mpf, tanh, sqrt, pi; mp.dps = 30
//   g = lambda x: mpf('0.5') * x * (1 + tanh(sqrt(2 / pi) * (x + mpf('0.044715') * x**3)))
// The GPU test CudaGpu.ReferenceGeluMatchesIndependentValues holds the device build of the same function to them.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/common/gelu.hpp"
#include "support/gelu_values.hpp"

namespace aispflow::kernels {
namespace {

TEST(Gelu, TanhFormMatchesIndependentlyComputedValues) {
  for (const auto& [x, want] : test::kGeluTanhValues) {
    SCOPED_TRACE(x);
    EXPECT_NEAR(gelu_tanh(float(x)), want, test::gelu_tolerance(want));
  }
}

// The check above can fail: the erf form (a different GELU, off by up to ~4e-4) and ReLU (what a kernel skipping
// the tanh would compute) both miss the table by far more than its tolerance.
TEST(Gelu, TheTableRejectsTheErfFormAndRelu) {
  int erf_misses = 0, relu_misses = 0;
  for (const auto& [x, want] : test::kGeluTanhValues) {
    const double erf_form = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    const double relu = x > 0 ? x : 0.0;
    erf_misses += std::abs(erf_form - want) > test::gelu_tolerance(want) ? 1 : 0;
    relu_misses += std::abs(relu - want) > test::gelu_tolerance(want) ? 1 : 0;
  }
  EXPECT_GE(erf_misses, 5);
  EXPECT_GE(relu_misses, 8);
}

}  // namespace
}  // namespace aispflow::kernels
