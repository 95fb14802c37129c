#pragma once
// The contract between aispflow and libaispflow_cuda.so: symbol names, signatures and an ABI number that
// both sides compile in. A plugin from another build (different number) is refused with a clear reason.
#include <string>

namespace aispflow::kernels {

class Backend;

// Raise whenever Backend, GemmProvider, Environment or the signatures below change.
constexpr int kCudaPluginAbi = 3;   // 2: aispflow_cuda_replay_gemm; 3: Backend::plugin_provider

using CudaPluginAbiFn = int (*)();
using CudaDeviceAvailableFn = bool (*)(std::string* why_not);
using MakeCudaBackendFn = Backend* (*)();
// `aispflow replay` (kernels/cuda/replay.hpp): request and result are JSON texts; false: *result is the error,
// and *bad_input says whether the request was at fault (else the GPU work failed).
using ReplayGemmFn = bool (*)(const std::string& request, std::string* result, bool* bad_input);

inline constexpr const char* kCudaPluginFile = "libaispflow_cuda.so";
inline constexpr const char* kCudaPluginAbiSymbol = "aispflow_cuda_plugin_abi";
inline constexpr const char* kCudaDeviceAvailableSymbol = "aispflow_cuda_device_available";
inline constexpr const char* kMakeCudaBackendSymbol = "aispflow_make_cuda_backend";
inline constexpr const char* kReplayGemmSymbol = "aispflow_cuda_replay_gemm";

}  // namespace aispflow::kernels
