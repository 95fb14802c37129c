#pragma once
// A kernel that holds a stream until the host releases it, so the timed work is fully enqueued before
// the GPU reaches the start event. Without it, an idle GPU records the start event at once and the sample
// includes however long the host takes to submit the work (tens of us for a cuBLASLt call, occasionally
// far more): invisible for a 1 ms GEMM, a 2x outlier for a 0.1 ms one. nvbench uses the same device.
#include <cuda_runtime.h>

namespace aispflow::kernels::cuda {

class StreamGate {
 public:
  StreamGate();                       // allocates the mapped host flag on the current device
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Enqueues the spinning kernel; the stream stays blocked until open() (or a 1 s safety timeout).
  void close(cudaStream_t stream);
  void open();

 private:
  volatile int* host_flag_ = nullptr;
  int* device_flag_ = nullptr;
};

}  // namespace aispflow::kernels::cuda
