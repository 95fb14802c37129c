// The CPU backend: always built, the default where no GPU is found, and what CI runs on.
#include "kernels/cpu/cpu_backend.hpp"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

#include "kernels/common/fingerprint.hpp"
#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_providers.hpp"
#include "kernels/cpu/openblas.hpp"
#include "kernels/cpu/probes.hpp"


namespace aispflow::kernels {

std::vector<std::string> cpu_provider_names() { return {"cpu.blocked", "cpu.openblas", "cpu.naive"}; }

std::unique_ptr<GemmProvider> make_cpu_provider(const std::string& name) {
  if (name == "cpu.naive") return make_naive_provider();
  if (name == "cpu.blocked") return make_blocked_provider();
  if (name == "cpu.openblas") return make_openblas_provider();
  return nullptr;
}

namespace {

// "tcgen05", "sm_90+", "2 GPUs with 80 GiB": what a GPU requirement was for, for the skip reason.
std::string describe_gpu_need(const Requirements& req) {
  if (!req.why.empty()) return req.why;
  std::string why;
  auto add = [&](const std::string& part) { why += (why.empty() ? "" : ", ") + part; };
  if (req.min_compute_capability > 0) add("sm_" + std::to_string(req.min_compute_capability) + "+");
  for (const auto& f : req.features) add(f);
  if (req.min_gpu_memory_gib > 0) add(std::to_string(int(req.min_gpu_memory_gib)) + " GiB of GPU memory");
  return why;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    for (const auto& name : cpu_provider_names()) providers_[name] = make_cpu_provider(name);
  }

  std::string backend_name() const override { return "cpu"; }
  json fingerprint() const override { return cpu_fingerprint(); }

  int resource_total(const std::string& resource) const override {
    if (resource == "cpu") return int(std::max(1u, std::thread::hardware_concurrency()));
    return 0;   // "gpu" and anything unknown: none here
  }

  // The host's CPU as a whole: a CPU measurement is disturbed by any other one on the same machine.
  std::vector<std::string> measured_devices() const override {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::snprintf(host, sizeof host, "localhost");
    return {std::string("cpu-") + host};
  }

  std::optional<std::string> unmet(const Requirements& req) const override {
    const bool needs_gpu = req.gpus > 0 || req.min_compute_capability > 0 || !req.features.empty() ||
                           req.min_gpu_memory_gib > 0;
    if (!needs_gpu) return std::nullopt;
    const int count = std::max(1, req.gpus);
    const std::string why = describe_gpu_need(req);
    return "requires " + std::to_string(count) + " GPU(s)" + (why.empty() ? "" : " (" + why + ")") +
           "; found none on this machine (cpu backend)";
  }

  std::vector<std::string> provider_names() const override { return cpu_provider_names(); }
  GemmProvider* provider(const std::string& name) override {
    auto it = providers_.find(name);
    return it == providers_.end() ? nullptr : it->second.get();
  }
  // cpu.naive is listed but not automatic: it is a reference, and slow by design.
  std::vector<std::string> auto_providers() const override { return {"cpu.blocked", "cpu.openblas"}; }

  std::vector<Ceiling> measure_peaks(const PeakOptions& options) override {
    const std::vector<std::string> dtypes =
        options.dtypes.empty() ? std::vector<std::string>{"fp32", "fp64"} : options.dtypes;
    for (const auto& d : dtypes)   // refuse before spending minutes on bandwidth
      if (d != "fp32" && d != "fp64")
        throw std::invalid_argument("the cpu backend has no compute probe for dtype '" + d +
                                    "' (it measures fp32 and fp64)");
    std::vector<Ceiling> out = measure_cpu_bandwidth(std::int64_t(options.bandwidth_bytes), options.timing);
    for (const auto& d : dtypes) out.push_back(measure_cpu_fma(d, options.timing));
    return out;
  }

  json hardware_info() const override {
    json info = cpu_hardware_info();
    info["backend"] = "cpu";
    info["gpus"] = json::array();
    info["openblas"] = openblas().describe();
    info["blocked_gemm"] = blocked_gemm_identity(resolve_blocked_config(), int(std::thread::hardware_concurrency()));
    info["default_bandwidth_array_bytes"] = default_bandwidth_array_bytes();
    return info;
  }

 private:
  std::map<std::string, std::unique_ptr<GemmProvider>> providers_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace aispflow::kernels
