// The float64 reference check: it passes correct results (full and sampled), and it catches each kind of
// wrong result a kernel can produce: one bad element, a dropped k-term, an unwritten (NaN) element, a bad
// corner of a large output, a wrong batch.
#include "kernels/common/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

namespace aispflow::kernels {
namespace {

GemmShape shape(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
  GemmShape s;
  s.name = "t";
  s.m = m, s.n = n, s.k = k, s.batch = batch;
  return s;
}

// A correct fp32 GEMM computed the plain way (fp32 accumulation), optionally over the first k_used terms.
struct Problem {
  GemmShape s;
  std::vector<float> a, b, c;
  explicit Problem(GemmShape shape_, std::int64_t k_used = -1) : s(shape_) {
    a.resize(std::size_t(s.batch * s.m * s.k));
    b.resize(std::size_t(s.batch * s.k * s.n));
    c.assign(std::size_t(s.batch * s.m * s.n), 0.0f);
    fill_random(a, 1);
    fill_random(b, 2);
    if (k_used < 0) k_used = s.k;
    for (std::int64_t bb = 0; bb < s.batch; ++bb)
      for (std::int64_t i = 0; i < s.m; ++i)
        for (std::int64_t p = 0; p < k_used; ++p) {
          const float aip = a[std::size_t((bb * s.m + i) * s.k + p)];
          for (std::int64_t j = 0; j < s.n; ++j)
            c[std::size_t((bb * s.m + i) * s.n + j)] += aip * b[std::size_t((bb * s.k + p) * s.n + j)];
        }
  }
  float& at(std::int64_t bb, std::int64_t i, std::int64_t j) { return c[std::size_t((bb * s.m + i) * s.n + j)]; }
  VerifyResult verify(const VerifyOptions& o = {}) const {
    return verify_gemm(s, a.data(), b.data(), c.data(), default_tolerance("fp32", s.k), o);
  }
};

VerifyOptions sampled() {
  VerifyOptions o;
  o.max_full_check_elements = 0;   // force the sampled path on a small problem
  o.sample_count = 256;
  return o;
}

TEST(Verify, CorrectFp32ResultPassesEveryElement) {
  Problem p(shape(37, 53, 300));
  const VerifyResult v = p.verify();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.checked, 37 * 53);
  EXPECT_GT(v.max_rel_err, 0.0) << "fp32 accumulation differs from float64 somewhere";
  EXPECT_LT(v.max_rel_err, default_tolerance("fp32", 300));
}

TEST(Verify, OneWrongElementFailsAndIsNamed) {
  Problem p(shape(20, 30, 64));
  p.at(0, 7, 11) += 0.5f;
  const VerifyResult v = p.verify();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("C[7][11]"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("1 of all 600 elements"), std::string::npos) << v.detail;
  EXPECT_GT(v.max_rel_err, default_tolerance("fp32", 64));
}

TEST(Verify, ToleranceIsTightEnoughToCatchOneDroppedKTerm) {
  for (std::int64_t k : {64, 512, 2880}) {
    Problem p(shape(16, 24, k), /*k_used=*/k - 1);
    const VerifyResult v = p.verify();
    EXPECT_FALSE(v.ok) << "k=" << k << ": " << v.detail;
  }
}

TEST(Verify, UnwrittenElementIsCaughtEvenWhenOnlySampling) {
  Problem p(shape(64, 64, 16));
  p.at(0, 40, 23) = std::numeric_limits<float>::quiet_NaN();
  const VerifyResult v = p.verify(sampled());
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("C[40][23] = NaN"), std::string::npos) << v.detail;
  Problem q(shape(8, 8, 8));
  q.at(0, 1, 1) = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(q.verify().ok);
}

TEST(Verify, SampledCheckPassesCorrectResultAndAlwaysLooksAtCorners) {
  Problem p(shape(70, 90, 40, 3));
  const VerifyResult good = p.verify(sampled());
  EXPECT_TRUE(good.ok) << good.detail;
  EXPECT_EQ(good.checked, 256 + 8);
  EXPECT_NE(good.detail.find("sampled"), std::string::npos);
  p.at(2, 69, 89) += 5.0f;   // the very last element of the last batch
  const VerifyResult bad = p.verify(sampled());
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.detail.find("C[2][69][89]"), std::string::npos) << bad.detail;
}

TEST(Verify, LargeOutputsAreSampledByDefault) {
  VerifyOptions o;
  o.max_full_check_elements = 100;   // a 20x20 output is "large" here
  Problem p(shape(20, 20, 8));
  const VerifyResult v = p.verify(o);
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.checked, o.sample_count + 8);
}

