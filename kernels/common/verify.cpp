// Float64 reference check of a GEMM result, random fill helpers and per-dtype tolerances.
//
// The error metric. For output element (i, j) with float64 reference r = sum_p a_ip * b_pj and
// magnitude s = sum_p |a_ip * b_pj|:
//     rel = |c - r| / max(|r|, s / sqrt(k))
// A plain |c - r| / |r| explodes wherever cancellation makes r tiny, although a correct kernel's error
// there is just as small in absolute terms as anywhere else. s / sqrt(k) is the typical size of a sum of
// k terms of random sign, so the floor only applies to elements that are unusually small for this GEMM,
// and for the rest the metric is the ordinary relative error.
#include "kernels/common/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace aispflow::kernels {

// ---- tolerances ------------------------------------------------------------------------------------------

double default_tolerance(const std::string& dtype, std::int64_t k) {
  constexpr double u_fp64 = 0x1p-53, u_fp32 = 0x1p-24;
  const double root_k = std::sqrt(double(std::max<std::int64_t>(k, 1)));
  // Accumulation error of a random-sign sum grows like u * sqrt(k); 8x leaves room for blocked orders.
  const double fp32_accumulation = 8.0 * u_fp32 * root_k;
  if (dtype == "fp64") return 1e-12 + 8.0 * u_fp64 * root_k;
  if (dtype == "fp32") return 1e-6 + fp32_accumulation;
  // tf32 rounds the fp32 inputs to 10 mantissa bits inside the multiply: each product is off by up to 2^-11.
  if (dtype == "tf32") return 4.0 * 0x1p-11 + fp32_accumulation;
  // fp16/bf16/fp8 inputs are exact in the reference (it reads the same rounded values); what remains is
  // fp32 accumulation and the rounding of C to the output type (fp16: 11 bits, bf16 and fp8's bf16: 8 bits).
  if (dtype == "fp16") return 2.0 * 0x1p-11 + fp32_accumulation;
  if (dtype == "bf16") return 2.0 * 0x1p-8 + fp32_accumulation;
  if (dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 3.0 * 0x1p-8 + fp32_accumulation;
  throw std::invalid_argument("no tolerance known for dtype '" + dtype +
                              "' (expected fp64, fp32, tf32, fp16, bf16, fp8_e4m3 or fp8_e5m2)");
}

// ---- random inputs ---------------------------------------------------------------------------------------

namespace {

// SplitMix64 finaliser: a cheap, well-mixed hash of a 64-bit counter.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <class T>
void fill_span(std::span<T> data, std::uint64_t seed) {
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, data.size(), 1 << 16), [&](const auto& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) data[i] = static_cast<T>(random_uniform(seed, i));
  });
}

}  // namespace

double random_uniform(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t state = mix64(seed ^ mix64(index));
  while (true) {
    const double u = double(state >> 11) * 0x1p-53;   // [0, 1)
    const double x = 2.0 * u - 1.0;                    // [-1, 1)
    // Reject the sliver near zero (1/64 of the draws) instead of clamping it, so the rest stays uniform.
    if (std::abs(x) >= 1.0 / 64.0) return x;
    state = mix64(state);
  }
}

void fill_random(std::span<float> data, std::uint64_t seed) { fill_span(data, seed); }
void fill_random(std::span<double> data, std::uint64_t seed) { fill_span(data, seed); }

// ---- verification ----------------------------------------------------------------------------------------

namespace {

// Operands held as contiguous host arrays of float or double.
template <class T>
struct ArrayOperands {
  const T *a, *b, *c;
  std::int64_t m, n, k;
  double A(std::int64_t bb, std::int64_t i, std::int64_t p) const { return double(a[(bb * m + i) * k + p]); }
  double B(std::int64_t bb, std::int64_t p, std::int64_t j) const { return double(b[(bb * k + p) * n + j]); }
  double C(std::int64_t bb, std::int64_t i, std::int64_t j) const { return double(c[(bb * m + i) * n + j]); }
  bool can_check_fully() const { return true; }
  void prepare_batch(std::int64_t) {}
  // The float64 reference of one output row, and each element's magnitude sum_p |a_ip * b_pj|.
  // Walks B row by row so the inner loop is contiguous and vectorises.
  void reference_row(std::int64_t bb, std::int64_t i, double* ref, double* mag) const {
    std::fill(ref, ref + n, 0.0);
    std::fill(mag, mag + n, 0.0);
    const T* arow = a + (bb * m + i) * k;
    for (std::int64_t p = 0; p < k; ++p) {
      const double aip = double(arow[p]);
      const T* brow = b + (bb * k + p) * n;
      for (std::int64_t j = 0; j < n; ++j) {
        const double product = aip * double(brow[j]);
        ref[j] += product;
        mag[j] += std::abs(product);
      }
    }
  }
};

// Operands behind accessor functions. For a full check, one batch of B is copied into float64 first
// so the reference costs k*n accessor calls per batch rather than m*n*k.
struct FunctionOperands {
  const ElementFn &a, &b, &c;
  std::int64_t m, n, k;
  std::vector<double> b_batch;   // B[bb] as float64, row-major k x n (full checks only)
  double A(std::int64_t bb, std::int64_t i, std::int64_t p) const { return a(bb, i, p); }
  double B(std::int64_t bb, std::int64_t p, std::int64_t j) const { return b(bb, p, j); }
  double C(std::int64_t bb, std::int64_t i, std::int64_t j) const { return c(bb, i, j); }
  bool can_check_fully() const { return double(k) * double(n) <= double(1 << 25); }   // <= 256 MiB copy
  void prepare_batch(std::int64_t bb) {
    b_batch.resize(std::size_t(k * n));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, k), [&](const auto& r) {
      for (std::int64_t p = r.begin(); p != r.end(); ++p)
        for (std::int64_t j = 0; j < n; ++j) b_batch[std::size_t(p * n + j)] = b(bb, p, j);
    });
  }
  void reference_row(std::int64_t bb, std::int64_t i, double* ref, double* mag) const {
    std::fill(ref, ref + n, 0.0);
    std::fill(mag, mag + n, 0.0);
    for (std::int64_t p = 0; p < k; ++p) {
      const double aip = a(bb, i, p);
      const double* brow = b_batch.data() + p * n;
      for (std::int64_t j = 0; j < n; ++j) {
        const double product = aip * brow[j];
        ref[j] += product;
        mag[j] += std::abs(product);
      }
    }
  }
};

