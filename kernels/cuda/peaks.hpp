#pragma once
// GPU ceilings for the `peak` node: memory bandwidth kernels (copy, triad, read) each beside cudaMemcpy
// device-to-device measured in the same call, an fp32 FMA kernel for the CUDA cores, and with two or more
// GPUs a peer-to-peer bandwidth matrix. Compute ceilings of the tensor cores come from cuBLASLt
// (cublaslt_provider.hpp); datasheet figures from datasheet.hpp.
#include <cstddef>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

// Bytes counted: copy = read + write (2 x array), triad = 2 reads + 1 write (3 x array), read = 1 x array,
// memcpy D2D = read + write. Each kernel tries a few launch shapes and reports the best, with every
// variant listed under "variants". Names: "hbm.copy", "hbm.triad", "hbm.read", "hbm.memcpy_d2d".
std::vector<Ceiling> measure_bandwidth(Harness& harness, std::size_t array_bytes, const TimingPolicy& timing);

// fp32 FMA throughput of the CUDA cores ("cuda_core.fp32", TFLOP/s, 2 FLOP per FMA).
Ceiling measure_fp32_fma(Harness& harness, const TimingPolicy& timing);

// For every ordered pair of GPUs with peer access: copy-engine bandwidth (cudaMemcpyPeerAsync) and a kernel
// on the destination GPU reading the source GPU's memory. Kind "interconnect", unit GB/s, names
// "p2p.copy_engine.<src>-><dst>" and "p2p.kernel_read.<src>-><dst>". Empty with fewer than 2 GPUs.
std::vector<Ceiling> measure_p2p(std::size_t bytes, const TimingPolicy& timing);

}  // namespace aispflow::kernels::cuda
