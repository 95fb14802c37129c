#pragma once
// Error checking for CUDA runtime calls. Every runtime call and every kernel launch in kernels/cuda/ goes
// through AISPFLOW_CUDA_CHECK: a failed call throws CudaError naming the call, file and line, and the
// provider turns that into a "failed" record (exit code 0 from a kernel proves nothing on its own).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace aispflow::kernels::cuda {

struct CudaError : std::runtime_error {
  explicit CudaError(const std::string& what, cudaError_t code = cudaErrorUnknown)
      : std::runtime_error(what), status(code) {}
  cudaError_t status;   // the runtime's error code (cudaErrorUnknown when the error did not come from one)
};

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                      ") at " + file + ":" + std::to_string(line),
                  status);
}

}  // namespace aispflow::kernels::cuda

#define AISPFLOW_CUDA_CHECK(call) ::aispflow::kernels::cuda::check_cuda((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: launch-configuration errors show up only through cudaGetLastError.
#define AISPFLOW_CUDA_CHECK_LAUNCH() \
  ::aispflow::kernels::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
