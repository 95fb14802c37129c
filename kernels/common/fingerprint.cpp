// Host fingerprint: CPU model, caches, ISA, OS, compiler and build id, read once per process.
#include "kernels/common/fingerprint.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>

#include <tbb/info.h>

#include "pipeline/build_id.hpp"
namespace aispflow::kernels {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// "32K", "1024K", "32768K", "2M" -> bytes.
std::int64_t parse_size(const std::string& text) {
  std::istringstream in(text);
  std::int64_t value = 0;
  char unit = 0;
  if (!(in >> value)) return 0;
  in >> unit;
  switch (std::toupper(static_cast<unsigned char>(unit))) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

// "0-1", "0,2,4", "3" -> number of CPUs listed.
int count_cpu_list(const std::string& list) {
  int count = 0;
  std::istringstream in(list);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      if (!trim(part).empty()) ++count;
    } else {
      count += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    }
  }
  return std::max(count, 1);
}

std::vector<CpuCache> read_caches() {
  std::vector<CpuCache> caches;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string level = read_first_line(dir + "level");
    if (level.empty()) break;
    CpuCache c;
    try {
      c.level = std::stoi(level);
      c.type = read_first_line(dir + "type");
      c.bytes = parse_size(read_first_line(dir + "size"));
      c.shared_by = count_cpu_list(read_first_line(dir + "shared_cpu_list"));
    } catch (const std::exception&) {
      continue;   // an odd /sys entry is not worth failing a run for
    }
    caches.push_back(c);
  }
  return caches;
}

int logical_cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

const std::vector<CpuCache>& cpu_caches() {
  static const std::vector<CpuCache> caches = read_caches();
  return caches;
}

std::int64_t cpu_cache_bytes(int level, std::int64_t fallback) {
  for (const auto& c : cpu_caches())
    if (c.level == level && c.type != "Instruction" && c.bytes > 0) return c.bytes;
  return fallback;
}

std::int64_t last_level_cache_bytes() {
  std::int64_t best = 0;
  int best_level = 0;
  for (const auto& c : cpu_caches()) {
    if (c.type == "Instruction" || c.level < best_level) continue;
    // Total over instances: with N instances each shared by `shared_by` CPUs.
    const int instances = std::max(1, logical_cpus() / std::max(1, c.shared_by));
    const std::int64_t total = c.bytes * instances;
    if (c.level > best_level || total > best) best = total, best_level = c.level;
  }
  return best > 0 ? best : std::int64_t(32) << 20;   // unknown: assume a generous 32 MiB
}

std::string cpu_model() {
  static const std::string model = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    // x86 says "model name"; some ARM kernels only say "Hardware" or "CPU part".
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim(line.substr(0, colon));
      if (key == "model name" || key == "Hardware") return trim(line.substr(colon + 1));
    }
    return std::string("unknown CPU");
  }();
  return model;
}

std::string compiled_isa() {
#if defined(__AVX512F__)
  std::string isa = "avx512f";
#elif defined(__AVX2__)
  std::string isa = "avx2";
#elif defined(__AVX__)
  std::string isa = "avx";
#elif defined(__SSE2__)
  std::string isa = "sse2";
#elif defined(__ARM_NEON)
  std::string isa = "neon";
#else
  std::string isa = "scalar";
#endif
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  isa += "+fma";
#endif
  return isa;
}

std::int64_t total_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024;
  return 0;
}

nlohmann::json cpu_fingerprint() {
  static const nlohmann::json fp = [] {
    utsname u{};
    std::string os = "unknown";
    if (uname(&u) == 0) os = std::string(u.sysname) + " " + u.release + " " + u.machine;
    return nlohmann::json{
        {"cpu_model", cpu_model()},
        {"logical_cpus", logical_cpus()},
        {"caches",
         {{"l1d", cpu_cache_bytes(1, 0)}, {"l2", cpu_cache_bytes(2, 0)}, {"l3", cpu_cache_bytes(3, 0)}}},
        {"isa", compiled_isa()},
        {"os", os},
#if defined(__clang__)
        {"compiler", "clang " __clang_version__},
#elif defined(__GNUC__)
        {"compiler", "gcc " __VERSION__},
#else
        {"compiler", "unknown"},
#endif
        {"build_id", build_id()},
    };
  }();
  return fp;
}

nlohmann::json cpu_hardware_info() {
  nlohmann::json info = cpu_fingerprint();
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : cpu_caches())
    caches.push_back({{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_by_cpus", c.shared_by}});
  info["cache_hierarchy"] = caches;
  info["last_level_cache_total_bytes"] = last_level_cache_bytes();
  info["memory_bytes"] = total_memory_bytes();
  info["tbb_default_concurrency"] = tbb::info::default_concurrency();
  return info;
}

}  // namespace aispflow::kernels
