#pragma once
// GPU ceilings for the `peak` node: memory bandwidth kernels (copy, triad, read) each beside cudaMemcpy
// device-to-device measured in the same call, an L2 read ceiling (a working set well inside L2 read many
// times), on-chip probes (on_chip_peaks.cu: shared-memory read bandwidth, fp32 FMA of the CUDA cores), and
// with two or more GPUs a peer-to-peer bandwidth matrix. Compute ceilings of the tensor cores come from
// cuBLASLt (cublaslt_provider.hpp); datasheet figures from datasheet.hpp.
// Every probe checks what its kernel computed before it is timed, and every check can fail: the tests feed
// each one a sabotaged kernel (the Sabotage hooks below) and see it fail.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

// Test hooks: each makes one probe compute the wrong thing (or nothing), so a test can see that probe's
// check fail and the ceiling come out `failed`, never timed. Only tests pass anything but `none`.
enum class Sabotage {
  none,
  read_half,          // hbm.read, l2.read, smem.read: the kernel reads only half of the data
  zero_block_sums,    // hbm.read, l2.read, smem.read: the block sums are overwritten with zeros after the kernel
  copy_wrong_source,  // hbm.copy: copies c instead of a
  triad_b_twice,      // hbm.triad: a = b + s*b
  fma_noop,           // cuda_core.fp32: nothing is launched
  fma_half,           // cuda_core.fp32: half the iterations
  fma_short,          // cuda_core.fp32: 8000 of the 8192 iterations (2.3 % of the work missing)
  p2p_half,           // p2p.*: both copies move only the first half of the buffer
  p2p_lazy_peer,      // p2p.*: the order before issue 18: no pair warmed, peer access enabled only when a kernel
                      // read first needs it (so the first copy-engine copy of a pair is staged through the host)
};

// Data whose sum is known exactly without reading it: value(i) = 1 + hash(seed, i) % max_value, small
// positive integers stored as floats. An fp32 reduction of them is exact while every partial sum stays below
// 2^24, so the read probes compare their result for equality with the closed form: reading half the data,
// or writing zero block sums, misses it by about half of the sum or all of it.
struct ExactPattern {
  std::uint32_t seed = 1;
  std::uint32_t max_value = 8;
  void fill(void* data, std::size_t bytes, cudaStream_t stream) const;
  // The sum of the first bytes/4 values, from the closed form (not read from memory), in integers.
  std::uint64_t sum(std::size_t bytes, cudaStream_t stream) const;
  // The largest max_value (at most 8) for which a sum of `values` of them stays below 2^24 (exact in fp32);
  // 0 when even ones would not.
  static std::uint32_t max_value_for(std::uint64_t values);
};

// A measured memory ceiling: kind memory, unit GB/s, `level` (hbm, l2, smem) for the roofline's levels.
Ceiling measured_bandwidth_ceiling(const std::string& name, const std::string& level, double bytes,
                                   const Measurement& m, const std::string& method);

// Bytes counted: copy = read + write (2 x array), triad = 2 reads + 1 write (3 x array), read = 1 x array,
// memcpy D2D = read + write. Each kernel tries a few launch shapes and reports the best, with every
// variant listed under "variants". Names: "hbm.copy", "hbm.triad", "hbm.read", "hbm.memcpy_d2d" (level hbm).
// The three arrays hold distinct data (a: an ExactPattern, b and c: random with different seeds), so a copy
// from the wrong array or a triad reading b twice is caught. Every variant is verified before it is timed
// (one launch into an output filled with NaN bytes, checked on the device against the kernel's definition;
// the read's block sums must add up to the pattern's exact sum); a wrong one is listed as failed and never
// timed.
std::vector<Ceiling> measure_bandwidth(Harness& harness, std::size_t array_bytes, const TimingPolicy& timing,
                                       Sabotage sabotage = Sabotage::none);

// "l2.read" (level l2): the read kernel over a working set of a quarter of the L2 (so it stays resident),
// read many times per launch without flushing L2; verified like hbm.read (exact sum, times the passes).
Ceiling measure_l2_read(Harness& harness, std::size_t l2_bytes, const TimingPolicy& timing,
                        Sabotage sabotage = Sabotage::none);

// "smem.read" (level smem, on_chip_peaks.cu): every block copies a 16 KiB ExactPattern tile into shared memory
// once, then reads all of it many times (a rotation per pass, conflict-free float4 loads); each block's sum
// must equal passes x the tile's exact sum. Bytes counted: shared-memory reads.
Ceiling measure_smem_read(Harness& harness, const TimingPolicy& timing, Sabotage sabotage = Sabotage::none);

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

 private:
  template <class Launch>
  std::uint64_t count(Launch&& launch);
  cudaStream_t stream_;
  DeviceBuffer scratch_;
  unsigned blocks_ = 0;
};

// fp32 FMA throughput of the CUDA cores ("cuda_core.fp32", TFLOP/s, 2 FLOP per FMA; on_chip_peaks.cu). Each
// thread iterates x = a x + b (a contraction) and writes the sum of its chains; every thread's sum is
// compared with the closed form x_n = x_f + a^n (x_0 - x_f) within a bound on the accumulated rounding, before
// timing. A kernel that wrote nothing, or skipped even 192 of its 8192 iterations, is `failed` and not timed.
Ceiling measure_fp32_fma(Harness& harness, const TimingPolicy& timing, Sabotage sabotage = Sabotage::none);

// For every ordered pair of GPUs: copy-engine bandwidth (cudaMemcpyPeerAsync) and, where the destination
// has peer access to the source, a kernel on the destination GPU reading the source GPU's memory (else an
// entry with status "not measured" and the reason). Each copy is checked against the source's contents
// before it is timed. Kind "interconnect", unit GB/s, names "p2p.copy_engine.<src>-><dst>" and
// "p2p.kernel_read.<src>-><dst>". Empty with fewer than 2 GPUs, unless `include_local`: then each GPU's copy
// within its own memory (<i>-><i>, the matrix's diagonal) is measured too, by the same two methods.
// Before any copy, peer access is enabled for every pair that supports it, in both directions, and every pair is
// copied once untimed by each method: so the first pair measured is measured as the last one is. Every record
// says how its bytes travelled: "peer_access" (both directions enabled when it was timed) and "path" ("direct",
// "staged through the host", or "local" on the diagonal).
std::vector<Ceiling> measure_p2p(std::size_t bytes, const TimingPolicy& timing, bool include_local = false,
                                 Sabotage sabotage = Sabotage::none);

}  // namespace aispflow::kernels::cuda
