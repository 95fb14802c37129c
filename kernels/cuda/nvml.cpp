#include "kernels/cuda/nvml.hpp"

#include "kernels/cuda/shared_library.hpp"

namespace aispflow::kernels::cuda {

namespace {
// Our own minimal declarations of the documented NVML C API (nvml.h is not installed on build machines).
using nvmlReturn_t = int;                 // NVML_SUCCESS == 0
using nvmlDevice_t = struct NvmlDeviceOpaque*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;           // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;          // NVML_CLOCK_MEM
constexpr int kNvmlTemperatureGpu = 0;    // NVML_TEMPERATURE_GPU
constexpr int kNvmlFeatureEnabled = 1;    // NVML_FEATURE_ENABLED
constexpr unsigned kNvmlMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS on Hopper-era drivers
// nvmlPciInfo_t (v2 layout, unchanged since NVML 10): legacy 16-byte bus id, numeric location, 32-byte bus id.
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

// Bit positions of nvmlClocksEventReasons (formerly ClocksThrottleReasons); the names are ours.
struct ReasonBit {
  unsigned long long bit;
  const char* name;
  bool slows_chip;
};
constexpr ReasonBit kReasonBits[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};
}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*system_driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*handle_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned, NvmlPciInfo*) = nullptr;
};

nlohmann::json ClockReading::to_json() const {
  nlohmann::json j = {{"sm_mhz", sm_mhz}, {"mem_mhz", mem_mhz}, {"reasons", clock_event_reason_names(event_reasons)}};
  if (temperature_c) j["temperature_c"] = *temperature_c;
  if (power_w) j["power_w"] = *power_w;
  return j;
}

std::vector<std::string> clock_event_reason_names(unsigned long long mask) {
  std::vector<std::string> names;
  for (const auto& r : kReasonBits)
    if (mask & r.bit) names.emplace_back(r.name);
  return names;
}

bool reasons_slow_the_chip(unsigned long long mask) {
  for (const auto& r : kReasonBits)
    if (r.slows_chip && (mask & r.bit)) return true;
  return false;
}

const Nvml& Nvml::instance() {
  static const Nvml nvml;   // C++ guarantees thread-safe initialisation of function-local statics
  return nvml;
}

Nvml::Nvml() {
  library_ = open_shared_library("libnvidia-ml.so.1", "NVML", why_);
  if (!library_) return;
  api_ = new Api;
  load_symbol(library_, "nvmlInit_v2", api_->init);
  load_symbol(library_, "nvmlShutdown", api_->shutdown);
  load_symbol(library_, "nvmlErrorString", api_->error_string);
  load_symbol(library_, "nvmlSystemGetDriverVersion", api_->system_driver_version);
  load_symbol(library_, "nvmlDeviceGetHandleByPciBusId_v2", api_->handle_by_pci_bus_id);
  load_symbol(library_, "nvmlDeviceGetClockInfo", api_->clock_info);
  load_symbol(library_, "nvmlDeviceGetMaxClockInfo", api_->max_clock_info);
  // Renamed in driver 535; the old name stays exported for compatibility. Prefer the new one.
  load_symbol(library_, "nvmlDeviceGetCurrentClocksEventReasons", api_->clock_event_reasons);
  if (!api_->clock_event_reasons)
    load_symbol(library_, "nvmlDeviceGetCurrentClocksThrottleReasons", api_->clock_event_reasons);
  load_symbol(library_, "nvmlDeviceGetTemperature", api_->temperature);
  load_symbol(library_, "nvmlDeviceGetPowerUsage", api_->power_usage);
  load_symbol(library_, "nvmlDeviceGetNvLinkState", api_->nvlink_state);
  load_symbol(library_, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api_->nvlink_remote_pci);
  if (!api_->init || !api_->handle_by_pci_bus_id) {
    why_ = "NVML library lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2";
    return;
  }
  const nvmlReturn_t rc = api_->init();
  if (rc != kNvmlSuccess) {
    why_ = std::string("nvmlInit_v2 failed: ") + (api_->error_string ? api_->error_string(rc) : std::to_string(rc));
    return;
  }
  available_ = true;
}

Nvml::~Nvml() {
  if (available_ && api_->shutdown) api_->shutdown();
  delete api_;
  // The library is left loaded: this runs at process exit, when unloading buys nothing.
}

void* Nvml::device_handle(const std::string& pci_bus_id) const {
  if (!available_) return nullptr;
  nvmlDevice_t device = nullptr;
  if (api_->handle_by_pci_bus_id(pci_bus_id.c_str(), &device) != kNvmlSuccess) return nullptr;
  return device;
}

std::optional<std::string> Nvml::driver_version() const {
  if (!available_ || !api_->system_driver_version) return std::nullopt;
  char buffer[96] = {};
  if (api_->system_driver_version(buffer, sizeof buffer) != kNvmlSuccess) return std::nullopt;
  return std::string(buffer);
}

std::optional<ClockReading> Nvml::clocks(const std::string& pci_bus_id) const {
  auto device = static_cast<nvmlDevice_t>(device_handle(pci_bus_id));
  if (!device || !api_->clock_info) return std::nullopt;
  ClockReading r;
  if (api_->clock_info(device, kNvmlClockSm, &r.sm_mhz) != kNvmlSuccess) return std::nullopt;
  if (api_->clock_info(device, kNvmlClockMem, &r.mem_mhz) != kNvmlSuccess) return std::nullopt;
  if (api_->clock_event_reasons) api_->clock_event_reasons(device, &r.event_reasons);
  unsigned value = 0;
  if (api_->temperature && api_->temperature(device, kNvmlTemperatureGpu, &value) == kNvmlSuccess)
    r.temperature_c = value;
  if (api_->power_usage && api_->power_usage(device, &value) == kNvmlSuccess) r.power_w = value / 1000.0;
  return r;
}

std::optional<ClockReading> Nvml::max_clocks(const std::string& pci_bus_id) const {
  auto device = static_cast<nvmlDevice_t>(device_handle(pci_bus_id));
  if (!device || !api_->max_clock_info) return std::nullopt;
  ClockReading r;
  if (api_->max_clock_info(device, kNvmlClockSm, &r.sm_mhz) != kNvmlSuccess) return std::nullopt;
  if (api_->max_clock_info(device, kNvmlClockMem, &r.mem_mhz) != kNvmlSuccess) return std::nullopt;
  return r;
}

std::optional<std::vector<PciLocation>> Nvml::nvlink_peers(const std::string& pci_bus_id) const {
  auto device = static_cast<nvmlDevice_t>(device_handle(pci_bus_id));
  if (!device || !api_->nvlink_state || !api_->nvlink_remote_pci) return std::nullopt;
  std::vector<PciLocation> peers;
  for (unsigned link = 0; link < kNvmlMaxNvLinks; ++link) {
    int state = 0;
    // A GPU without NVLink (or a link index past its count) answers NOT_SUPPORTED / INVALID_ARGUMENT.
    if (api_->nvlink_state(device, link, &state) != kNvmlSuccess || state != kNvmlFeatureEnabled) continue;
    NvmlPciInfo pci{};
    if (api_->nvlink_remote_pci(device, link, &pci) != kNvmlSuccess) continue;
    peers.push_back({pci.domain, pci.bus, pci.device});
  }
  return peers;
}

}  // namespace aispflow::kernels::cuda
