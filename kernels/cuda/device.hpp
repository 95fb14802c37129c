#pragma once
// The device layer: what the CUDA runtime and NVML say about every visible GPU, the links between
// them, and the requirement check that turns a node's or provider's needs into an exact skip reason.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/environment.hpp"

namespace aispflow::kernels::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;                 // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double memory_gib = 0;            // total global memory
  long long l2_bytes = 0;
  int memory_bus_bits = 0;
  int max_sm_clock_mhz = 0;         // from the runtime (cudaDevAttrClockRate)
  int max_mem_clock_mhz = 0;        // from the runtime (cudaDevAttrMemoryClockRate)
  std::string pci_bus_id;           // "0000:18:00.0", the key NVML is asked by
  std::string uuid;                 // "GPU-8f2c...", as nvidia-smi -L prints it: the measurement lock's name
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0;
  int compute_capability() const { return cc_major * 10 + cc_minor; }   // 90 for sm_90
  nlohmann::json to_json() const;
};

// A directed pair of GPUs: can `from` read/write `to`'s memory directly, and over how many NVLink links.
struct PeerLink {
  int from = 0, to = 0;
  bool peer_access = false;
  std::optional<int> nvlink_links;   // absent when NVML cannot tell
};

struct SystemInfo {
  std::vector<DeviceInfo> devices;
  std::vector<PeerLink> links;       // every ordered pair (from != to)
  int cuda_driver_version = 0;       // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime_version = 0;      // cudaRuntimeGetVersion
  std::optional<std::string> driver_version;   // NVML's "580.159.04"
  std::string nvml_note;                       // why NVML fields are absent (empty when available)
  std::string why_no_device;                   // set when devices is empty
  nlohmann::json to_json() const;
};

// Queries the runtime and NVML once per process (the result is cached; devices do not change under us).
const SystemInfo& system_info();

// "13.0" for 13000.
std::string cuda_version_string(int version);

// The exact reason `req` cannot be met on `devices`, or nullopt. Pure function of its inputs so it can
// be tested without a GPU. Examples:
//   "requires 2 GPUs; found 1"
//   "requires sm_100 (tcgen05); found sm_90 on NVIDIA H100 80GB HBM3"
//   "requires nvlink (an active NVLink link between the GPUs); found none between NVIDIA H100 ... GPUs"
std::optional<std::string> unmet_reason(const std::vector<DeviceInfo>& devices, const std::vector<PeerLink>& links,
                                        const Requirements& req);

}  // namespace aispflow::kernels::cuda
