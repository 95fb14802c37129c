#include "kernels/cuda/device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "kernels/cuda/nvml.hpp"

namespace aispflow::kernels::cuda {

nlohmann::json DeviceInfo::to_json() const {
  return {{"index", index},
          {"name", name},
          {"compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
          {"sm", "sm_" + std::to_string(compute_capability())},
          {"sm_count", sm_count},
          {"memory_gib", std::round(memory_gib * 100) / 100},
          {"l2_bytes", l2_bytes},
          {"memory_bus_bits", memory_bus_bits},
          {"max_sm_clock_mhz", max_sm_clock_mhz},
          {"max_mem_clock_mhz", max_mem_clock_mhz},
          {"pci_bus_id", pci_bus_id},
          {"uuid", uuid}};
}

namespace {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", nvidia-smi's spelling of the 16 bytes.
std::string uuid_string(const cudaUUID_t& id) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(id.bytes[i]));
    out += hex;
  }
  return out;
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

nlohmann::json SystemInfo::to_json() const {
  nlohmann::json j;
  j["devices"] = nlohmann::json::array();
  for (const auto& d : devices) j["devices"].push_back(d.to_json());
  j["peers"] = nlohmann::json::array();
  for (const auto& l : links) {
    nlohmann::json p = {{"from", l.from}, {"to", l.to}, {"peer_access", l.peer_access}};
    if (l.nvlink_links) p["nvlink_links"] = *l.nvlink_links;
    j["peers"].push_back(p);
  }
  j["cuda_driver_api"] = cuda_version_string(cuda_driver_version);
  j["cuda_runtime"] = cuda_version_string(cuda_runtime_version);
  if (driver_version) j["driver"] = *driver_version;
  if (!nvml_note.empty()) j["nvml_note"] = nvml_note;
  if (!why_no_device.empty()) j["why_no_device"] = why_no_device;
  return j;
}

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) return 0;
  return value;
}

SystemInfo query_system() {
  SystemInfo info;
  cudaDriverGetVersion(&info.cuda_driver_version);
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    info.why_no_device = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();   // clear the error so later calls are not poisoned by it
    count = 0;
  } else if (count == 0) {
    info.why_no_device = "the CUDA runtime reports 0 devices";
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.sm_count = prop.multiProcessorCount;
    d.memory_gib = double(prop.totalGlobalMem) / double(1ull << 30);
    d.l2_bytes = prop.l2CacheSize;
    d.memory_bus_bits = prop.memoryBusWidth;
    d.max_sm_clock_mhz = attribute(cudaDevAttrClockRate, i) / 1000;
    d.max_mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, i) / 1000;
    d.pci_domain = unsigned(prop.pciDomainID);
    d.pci_bus = unsigned(prop.pciBusID);
    d.pci_device = unsigned(prop.pciDeviceID);
    d.uuid = uuid_string(prop.uuid);
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, i) == cudaSuccess) d.pci_bus_id = bus_id;
    info.devices.push_back(d);
  }

  const Nvml& nvml = Nvml::instance();
  if (!nvml.available()) info.nvml_note = nvml.why_unavailable();
  info.driver_version = nvml.driver_version();

  // NVLink links per ordered pair: count the active links of `from` whose remote end is `to`.
  std::vector<std::optional<std::vector<PciLocation>>> remote(info.devices.size());
  for (std::size_t i = 0; i < info.devices.size(); ++i) remote[i] = nvml.nvlink_peers(info.devices[i].pci_bus_id);
  for (const auto& from : info.devices) {
    for (const auto& to : info.devices) {
      if (from.index == to.index) continue;
      PeerLink link;
      link.from = from.index;
      link.to = to.index;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, from.index, to.index) == cudaSuccess) link.peer_access = can != 0;
      if (const auto& peers = remote[std::size_t(from.index)]) {
        const PciLocation target{to.pci_domain, to.pci_bus, to.pci_device};
        link.nvlink_links = int(std::count(peers->begin(), peers->end(), target));
      }
      info.links.push_back(link);
    }
  }
  return info;
}