// Running tally of checked elements; one per thread, merged at the end.
struct Tally {
  double max_rel_err = 0;
  std::int64_t checked = 0;
  std::int64_t bad = 0;            // finite but beyond tolerance
  std::int64_t first_bad = std::numeric_limits<std::int64_t>::max();   // linear index, to report the lowest
  std::string first_bad_detail;

  void merge(const Tally& o) {
    max_rel_err = std::max(max_rel_err, o.max_rel_err);
    checked += o.checked;
    bad += o.bad;
    if (o.first_bad < first_bad) {
      first_bad = o.first_bad;
      first_bad_detail = o.first_bad_detail;
    }
  }
};

std::string element_name(std::int64_t bb, std::int64_t i, std::int64_t j, std::int64_t batch) {
  return batch > 1 ? "C[" + std::to_string(bb) + "][" + std::to_string(i) + "][" + std::to_string(j) + "]"
                   : "C[" + std::to_string(i) + "][" + std::to_string(j) + "]";
}

std::string format_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// Compare one element with its reference; the caller has already rejected NaN/Inf.
void check_element(Tally& t, double value, double ref, double mag, std::int64_t k, double tolerance,
                   std::int64_t bb, std::int64_t i, std::int64_t j, const GemmShape& s) {
  const double floor = mag / std::sqrt(double(k));
  const double denom = std::max(std::abs(ref), floor);
  const double diff = std::abs(value - ref);
  const double rel = denom > 0 ? diff / denom : (diff == 0 ? 0.0 : std::numeric_limits<double>::max());
  ++t.checked;
  t.max_rel_err = std::max(t.max_rel_err, rel);
  if (rel > tolerance) {
    ++t.bad;
    const std::int64_t linear = (bb * s.m + i) * s.n + j;
    if (linear < t.first_bad) {
      t.first_bad = linear;
      t.first_bad_detail = element_name(bb, i, j, s.batch) + " = " + format_number(value) +
                           ", float64 reference " + format_number(ref) + " (relative error " +
                           format_number(rel) + ")";
    }
  }
}

// Every element must be finite: NaN is what an unwritten element (providers pre-fill C with NaN) or an
// overflow leaves behind. Linear in the output, so it is done even when values are only sampled.
template <class Ops>
std::string find_non_finite(const Ops& ops, const GemmShape& s) {
  std::mutex lock;
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), count = 0;
  double first_value = 0;
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, s.batch * s.m), [&](const auto& rows) {
    std::int64_t local_first = std::numeric_limits<std::int64_t>::max(), local_count = 0;
    double local_value = 0;
    for (std::int64_t row = rows.begin(); row != rows.end(); ++row) {
      const std::int64_t bb = row / s.m, i = row % s.m;
      for (std::int64_t j = 0; j < s.n; ++j) {
        const double v = ops.C(bb, i, j);
        if (!std::isfinite(v)) {
          if (local_count++ == 0) {
            local_first = row * s.n + j;
            local_value = v;
          }
        }
      }
    }
    if (local_count) {
      std::lock_guard<std::mutex> g(lock);
      count += local_count;
      if (local_first < first) {
        first = local_first;
        first_value = local_value;
      }
    }
  });
  if (!count) return {};
  const std::int64_t bb = first / (s.m * s.n), i = (first / s.n) % s.m, j = first % s.n;
  return std::to_string(count) + " non-finite output element(s), first " + element_name(bb, i, j, s.batch) +
         " = " + (std::isnan(first_value) ? "NaN" : format_number(first_value)) +
         " (unwritten, overflowed or garbage)";
}