TEST(Verify, WrongBatchIsCaught) {
  Problem p(shape(6, 5, 7, 2));
  // Batch 1 holds batch 0's result: every element of batch 1 is wrong.
  std::copy(p.c.begin(), p.c.begin() + 30, p.c.begin() + 30);
  const VerifyResult v = p.verify();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("C[1]["), std::string::npos) << v.detail;
}

TEST(Verify, NearZeroReferencesDoNotExplodeTheRelativeError) {
  // Row 0 of A is (1, 1) and column 0 of B is (1, -1 + tiny): the exact result is tiny, and an fp32
  // kernel's honest rounding there must not look like a huge relative error.
  GemmShape s = shape(1, 1, 2);
  const std::vector<double> a = {1.0, 1.0}, b = {1.0, -1.0 + 1e-12};
  const std::vector<double> c = {1e-12 + 1e-17};
  const VerifyResult v = verify_gemm(s, a.data(), b.data(), c.data(), 1e-10);
  EXPECT_TRUE(v.ok) << v.detail;
}

TEST(Verify, Fp64ArraysAndAccessorsAgreeWithFloatArrays) {
  Problem p(shape(9, 13, 21, 2));
  std::vector<double> a(p.a.begin(), p.a.end()), b(p.b.begin(), p.b.end()), c(p.c.begin(), p.c.end());
  const double tol = default_tolerance("fp32", 21);
  const VerifyResult from_float = p.verify();
  const VerifyResult from_double = verify_gemm(p.s, a.data(), b.data(), c.data(), tol);
  auto accessor = [&p](const std::vector<float>& data, std::int64_t rows, std::int64_t cols) {
    return ElementFn([&data, rows, cols](std::int64_t bb, std::int64_t r, std::int64_t col) {
      return double(data[std::size_t((bb * rows + r) * cols + col)]);
    });
  };
  const VerifyResult from_fn = verify_gemm(p.s, accessor(p.a, 9, 21), accessor(p.b, 21, 13),
                                           accessor(p.c, 9, 13), tol);
  EXPECT_TRUE(from_float.ok && from_double.ok && from_fn.ok);
  EXPECT_DOUBLE_EQ(from_float.max_rel_err, from_double.max_rel_err);
  EXPECT_DOUBLE_EQ(from_float.max_rel_err, from_fn.max_rel_err);
  // And the accessor path catches errors too, sampled or not.
  p.at(1, 4, 4) = -p.at(1, 4, 4);
  EXPECT_FALSE(verify_gemm(p.s, accessor(p.a, 9, 21), accessor(p.b, 21, 13), accessor(p.c, 9, 13), tol).ok);
}

TEST(Verify, RejectsNonPositiveTolerance) {
  Problem p(shape(2, 2, 2));
  EXPECT_THROW(verify_gemm(p.s, p.a.data(), p.b.data(), p.c.data(), 0.0), std::invalid_argument);
}

TEST(Tolerance, OrderedByPrecisionAndGrowingWithK) {
  EXPECT_LT(default_tolerance("fp64", 4096), default_tolerance("fp32", 4096));
  EXPECT_LT(default_tolerance("fp32", 4096), default_tolerance("tf32", 4096));
  EXPECT_LT(default_tolerance("fp16", 4096), default_tolerance("bf16", 4096));
  EXPECT_LE(default_tolerance("bf16", 4096), default_tolerance("fp8_e4m3", 4096));
  EXPECT_LT(default_tolerance("fp32", 64), default_tolerance("fp32", 16384));
  EXPECT_THROW(default_tolerance("int3", 8), std::invalid_argument);
}

TEST(RandomFill, SeededNonZeroAndSpreadOverMinusOneToOne) {
  std::vector<float> x(100000), y(100000), z(100000);
  fill_random(x, 42);
  fill_random(y, 42);
  fill_random(z, 43);
  EXPECT_EQ(x, y) << "same seed, same data";
  EXPECT_NE(x, z);
  double sum = 0;
  int negative = 0;
  std::set<float> distinct;
  for (float v : x) {
    ASSERT_GE(std::abs(v), 1.0f / 64.0f) << "never zero, not even after rounding to fp8";
    ASSERT_LE(std::abs(v), 1.0f);
    sum += v;
    negative += v < 0;
    distinct.insert(v);
  }
  EXPECT_NEAR(sum / double(x.size()), 0.0, 0.02);
  EXPECT_NEAR(double(negative) / double(x.size()), 0.5, 0.02);
  EXPECT_GT(distinct.size(), 90000u);
  // The double fill is the same stream, so fp32 and fp64 providers see the same numbers.
  std::vector<double> d(100);
  fill_random(d, 42);
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(float(d[i]), x[i]);
  EXPECT_EQ(random_uniform(42, 5), d[5]);
}

}  // namespace
}  // namespace aispflow::kernels