std::string plural_gpus(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

std::string sm_name(int cc) { return "sm_" + std::to_string(cc); }

std::string format_gib(double gib) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", gib);
  return buffer;
}

// What each feature needs: a compute capability range [min_cc, max_cc] and a note for the reason text.
struct FeatureRule {
  const char* name;
  int min_cc;
  int max_cc;   // inclusive; features that exist on one generation only have a bound here
};
// tma (bulk tensor copies) and thread-block clusters arrived with Hopper and stay; wgmma is Hopper's
// warpgroup MMA and is absent from Blackwell; tcgen05 is the Blackwell datacenter (sm_100 family) MMA.
constexpr FeatureRule kFeatureRules[] = {
    {"tma", 90, 1000}, {"cluster", 90, 1000}, {"wgmma", 90, 90}, {"tcgen05", 100, 119}};

}  // namespace

const SystemInfo& system_info() {
  static const SystemInfo info = query_system();
  return info;
}

std::optional<std::string> unmet_reason(const std::vector<DeviceInfo>& devices, const std::vector<PeerLink>& links,
                                        const Requirements& req) {
  const std::string purpose = req.why.empty() ? "" : " (" + req.why + ")";
  const bool needs_device = req.min_compute_capability > 0 || !req.features.empty() || req.min_gpu_memory_gib > 0;
  const int needed = std::max(req.gpus, needs_device ? 1 : 0);
  if (int(devices.size()) < needed)
    return "requires " + plural_gpus(needed) + purpose + "; found " + std::to_string(devices.size());

  // The devices a node would run on: the first `needed` ones (the scheduler hands out the rest alike).
  const std::vector<DeviceInfo> used(devices.begin(), devices.begin() + needed);
  for (const auto& d : used) {
    const std::string on = " on " + d.name;
    if (d.compute_capability() < req.min_compute_capability)
      return "requires " + sm_name(req.min_compute_capability) + purpose + "; found " + sm_name(d.compute_capability()) +
             on;
    for (const auto& feature : req.features) {
      if (feature == "nvlink") continue;   // a property of pairs, checked below
      const FeatureRule* rule = nullptr;
      for (const auto& r : kFeatureRules)
        if (feature == r.name) rule = &r;
      if (!rule) return "requires unknown feature '" + feature + "' (known: tma, cluster, wgmma, tcgen05, nvlink)";
      const int cc = d.compute_capability();
      if (cc < rule->min_cc)
        return "requires " + sm_name(rule->min_cc) + " (" + feature + "); found " + sm_name(cc) + on;
      if (cc > rule->max_cc)
        return "requires " + sm_name(rule->min_cc) + " (" + feature + ", which " + sm_name(cc) + " lacks); found " +
               sm_name(cc) + on;
    }
    if (req.min_gpu_memory_gib > 0 && d.memory_gib < req.min_gpu_memory_gib)
      return "requires " + format_gib(req.min_gpu_memory_gib) + " GiB of GPU memory" + purpose + "; found " +
             format_gib(d.memory_gib) + " GiB" + on;
  }

  if (std::find(req.features.begin(), req.features.end(), "nvlink") != req.features.end()) {
    if (used.size() < 2)
      return "requires nvlink (an active NVLink link between GPUs)" + purpose + "; found " +
             plural_gpus(int(devices.size())) + (devices.empty() ? "" : " (" + devices.front().name + ")");
    for (const auto& a : used)
      for (const auto& b : used) {
        if (a.index >= b.index) continue;
        auto it = std::find_if(links.begin(), links.end(),
                               [&](const PeerLink& l) { return l.from == a.index && l.to == b.index; });
        if (it == links.end() || !it->nvlink_links)
          return "requires nvlink" + purpose + "; NVML cannot report NVLink state between GPU " +
                 std::to_string(a.index) + " and GPU " + std::to_string(b.index);
        if (*it->nvlink_links == 0)
          return "requires nvlink" + purpose + "; found no active NVLink link between GPU " + std::to_string(a.index) +
                 " and GPU " + std::to_string(b.index) + " (" + a.name + ")";
      }
  }
  return std::nullopt;
}

}  // namespace aispflow::kernels::cuda
