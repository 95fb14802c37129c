#pragma once
// The seam between the tensor-pipe probe's host side (tensor_pipe.cpp) and its sm_90a kernels
// (tensor_pipe_sm90a.cu, compiled for that target alone).
#include <cuda_runtime.h>

namespace aispflow::kernels::cuda {

enum TensorPipeDtype { kPipeBf16 = 0, kPipeFp16 = 1, kPipeTf32 = 2, kPipeE4m3 = 3 };

struct TensorPipeLaunch {
  int dtype = kPipeBf16;
  bool from_registers = false;   // A from registers (wgmma RS) instead of shared memory (SS)
  int warpgroups = 2;            // 2 or 3 warpgroups per block (rs: 2), one block per SM
  unsigned blocks = 0;
  int steps = 0;                 // steps the kernel runs (four instructions each)
  int expected_steps = 0;        // steps the closed form assumes (differs from `steps` only under sabotage)
  unsigned* wrong = nullptr;     // device counter: accumulators off the closed form
  unsigned* blocks_done = nullptr;   // device counter: blocks that finished their check
  unsigned long long* clocks = nullptr;   // device [2]: SM cycles and global-timer ns of block 0's loop
};

// K per wgmma instruction of the dtype (bf16/fp16 16, tf32 8, e4m3 32).
int tensor_pipe_k_per_instruction(int dtype);
// Enqueues one launch; returns the launch error, if any.
cudaError_t launch_tensor_pipe(const TensorPipeLaunch& launch, cudaStream_t stream);

}  // namespace aispflow::kernels::cuda
