// cpu.openblas: the system's OpenBLAS through CBLAS, the yardstick for cpu.blocked.
#include <cstdint>
#include <limits>

#include "kernels/cpu/cpu_gemm_run.hpp"
#include "kernels/cpu/cpu_providers.hpp"
#include "kernels/cpu/openblas.hpp"

namespace aispflow::kernels {

namespace {

std::string openblas_identity(const char* routine) {
  return std::string(routine) + " row-major NN, alpha=1 beta=0; " + openblas().describe();
}

class OpenBlasProvider final : public GemmProvider {
 public:
  std::string name() const override { return "cpu.openblas"; }

  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (auto why = unless_plain(name(), c)) return why;
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    if (!openblas().loaded()) return openblas().error;
    if (dtype != "fp32" && dtype != "fp64")
      return dtype + " is not supported by cpu.openblas (fp32 and fp64 only)";
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();   // CBLAS takes int dimensions
    if (shape.m > int_max || shape.n > int_max || shape.k > int_max)
      return "a dimension exceeds the int range of the CBLAS interface";
    return cpu_memory_limit(shape, dtype);
  }

  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override {
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    const int mi = int(shape.m), ni = int(shape.n), ki = int(shape.k);   // range checked in unsupported()
    if (dtype == "fp64") {
      const CpuGemmJob job{name(), openblas_identity("cblas_dgemm"), shape, dtype, timing};
      return {run_cpu_gemm(job, CpuGemmCall<double>([=](const double* a, const double* b, double* c) {
                             openblas().dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0, a, ki, b, ni,
                                         0.0, c, ni);
                           }))};
    }
    const CpuGemmJob job{name(), openblas_identity("cblas_sgemm"), shape, dtype, timing};
    return {run_cpu_gemm(job, CpuGemmCall<float>([=](const float* a, const float* b, float* c) {
                           openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni,
                                       0.0f, c, ni);
                         }))};
  }
};

}  // namespace

std::unique_ptr<GemmProvider> make_openblas_provider() { return std::make_unique<OpenBlasProvider>(); }

}  // namespace aispflow::kernels
