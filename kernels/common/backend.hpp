#pragma once
// The backend interface: what analysis nodes ask of the hardware. The CPU backend (kernels/cpu/) is
// always built and is the default where no GPU is found; the CUDA backend (kernels/cuda/) plugs into
// the same interface. A backend knows nothing of YAML or caching.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/gemm.hpp"
#include "kernels/common/gemm_plugin.hpp"
#include "pipeline/environment.hpp"

namespace aispflow::kernels {

using json = nlohmann::json;

// Options for the `peak` probes.
struct PeakOptions {
  double bandwidth_bytes = 0;        // array size per buffer; 0 = the backend picks (>> last-level cache)
  TimingPolicy timing;
  std::vector<std::string> dtypes;   // compute ceilings to measure; empty = the backend's default set
};

// One measured (or datasheet) ceiling: {"name": "hbm.copy", "kind": "memory"|"compute",
// "unit": "GB/s"|"TFLOP/s", "value": 3012.5, "method": "...", "dtype"?: "bf16", "source": "measured"|"datasheet",
// "time_ms"?: {...}, "samples"?: N}
using Ceiling = json;

class Backend : public Environment {
 public:
  // Every GEMM provider this build can offer on this machine, CPU ones included (a CUDA machine can
  // still sweep cpu.blocked). Providers whose requirements are unmet are listed too; they skip.
  virtual std::vector<std::string> provider_names() const = 0;
  // nullptr for an unknown name.
  virtual GemmProvider* provider(const std::string& name) = 0;
  // The provider that runs a loaded plugin's table (docs/plugins.md), made once per name; nullptr on a backend that
  // cannot run plugins (they enqueue CUDA work: the CPU backend cannot).
  virtual GemmProvider* plugin_provider(const GemmPluginProvider& /*entry*/) { return nullptr; }
  // What `providers: [auto]` means on this backend.
  virtual std::vector<std::string> auto_providers() const = 0;
  // Measured bandwidth and compute ceilings.
  virtual std::vector<Ceiling> measure_peaks(const PeakOptions& options) = 0;
  // Datasheet ceilings for the detected device, if known (empty otherwise).
  virtual std::vector<Ceiling> datasheet_ceilings() const { return {}; }
  // Full description of the machine for `aispflow hw` (superset of fingerprint()).
  virtual json hardware_info() const = 0;
  // The `alltoall` node's nccl transport (nodes/alltoall.cpp): runs `plan` ({warmup, iterations, ranks (0 =
  // every GPU), nccl_env, points: [{dtype, elem_bytes, elements, skew, ...}]}) with grouped ncclSend/ncclRecv
  // over the GPUs of this process. Returns {complete, ranks, nccl_version, points: [point + {wrong,
  // times_s?}]}. Backends without NCCL throw std::runtime_error with the reason.
  virtual json run_alltoall(const json& /*plan*/) {
    throw std::runtime_error("the nccl transport needs the CUDA backend with NCCL (backend " + backend_name() + ")");
  }
  // The `p2p` node (nodes/p2p.cpp): a verified copy of `bytes` for every ordered pair of GPUs and each GPU with
  // itself, by copy engine and by a kernel reading over the link. Returns {gpus, devices: [{index, name, uuid}],
  // links: [{from, to, peer_access, nvlink_links?}], pairs: [ceiling-like records p2p.<method>.<i>-><j>]}.
  virtual json measure_p2p(std::int64_t /*bytes*/, const TimingPolicy& /*timing*/) {
    throw std::runtime_error("the p2p node needs the CUDA backend and a GPU (backend " + backend_name() + ")");
  }
};

// The GPU GEMM providers aispflow knows, whether or not this build or machine can run them: workflow
// validation accepts these names everywhere, and a sweep on a machine without them records them as
// skipped with the reason instead of failing. The CUDA backend offers exactly these.
const std::vector<std::string>& gpu_provider_names();

// "auto" | "cpu" | "cuda". auto = cuda when built with CUDA and a GPU is present, else cpu.
// Throws std::invalid_argument with a clear message for an unknown or unavailable name.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Names this build can construct, for --help.
std::vector<std::string> available_backends();

}  // namespace aispflow::kernels
