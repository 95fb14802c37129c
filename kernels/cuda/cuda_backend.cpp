// The CUDA backend: device layer + requirement checks (device.hpp), cuBLASLt providers, GPU peaks and
// datasheet figures behind the same kernels::Backend interface the CPU backend implements.
#include "kernels/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/common/fingerprint.hpp"
#include "kernels/cuda/alltoall_nccl.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cublaslt_provider.hpp"
#include "kernels/cuda/cutlass/cutlass_provider.hpp"
#include "kernels/cuda/cutlass/registry.hpp"
#include "kernels/cuda/grouped_providers.hpp"
#include "kernels/cuda/datasheet.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/nccl.hpp"
#include "kernels/cuda/nvml.hpp"
#include "kernels/cuda/ours/ours_provider.hpp"
#include "kernels/cuda/peaks.hpp"
#include "kernels/cuda/tensor_pipe.hpp"
#include "kernels/cuda/plugin_provider.hpp"

namespace aispflow::kernels {

namespace {

using cuda::DeviceInfo;
using cuda::GpuContext;

// Default size of each bandwidth array: 1 GiB (about 20x the L2 of an H100), less when memory is short.
std::size_t default_bandwidth_bytes() {
  std::size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return std::size_t(256) << 20;
  return std::min<std::size_t>(std::size_t(1) << 30, free_bytes / 8);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() : sys_(cuda::system_info()) {}

  std::string backend_name() const override { return "cuda"; }

  json fingerprint() const override {
    // The host part (CPU model, ISA, OS, compiler, build id) is shared with the CPU backend; GPU facts join it.
    json f = cpu_fingerprint();
    f["backend"] = "cuda";
    f["gpu_count"] = sys_.devices.size();
    if (!sys_.devices.empty()) {
      const DeviceInfo& d = sys_.devices.front();
      // One line per distinct property, so "environment changed" names exactly what differs.
      std::string gpus;
      for (const auto& dev : sys_.devices) gpus += (gpus.empty() ? "" : ", ") + dev.name;
      f["gpu"] = gpus;
      f["cc"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
      f["sm_count"] = d.sm_count;
    }
    f["driver"] = sys_.driver_version ? *sys_.driver_version
                                      : "CUDA driver API " + cuda::cuda_version_string(sys_.cuda_driver_version);
    f["cuda_runtime"] = cuda::cuda_version_string(sys_.cuda_runtime_version);
    f["cublaslt"] = cuda::cublaslt_version_string();
    return f;
  }

  int resource_total(const std::string& resource) const override {
    return resource == "gpu" ? int(sys_.devices.size()) : 0;
  }

  json measure_p2p(std::int64_t bytes, const TimingPolicy& timing) override {
    if (sys_.devices.empty()) throw std::runtime_error("no CUDA device: " + sys_.why_no_device);
    json devices = json::array(), links = json::array();
    for (const auto& d : sys_.devices) devices.push_back({{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}});
    for (const auto& l : sys_.links) {
      json link = {{"from", l.from}, {"to", l.to}, {"peer_access", l.peer_access}};
      if (l.nvlink_links) link["nvlink_links"] = *l.nvlink_links;
      links.push_back(link);
    }
    json pairs = json::array();
    for (auto& c : cuda::measure_p2p(std::size_t(bytes), timing, /*include_local=*/true)) pairs.push_back(std::move(c));
    return {{"gpus", sys_.devices.size()}, {"devices", devices}, {"links", links}, {"pairs", pairs}};
  }

  // Every GPU this process sees (CUDA_VISIBLE_DEVICES narrows it), by UUID: the same GPU has the same name in
  // every process whatever its index there. CPU providers swept on this backend are not locked against a CPU
  // run (docs/cli.md, "Measurement lock").
  std::vector<std::string> measured_devices() const override {
    std::vector<std::string> ids;
    for (const auto& d : sys_.devices) ids.push_back("gpu-" + (d.uuid.empty() ? d.pci_bus_id : d.uuid));
    return ids;
  }

  std::optional<std::string> unmet(const Requirements& req) const override {
    return cuda::unmet_reason(sys_.devices, sys_.links, req);
  }

  std::vector<std::string> provider_names() const override {
    std::vector<std::string> names = gpu_provider_names();
    for (const auto& n : cpu_provider_names()) names.push_back(n);
    return names;
  }

  GemmProvider* provider(const std::string& name) override {
    std::lock_guard lock(mutex_);
    if (auto it = providers_.find(name); it != providers_.end()) return it->second.get();
    std::unique_ptr<GemmProvider> p = make_cuda_gemm_provider(name, [this]() -> GpuContext& { return context(0); });
    if (!p) return nullptr;
    return (providers_[name] = std::move(p)).get();
  }

  GemmProvider* plugin_provider(const GemmPluginProvider& entry) override {
    std::lock_guard lock(mutex_);
    auto& slot = plugin_providers_[entry.name];
    if (!slot) slot = std::make_unique<cuda::PluginGemmProvider>(entry, [this]() -> GpuContext& { return context(0); });
    return slot.get();
  }

  std::vector<std::string> auto_providers() const override { return {"cublaslt", "cublaslt.sweep"}; }

  std::vector<Ceiling> measure_peaks(const PeakOptions& options) override {
    if (sys_.devices.empty()) throw std::runtime_error("no CUDA device: " + sys_.why_no_device);
    GpuContext& ctx = context(0);
    std::vector<Ceiling> out;
    {
      std::lock_guard busy(ctx.busy());
      cuda::ScopedDevice on(ctx.device());
      const std::size_t bytes =
          options.bandwidth_bytes > 0 ? std::size_t(options.bandwidth_bytes) : default_bandwidth_bytes();
      for (auto& c : cuda::measure_bandwidth(ctx.harness(), bytes, options.timing)) out.push_back(std::move(c));
      // The levels of the GPU roofline above HBM: L2 (a working set inside it) and shared memory.
      const long long l2 = sys_.devices[std::size_t(ctx.device())].l2_bytes;
      if (l2 > 0)
        out.push_back(cuda::measure_l2_read(ctx.harness(), std::size_t(l2), options.timing));
      else
        out.push_back({{"name", "l2.read"}, {"kind", "memory"}, {"level", "l2"}, {"unit", "GB/s"}, {"source", "measured"},
                       {"status", "not measured"}, {"reason", "the device reports no L2 size"}});
      out.push_back(cuda::measure_smem_read(ctx.harness(), options.timing));
      out.push_back(cuda::measure_fp32_fma(ctx.harness(), options.timing));
    }
    const std::vector<std::string> dtypes =
        options.dtypes.empty() ? std::vector<std::string>{"bf16", "fp16", "tf32", "fp8_e4m3"} : options.dtypes;
    for (const auto& dtype : dtypes) {
      if (dtype == "fp32") continue;   // the FMA kernel above is the fp32 ceiling of the CUDA cores
      // The roof: the tensor pipe alone (wgmma on on-chip operands, the clock recorded).
      {
        std::lock_guard busy(ctx.busy());
        out.push_back(cuda::measure_tensor_pipe(ctx.harness(), sys_.devices[std::size_t(ctx.device())], dtype,
                                                options.timing));
      }
      // Beside it, what the vendor library achieves on a large GEMM (8192^3: large enough to fill the chip and
      // reach the tensor cores' steady state): an achieved reference, which the roofline does not draw as a roof.
      std::string why;
      if (auto c = cuda::measure_gemm_ceiling([&]() -> GpuContext& { return ctx; }, dtype, 8192, options.timing, &why))
        out.push_back(std::move(*c));
      else   // no number, but the reason stays visible in the artifact (consumers skip entries without a value)
        out.push_back({{"name", "gemm." + dtype}, {"kind", "achieved"}, {"unit", "TFLOP/s"}, {"dtype", dtype},
                       {"source", "measured"}, {"status", "not measured"}, {"reason", why}});
    }
    if (sys_.devices.size() >= 2)
      for (auto& c : cuda::measure_p2p(std::size_t(256) << 20, options.timing)) out.push_back(std::move(c));
    return out;
  }

  json run_alltoall(const json& plan) override {
    if (sys_.devices.empty()) throw std::runtime_error("no CUDA device: " + sys_.why_no_device);
    return cuda::run_alltoall_nccl(plan);
  }

  std::vector<Ceiling> datasheet_ceilings() const override {
    if (sys_.devices.empty()) return {};
    return cuda::datasheet_ceilings_for(sys_.devices.front().name);
  }

  json hardware_info() const override {
    json info = sys_.to_json();
    info["backend"] = "cuda";
    info["cublaslt"] = cuda::cublaslt_version_string();
    // Not part of the fingerprint: no GEMM or bandwidth figure depends on it, and an NCCL upgrade must not
    // re-run them. The collective probes put the version they used into their own records.
    const auto& nccl = cuda::Nccl::instance();
    info["nccl"] = nccl.available() ? json{{"version", *nccl.version()}, {"built_against", cuda::Nccl::header_version()}}
                                    : json{{"unavailable", nccl.why_unavailable()}};
    info["cutlass"] = cuda::cutlass_build_info();   // version, include path, instances compiled per architecture
    info["host"] = cpu_hardware_info();
    info["fingerprint"] = fingerprint();
    const auto& nvml = cuda::Nvml::instance();
    for (auto& d : info["devices"]) {
      const std::string bus = d.value("pci_bus_id", "");
      if (auto now = nvml.clocks(bus)) d["clocks_now"] = now->to_json();
      if (auto max = nvml.max_clocks(bus)) d["clocks_max"] = {{"sm_mhz", max->sm_mhz}, {"mem_mhz", max->mem_mhz}};
    }
    info["datasheet"] = datasheet_ceilings();
    return info;
  }

 private:
  GpuContext& context(int device) {
    std::lock_guard lock(context_mutex_);
    auto& slot = contexts_[device];
    if (!slot) slot = std::make_unique<GpuContext>(device);
    return *slot;
  }

  const cuda::SystemInfo& sys_;
  std::mutex mutex_;           // providers_
  std::mutex context_mutex_;   // contexts_
  std::map<std::string, std::unique_ptr<GemmProvider>> providers_;
  std::map<std::string, std::unique_ptr<GemmProvider>> plugin_providers_;   // by plugin provider name
  std::map<int, std::unique_ptr<GpuContext>> contexts_;
};

}  // namespace

std::unique_ptr<GemmProvider> make_cuda_gemm_provider(const std::string& name,
                                                      std::function<cuda::GpuContext&()> context) {
  if (name == "cublaslt" || name == "cublaslt.sweep")
    return std::make_unique<cuda::CublasLtProvider>(context, name == "cublaslt.sweep");
  if (name == "cutlass" || name == "cutlass.select")
    return std::make_unique<cuda::CutlassProvider>(context, name == "cutlass.select");
  if (const auto& g = cuda::grouped_provider_names(); std::find(g.begin(), g.end(), name) != g.end())
    return cuda::make_grouped_provider(cuda::GroupedMethod(std::find(g.begin(), g.end(), name) - g.begin()), context);
  if (auto ours = cuda::make_ours_provider(name, context)) return ours;
  return make_cpu_provider(name);
}

bool cuda_device_available(std::string* why_not) {
  const auto& sys = cuda::system_info();
  if (!sys.devices.empty()) return true;
  if (why_not) *why_not = sys.why_no_device;
  return false;
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace aispflow::kernels
