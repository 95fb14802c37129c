#pragma once
// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"). No NVML header or stub library is needed to
// build: we declare the few documented functions we call ourselves (nvml.cpp). When the library or a
// function is missing (a container without the driver's NVML, an old driver), the fields it would fill
// are absent and why_unavailable() says why; nothing crashes.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::kernels::cuda {

// One reading of a GPU's clocks and of the reasons the driver holds them down.
struct ClockReading {
  unsigned sm_mhz = 0;
  unsigned mem_mhz = 0;
  unsigned long long event_reasons = 0;   // NVML clocks event ("throttle") reason bit mask
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  nlohmann::json to_json() const;         // {"sm_mhz","mem_mhz","reasons":[names],"temperature_c"?,"power_w"?}
};

// Names of the bits set in an NVML clocks-event-reason mask ("sw_power_cap", "hw_thermal_slowdown", ...).
std::vector<std::string> clock_event_reason_names(unsigned long long mask);
// The subset of reasons that mean the chip is slowed below what it would otherwise run at
// (power cap, thermal, hardware slowdown); idle and application-clock settings are not such reasons.
bool reasons_slow_the_chip(unsigned long long mask);

// A PCI location as CUDA and NVML both report it.
struct PciLocation {
  unsigned domain = 0, bus = 0, device = 0;
  bool operator==(const PciLocation&) const = default;
};

class Nvml {
 public:
  // The process-wide instance; loads and initialises NVML on first use (thread-safe).
  static const Nvml& instance();

  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }

  std::optional<std::string> driver_version() const;                       // "580.159.04"
  std::optional<ClockReading> clocks(const std::string& pci_bus_id) const;   // current clocks + reasons
  std::optional<ClockReading> max_clocks(const std::string& pci_bus_id) const;
  // Remote end of every active NVLink link of this GPU (one entry per link), nullopt when NVML cannot say.
  std::optional<std::vector<PciLocation>> nvlink_peers(const std::string& pci_bus_id) const;

  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

 private:
  Nvml();
  void* device_handle(const std::string& pci_bus_id) const;
  struct Api;
  Api* api_ = nullptr;
  void* library_ = nullptr;
  bool available_ = false;
  std::string why_;
};

}  // namespace aispflow::kernels::cuda
