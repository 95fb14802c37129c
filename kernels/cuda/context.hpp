#pragma once
// Per-GPU state shared by every provider and probe of the CUDA backend: the measurement harness (with its
// stream and L2 flush buffer), one cuBLASLt handle and one cuBLASLt workspace. Created on first use, so
// `aispflow hw` and requirement checks never allocate GPU memory.
#include <cublasLt.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

// Throws CudaError naming the cuBLASLt call when status is not CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
#define AISPFLOW_CUBLAS_CHECK(call) ::aispflow::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)

class GpuContext {
 public:
  // 64 MiB: the workspace size NVIDIA recommends for Hopper, enough for every heuristic candidate we ask for.
  static constexpr std::size_t kWorkspaceBytes = std::size_t(64) << 20;

  explicit GpuContext(int device);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int device() const { return device_; }
  Harness& harness() { return *harness_; }
  cudaStream_t stream() const { return harness_->stream(); }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_.get(); }
  std::size_t workspace_bytes() const { return workspace_.bytes(); }
  // Providers and probes hold this while they use the GPU: one measurement at a time per GPU.
  std::mutex& busy() { return busy_; }

 private:
  int device_;
  std::unique_ptr<Harness> harness_;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  std::mutex busy_;
};

}  // namespace aispflow::kernels::cuda
