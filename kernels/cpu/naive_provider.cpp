// cpu.naive: the obviously-right GEMM. Every output row accumulates in float64, rows run in parallel on
// TBB; no blocking, no packing. Useful as a floor in comparisons and as a sanity check of the others.
#include <cstdio>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels/cpu/cpu_gemm_run.hpp"
#include "kernels/cpu/cpu_providers.hpp"

namespace aispflow::kernels {

namespace {

// C[i][j] = sum_p A[i][p] * B[p][j], summed in double. The p-then-j loop order walks B row by row,
// which is the straightforward way to keep the inner loop contiguous.
template <class T>
void naive_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m), [&](const tbb::blocked_range<std::int64_t>& rows) {
    std::vector<double> acc(static_cast<std::size_t>(n));
    for (std::int64_t i = rows.begin(); i != rows.end(); ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t p = 0; p < k; ++p) {
        const double aip = double(a[i * k + p]);
        const T* brow = b + p * n;
        for (std::int64_t j = 0; j < n; ++j) acc[std::size_t(j)] += aip * double(brow[j]);
      }
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = T(acc[std::size_t(j)]);
    }
  });
}

class NaiveProvider final : public GemmProvider {
 public:
  std::string name() const override { return "cpu.naive"; }

  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (auto why = unless_plain(name(), c)) return why;
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    if (dtype != "fp32" && dtype != "fp64")
      return dtype + " is not supported by cpu.naive (fp32 and fp64 only)";
    if (shape.flops() > kNaiveFlopLimit) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "above cpu.naive size limit (%.3g FLOP > %.3g FLOP)", shape.flops(),
                    kNaiveFlopLimit);
      return std::string(buf);
    }
    return cpu_memory_limit(shape, dtype);
  }

  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override {
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    const CpuGemmJob job{name(),
                         "cpu.naive float64-accumulating row loop, " + dtype + " in/out, threads=" +
                             std::to_string(tbb::this_task_arena::max_concurrency()) + " tbb",
                         shape, dtype, timing};
    const auto m = shape.m, n = shape.n, k = shape.k;
    if (dtype == "fp64")
      return {run_cpu_gemm(job, CpuGemmCall<double>([=](const double* a, const double* b, double* c) {
                             naive_gemm(m, n, k, a, b, c);
                           }))};
    return {run_cpu_gemm(job, CpuGemmCall<float>([=](const float* a, const float* b, float* c) {
                           naive_gemm(m, n, k, a, b, c);
                         }))};
  }
};

}  // namespace

std::unique_ptr<GemmProvider> make_naive_provider() { return std::make_unique<NaiveProvider>(); }

}  // namespace aispflow::kernels
