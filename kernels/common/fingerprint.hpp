#pragma once
// The host part of every backend's environment fingerprint: what a CPU measurement depends on, and what a
// GPU measurement's host side depends on. Hardware-bound nodes put this into their cache key, so it holds
// only facts that are stable from run to run on one machine (no load, no free memory, no clocks).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::kernels {

struct CpuCache {
  int level = 0;              // 1, 2, 3
  std::string type;           // "Data", "Instruction", "Unified"
  std::int64_t bytes = 0;     // size of one instance
  int shared_by = 1;          // logical CPUs sharing one instance
};

// Caches of CPU 0 from /sys (empty where /sys does not say).
const std::vector<CpuCache>& cpu_caches();
// Size of one instance of the data/unified cache of this level; `fallback` where unknown.
std::int64_t cpu_cache_bytes(int level, std::int64_t fallback);
// Largest cache level's total size across its instances (what a bandwidth probe must overflow).
std::int64_t last_level_cache_bytes();
// "AMD EPYC 9654 96-Core Processor" from /proc/cpuinfo ("unknown CPU" where absent).
std::string cpu_model();
// Vector ISA this build was compiled for (-march=native): "avx512f+fma", "avx2+fma", "sse2", "neon", ...
std::string compiled_isa();
// Physical memory in bytes from /proc/meminfo (0 where unknown).
std::int64_t total_memory_bytes();

// {"cpu_model", "logical_cpus", "caches": {"l1d","l2","l3"}, "isa", "os", "compiler", "build_id"}
nlohmann::json cpu_fingerprint();
// cpu_fingerprint() plus every cache level, memory size and TBB's default concurrency, for `aispflow hw`.
nlohmann::json cpu_hardware_info();

}  // namespace aispflow::kernels
