#include "kernels/cuda/blocking.hpp"

#include <atomic>

#include "kernels/cuda/check.hpp"

namespace aispflow::kernels::cuda {

namespace {
__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread polls the host-mapped flag. The timeout only guards against a host that never opens the
// gate (it cannot happen in the harness, but a hung GPU would be far worse than one bad sample).
__global__ void gate_kernel(const volatile int* flag, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (*flag == 0 && global_ns() - start < timeout_ns) {
  }
}
}  // namespace

StreamGate::StreamGate() {
  int* host = nullptr;
  AISPFLOW_CUDA_CHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
  host_flag_ = host;
  *host_flag_ = 1;
  AISPFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&device_flag_, host, 0));
}

StreamGate::~StreamGate() {
  if (host_flag_) cudaFreeHost(const_cast<int*>(host_flag_));
}

void StreamGate::close(cudaStream_t stream) {
  *host_flag_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  gate_kernel<<<1, 1, 0, stream>>>(device_flag_, 1000000000ull);
  AISPFLOW_CUDA_CHECK_LAUNCH();
}

void StreamGate::open() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *host_flag_ = 1;
}

}  // namespace aispflow::kernels::cuda
