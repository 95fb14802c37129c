#pragma once
// Host-side entry points of the CUDA backend. This header includes no CUDA headers, so plain C++
// translation units (select_backend.cpp, tests) can use it.
#include <functional>
#include <memory>
#include <string>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels {
namespace cuda {
class GpuContext;
}
// true when the CUDA runtime finds at least one device; otherwise false and *why_not (if given) says why.
bool cuda_device_available(std::string* why_not);
// The CUDA backend: cuBLASLt providers (+ the CPU providers), GPU peaks, NVML fingerprint.
std::unique_ptr<Backend> make_cuda_backend();
// The GEMM provider `name` of this backend (GPU and CPU providers), running on the context `context` returns;
// nullptr for an unknown name. The backend makes its providers here, and so does `aispflow replay`.
std::unique_ptr<GemmProvider> make_cuda_gemm_provider(const std::string& name,
                                                      std::function<cuda::GpuContext&()> context);
}  // namespace aispflow::kernels
