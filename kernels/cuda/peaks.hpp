#pragma once
// GPU ceilings for the `peak` node: memory bandwidth kernels (copy, triad, read) each beside cudaMemcpy
// device-to-device measured in the same call, an fp32 FMA kernel for the CUDA cores, and with two or more
// GPUs a peer-to-peer bandwidth matrix. Compute ceilings of the tensor cores come from cuBLASLt
// (cublaslt_provider.hpp); datasheet figures from datasheet.hpp.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

// Bytes counted: copy = read + write (2 x array), triad = 2 reads + 1 write (3 x array), read = 1 x array,
// memcpy D2D = read + write. Each kernel tries a few launch shapes and reports the best, with every
// variant listed under "variants". Names: "hbm.copy", "hbm.triad", "hbm.read", "hbm.memcpy_d2d".
// Every variant is verified before it is timed (one launch into an output filled with NaN bytes, checked
// on the device against the kernel's definition); a wrong one is listed as failed and never timed.
std::vector<Ceiling> measure_bandwidth(Harness& harness, std::size_t array_bytes, const TimingPolicy& timing);

// The device-side checks the bandwidth probes run before timing, on the current device and `stream`.
// Counting happens on the GPU (one atomic per thread that found anything); only the count comes back.
class OutputCheck {
 public:
  explicit OutputCheck(cudaStream_t stream);
  // Fills `bytes` of `output` with NaN bytes, so a kernel that writes nothing cannot pass a check.
  void poison(void* output, std::size_t bytes);
  // 32-bit words of `got` that differ from `want`, bit for bit (copies must be exact); bytes % 16 == 0.
  std::uint64_t unequal(const void* got, const void* want, std::size_t bytes);
  // Floats of `a` that are not b + s*c to within 1e-6 of |b| + |s*c| (contracted to an FMA or not).
  std::uint64_t triad_errors(const void* a, const void* b, const void* c, float s, std::size_t bytes);
  // {sum, sum of magnitudes} of `bytes` of floats, accumulated in double.
  std::pair<double, double> reference_sum(const void* data, std::size_t bytes);

 private:
  template <class Launch>
  std::uint64_t count(Launch&& launch);
  cudaStream_t stream_;
  DeviceBuffer scratch_;
  unsigned blocks_ = 0;
};

// fp32 FMA throughput of the CUDA cores ("cuda_core.fp32", TFLOP/s, 2 FLOP per FMA).
Ceiling measure_fp32_fma(Harness& harness, const TimingPolicy& timing);

// For every ordered pair of GPUs: copy-engine bandwidth (cudaMemcpyPeerAsync) and, where the destination
// has peer access to the source, a kernel on the destination GPU reading the source GPU's memory (else an
// entry with status "not measured" and the reason). Each copy is checked against the source's contents
// before it is timed. Kind "interconnect", unit GB/s, names "p2p.copy_engine.<src>-><dst>" and
// "p2p.kernel_read.<src>-><dst>". Empty with fewer than 2 GPUs.
std::vector<Ceiling> measure_p2p(std::size_t bytes, const TimingPolicy& timing);

}  // namespace aispflow::kernels::cuda
