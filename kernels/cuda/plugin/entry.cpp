// The CUDA backend's plugin entry points (libaispflow_cuda.so). aispflow loads this module with dlopen
// the first time a command needs a backend (kernels/cuda_plugin.cpp), so the cuBLASLt/CUDA runtime
// libraries -- half a gigabyte to map and relocate -- are never loaded by commands that do not touch
// hardware (a fully cached run, validate, graph, nodes), and a CUDA-enabled build still runs on a
// machine without the CUDA runtime (it falls back to the CPU backend and says why).
//
// Only these symbols are exported; everything else in the module is hidden so that it never binds to
// the executable's copies of the same code.
#include <stdexcept>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/plugin/entry.hpp"
#include "kernels/cuda/replay.hpp"

#define AISPFLOW_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

AISPFLOW_PLUGIN_EXPORT int aispflow_cuda_plugin_abi() { return aispflow::kernels::kCudaPluginAbi; }

AISPFLOW_PLUGIN_EXPORT bool aispflow_cuda_device_available(std::string* why_not) {
  return aispflow::kernels::cuda_device_available(why_not);
}

// Ownership passes to the caller; exceptions (a failed device probe) propagate to it.
AISPFLOW_PLUGIN_EXPORT aispflow::kernels::Backend* aispflow_make_cuda_backend() {
  return aispflow::kernels::make_cuda_backend().release();
}

AISPFLOW_PLUGIN_EXPORT bool aispflow_cuda_replay_gemm(const std::string& request, std::string* result, bool* bad_input) {
  *bad_input = false;
  try {
    *result = aispflow::kernels::cuda::replay_gemm(nlohmann::json::parse(request)).dump();
    return true;
  } catch (const std::invalid_argument& e) {
    *bad_input = true;
    *result = e.what();
  } catch (const nlohmann::json::exception& e) {
    *bad_input = true;
    *result = std::string("the replay request is not valid JSON: ") + e.what();
  } catch (const std::exception& e) {
    *result = e.what();
  }
  return false;
}
