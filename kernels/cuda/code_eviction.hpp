#pragma once
// Instruction caches made cold on purpose (`timing.code: cold`): a kernel whose straight-line code is larger than
// an SM's instruction caches runs on every SM, so that the next kernel fetches its instructions afresh, as it does
// in a pipeline where other kernels run between its launches. The L2 flush alone leaves a kernel's code in the SMs'
// caches when it ran last: measured on an H100, a GEMM sampled right after another compiled kernel ran 1-5 % slower
// than right after itself (bench/results/h100/ours_probe/NOTES.md step 135).
#include <cuda_runtime.h>

namespace aispflow::kernels::cuda {

// Bytes of SASS the eviction kernel runs through on each SM (checked by tests/gpu against its own cycles).
constexpr int kEvictionCodeBytes = 256 << 10;

// Enqueues the eviction kernel on `stream`: two blocks of one warp per SM of `sm_count`, each executing
// kEvictionCodeBytes of code once.
void evict_instruction_caches(cudaStream_t stream, int sm_count);

// Test hook (tests/gpu): how many times this process has enqueued the eviction kernel, so that a test can see the
// harness run it before each cold sample (and never before a warm one).
long evictions_enqueued();

// Test hook (tests/gpu): `sm_count` blocks of one warp (about one an SM) run a kernel that visits 64 blocks of 256
// bytes of code in a scattered order; returns the median block's SM cycles from its first to its last visit: few when
// the kernel ran just before, many after evict_instruction_caches. Waits for the stream.
long long scattered_code_cycles(cudaStream_t stream, int sm_count);

}  // namespace aispflow::kernels::cuda