template <class Ops>
VerifyResult verify_with(Ops& ops, const GemmShape& s, double tolerance, const VerifyOptions& opt) {
  if (!(tolerance > 0)) throw std::invalid_argument("verify_gemm: tolerance must be > 0");
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1)
    throw std::invalid_argument("verify_gemm: shape dimensions must be >= 1");

  VerifyResult result;
  const std::string non_finite = find_non_finite(ops, s);

  const double outputs = double(s.batch) * double(s.m) * double(s.n);
  const bool full = outputs <= double(opt.max_full_check_elements) &&
                    outputs * double(s.k) <= opt.max_full_check_work && ops.can_check_fully();
  std::mutex lock;
  Tally total;

  if (full) {
    for (std::int64_t bb = 0; bb < s.batch; ++bb) {
      ops.prepare_batch(bb);
      tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, s.m), [&](const auto& rows) {
        Tally t;
        std::vector<double> ref(static_cast<std::size_t>(s.n)), mag(static_cast<std::size_t>(s.n));
        for (std::int64_t i = rows.begin(); i != rows.end(); ++i) {
          ops.reference_row(bb, i, ref.data(), mag.data());
          for (std::int64_t j = 0; j < s.n; ++j) {
            const double v = ops.C(bb, i, j);
            if (std::isfinite(v)) check_element(t, v, ref[std::size_t(j)], mag[std::size_t(j)], s.k, tolerance, bb, i, j, s);
          }
        }
        std::lock_guard<std::mutex> g(lock);
        total.merge(t);
      });
    }
  } else {
    // The corners catch edge-tile bugs that a random sample of a large output might miss.
    struct Index { std::int64_t bb, i, j; };
    std::vector<Index> picks;
    for (std::int64_t bb : {std::int64_t(0), s.batch - 1})
      for (std::int64_t i : {std::int64_t(0), s.m - 1})
        for (std::int64_t j : {std::int64_t(0), s.n - 1}) picks.push_back({bb, i, j});
    for (int x = 0; x < opt.sample_count; ++x) {
      const std::uint64_t h = mix64(opt.seed ^ mix64(std::uint64_t(x)));
      const std::uint64_t h2 = mix64(h);
      picks.push_back({std::int64_t(h % std::uint64_t(s.batch)), std::int64_t((h >> 20) % std::uint64_t(s.m)),
                       std::int64_t(h2 % std::uint64_t(s.n))});
    }
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, picks.size(), 16), [&](const auto& r) {
      Tally t;
      for (std::size_t x = r.begin(); x != r.end(); ++x) {
        const auto [bb, i, j] = picks[x];
        double ref = 0, mag = 0;
        for (std::int64_t p = 0; p < s.k; ++p) {
          const double product = ops.A(bb, i, p) * ops.B(bb, p, j);
          ref += product;
          mag += std::abs(product);
        }
        const double v = ops.C(bb, i, j);
        if (std::isfinite(v)) check_element(t, v, ref, mag, s.k, tolerance, bb, i, j, s);
      }
      std::lock_guard<std::mutex> g(lock);
      total.merge(t);
    });
  }

  result.max_rel_err = total.max_rel_err;
  result.checked = total.checked;
  result.ok = non_finite.empty() && total.bad == 0;
  const std::string scope = full ? "all " + std::to_string(total.checked) + " elements"
                                 : std::to_string(total.checked) + " sampled elements";
  if (!non_finite.empty()) {
    result.detail = non_finite;
  } else if (total.bad > 0) {
    result.detail = std::to_string(total.bad) + " of " + scope + " exceed tolerance " + format_number(tolerance) +
                    "; first: " + total.first_bad_detail;
  } else {
    result.detail = "checked " + scope + " against float64; max relative error " +
                    format_number(total.max_rel_err) + " <= " + format_number(tolerance);
  }
  return result;
}

}  // namespace

VerifyResult verify_gemm(const GemmShape& shape, const float* a, const float* b, const float* c, double tolerance,
                         const VerifyOptions& options) {
  ArrayOperands<float> ops{a, b, c, shape.m, shape.n, shape.k};
  return verify_with(ops, shape, tolerance, options);
}

VerifyResult verify_gemm(const GemmShape& shape, const double* a, const double* b, const double* c,
                         double tolerance, const VerifyOptions& options) {
  ArrayOperands<double> ops{a, b, c, shape.m, shape.n, shape.k};
  return verify_with(ops, shape, tolerance, options);
}

VerifyResult verify_gemm(const GemmShape& shape, const ElementFn& a, const ElementFn& b, const ElementFn& c,
                         double tolerance, const VerifyOptions& options) {
  FunctionOperands ops{a, b, c, shape.m, shape.n, shape.k, {}};
  return verify_with(ops, shape, tolerance, options);
}

}  // namespace aispflow::kernels
