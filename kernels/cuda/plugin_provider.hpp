#pragma once
// A GEMM provider from a plugin (include/aispflow/provider.h, docs/plugins.md), run exactly as aispflow's own
// providers are: aispflow makes the problem (random operands, bias, scales, fp32 reference) with guard bytes around
// every copy of C, hands the plugin's configurations to the one candidate search (verify each, screen, time the
// finalists interleaved with the shared harness), and checks the guards again after timing. A non-zero return
// code, a wrong element or a write outside C is a `failed` record without a timing. Options (provider_options):
//   config: "<name>"   run this configuration
//   autotune: true     every configuration whose check() accepts the case goes through the search
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/common/gemm_plugin.hpp"
#include "kernels/cuda/context.hpp"

namespace aispflow::kernels::cuda {

class PluginGemmProvider final : public GemmProvider {
 public:
  // Bytes of guard before and after each copy of C.
  static constexpr std::size_t kGuardBytes = std::size_t(64) << 10;

  PluginGemmProvider(GemmPluginProvider entry, std::function<GpuContext&()> context);
  std::string name() const override { return entry_.name; }
  Requirements requirements() const override;
  std::string check_options(const json& options) const override;
  std::optional<std::string> unsupported(const GemmCase& c) const override;
  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override;

 private:
  // The configurations a case runs (indices into the plugin's table): the named one, every one that fits
  // (autotune), or the plugin's default. Empty when none fits; `why` then says why the default declined.
  std::vector<int> chosen(const GemmCase& c, const aispflow_gemm_case_v1_t& gemm, std::string* why) const;
  std::string run_error(int code) const;

  GemmPluginProvider entry_;
  std::function<GpuContext&()> context_;
};

}  // namespace aispflow::kernels::cuda
