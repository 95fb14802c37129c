#include "kernels/cuda_plugin.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/plugin/entry.hpp"

namespace aispflow::kernels {

namespace fs = std::filesystem;

bool cuda_plugin_built() {
#ifdef AISPFLOW_CUDA_PLUGIN_BUILT
  return true;
#else
  return false;
#endif
}

namespace {

struct LoadedPlugin {
  CudaDeviceAvailableFn device_available = nullptr;
  MakeCudaBackendFn make_backend = nullptr;
  ReplayGemmFn replay_gemm = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* explicit_path = std::getenv("AISPFLOW_CUDA_PLUGIN"); explicit_path && *explicit_path)
    out.emplace_back(explicit_path);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    out.push_back((dir / kCudaPluginFile).string());
    out.push_back((dir.parent_path() / kCudaPluginFile).string());
    out.push_back((dir.parent_path() / "lib" / kCudaPluginFile).string());
  }
#ifdef AISPFLOW_CUDA_PLUGIN_BUILD_PATH
  out.emplace_back(AISPFLOW_CUDA_PLUGIN_BUILD_PATH);
#endif
  return out;
}

LoadedPlugin load() {
  LoadedPlugin plugin;
  if (!cuda_plugin_built()) {
    plugin.error = "this aispflow was built without CUDA (AISPFLOW_CUDA=OFF or no nvcc)";
    return plugin;
  }
  void* handle = nullptr;
  std::string tried;
  for (const auto& path : candidate_paths()) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    // RTLD_LOCAL: the plugin's own copies of shared code never resolve other modules' symbols.
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* err = ::dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (err ? err : path);
  }
  if (!handle && tried.empty()) {
    handle = ::dlopen(kCudaPluginFile, RTLD_NOW | RTLD_LOCAL);  // LD_LIBRARY_PATH, system directories
    if (!handle) {
      const char* err = ::dlerror();
      tried = err ? err : kCudaPluginFile;
    }
  }
  if (!handle) {
    // Typically the CUDA runtime or cuBLASLt is missing on this machine.
    plugin.error = "cannot load the CUDA backend plugin " + std::string(kCudaPluginFile) + ": " + tried;
    return plugin;
  }
  auto abi = reinterpret_cast<CudaPluginAbiFn>(::dlsym(handle, kCudaPluginAbiSymbol));
  plugin.device_available = reinterpret_cast<CudaDeviceAvailableFn>(::dlsym(handle, kCudaDeviceAvailableSymbol));
  plugin.make_backend = reinterpret_cast<MakeCudaBackendFn>(::dlsym(handle, kMakeCudaBackendSymbol));
  plugin.replay_gemm = reinterpret_cast<ReplayGemmFn>(::dlsym(handle, kReplayGemmSymbol));
  if (!abi || !plugin.device_available || !plugin.make_backend || !plugin.replay_gemm) {
    plugin.error = std::string(kCudaPluginFile) + " lacks the aispflow plugin entry points";
  } else if (abi() != kCudaPluginAbi) {
    plugin.error = std::string(kCudaPluginFile) + " is from another aispflow build (plugin ABI " +
                   std::to_string(abi()) + ", expected " + std::to_string(kCudaPluginAbi) + ")";
  }
  if (!plugin.error.empty()) {
    plugin.device_available = nullptr;
    plugin.make_backend = nullptr;
    plugin.replay_gemm = nullptr;
  }
  // The handle stays open for the life of the process: backends made by it may live until exit.
  return plugin;
}

const LoadedPlugin& plugin() {
  static const LoadedPlugin loaded = load();
  return loaded;
}

}  // namespace

bool cuda_backend_usable(std::string* why_not) {
  const LoadedPlugin& p = plugin();
  if (!p.error.empty()) {
    if (why_not) *why_not = p.error;
    return false;
  }
  return p.device_available(why_not);
}

std::unique_ptr<Backend> make_cuda_backend_from_plugin() {
  std::string why;
  if (!cuda_backend_usable(&why)) throw std::invalid_argument("--backend cuda: no usable CUDA device (" + why + ")");
  return std::unique_ptr<Backend>(plugin().make_backend());
}

nlohmann::json replay_gemm_in_plugin(const nlohmann::json& request) {
  std::string why;
  if (!cuda_backend_usable(&why)) throw std::invalid_argument("replay needs the CUDA backend: " + why);
  std::string result;
  bool bad_input = false;
  if (!plugin().replay_gemm(request.dump(), &result, &bad_input)) {
    if (bad_input) throw std::invalid_argument(result);
    throw std::runtime_error(result);
  }
  return nlohmann::json::parse(result);
}

}  // namespace aispflow::kernels
