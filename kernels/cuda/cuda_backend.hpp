#pragma once
// Host-side entry points of the CUDA backend. This header includes no CUDA headers, so plain C++
// translation units (select_backend.cpp, tests) can use it.
#include <memory>
#include <string>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels {
// true when the CUDA runtime finds at least one device; otherwise false and *why_not (if given) says why.
bool cuda_device_available(std::string* why_not);
// The CUDA backend: cuBLASLt providers (+ the CPU providers), GPU peaks, NVML fingerprint.
std::unique_ptr<Backend> make_cuda_backend();
}  // namespace aispflow::kernels
