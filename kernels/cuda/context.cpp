#include "kernels/cuda/context.hpp"

#include <string>

namespace aispflow::kernels::cuda {

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(call) + " failed: " + cublasLtGetStatusName(status) + " (" +
                  cublasLtGetStatusString(status) + ") at " + file + ":" + std::to_string(line));
}

GpuContext::GpuContext(int device) : device_(device) {
  ScopedDevice on(device_);
  harness_ = std::make_unique<Harness>(device_);
  AISPFLOW_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_ = DeviceBuffer(kWorkspaceBytes);
}

GpuContext::~GpuContext() {
  if (lt_) cublasLtDestroy(lt_);
}

}  // namespace aispflow::kernels::cuda
