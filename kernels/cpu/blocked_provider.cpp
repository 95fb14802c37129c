// cpu.blocked: aispflow's own fp32 GEMM (blocked_gemm.hpp) behind the provider interface.
#include <tbb/task_arena.h>

#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_gemm_run.hpp"
#include "kernels/cpu/cpu_providers.hpp"

namespace aispflow::kernels {

namespace {

class BlockedProvider final : public GemmProvider {
 public:
  std::string name() const override { return "cpu.blocked"; }

  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (auto why = unless_plain(name(), c)) return why;
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    if (dtype != "fp32") return dtype + " is not supported by cpu.blocked (fp32 only)";
    return cpu_memory_limit(shape, dtype);
  }

  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override {
    const GemmShape& shape = c.shape;
    const std::string& dtype = c.dtype;
    const BlockedGemmConfig config = resolve_blocked_config();
    const CpuGemmJob job{name(), blocked_gemm_identity(config, tbb::this_task_arena::max_concurrency(), shape.m),
                         shape, dtype, timing};
    const auto m = shape.m, n = shape.n, k = shape.k;
    return {run_cpu_gemm(job, CpuGemmCall<float>([=](const float* a, const float* b, float* c) {
                           blocked_sgemm(m, n, k, a, k, b, n, c, n, config);
                         }))};
  }
};

}  // namespace

std::unique_ptr<GemmProvider> make_blocked_provider() { return std::make_unique<BlockedProvider>(); }

}  // namespace aispflow::kernels
