#pragma once
// What the engine needs to know about the machine, without knowing any GPU API: resource totals for the
// scheduler, a fingerprint for the cache keys of hardware-bound nodes, and requirement checks.
// kernels::Backend implements it; tests can implement it with a fake.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow {

// What a node (or a GEMM provider) needs from the hardware. Empty = runs anywhere.
struct Requirements {
  int gpus = 0;                          // number of GPUs it must hold
  int min_compute_capability = 0;        // e.g. 90 for sm_90, 100 for sm_100; 0 = any
  std::vector<std::string> features;     // "tma", "cluster", "wgmma", "tcgen05", "nvlink", ...
  double min_gpu_memory_gib = 0;         // per GPU
  std::string why;                       // what the requirement is for, e.g. "tcgen05": shown in skip reasons
};

class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::string backend_name() const = 0;                     // "cpu", "cuda", "fake", ...
  // Device name, SM count, driver, runtime, CPU model, build id: anything a measurement depends on.
  virtual nlohmann::json fingerprint() const = 0;
  // How many units of a schedulable resource exist ("gpu"). Unknown resources have 0.
  virtual int resource_total(const std::string& resource) const = 0;
  // nullopt when met; otherwise the exact reason, e.g.
  // "requires sm_100 (tcgen05); found sm_90 on NVIDIA H100 80GB HBM3".
  virtual std::optional<std::string> unmet(const Requirements& req) const = 0;
  // The devices an exclusive node measures here, as machine-wide names ("gpu-GPU-<uuid>", "cpu-<host>"): the
  // executor holds a MeasurementLock on them while the node runs (pipeline/measurement_lock.hpp), so two
  // processes never measure one device at once. Empty: nothing to lock (test environments).
  virtual std::vector<std::string> measured_devices() const { return {}; }
};

}  // namespace aispflow
