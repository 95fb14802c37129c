#pragma once
// How ours.cluster's fp8 kernels promote the tensor cores' partial sums into fp32, as one rule shared by the kernel
// (kernels/cuda/ours/hopper_gemm.cuh) and the pick model that prices it (gemm_pick_model.cpp): a work item promotes
// every `every` k-tiles; past its last whole interval it runs one interval of promotion_tail_interval(every) k-tiles
// where that many are left (0: none), and promotes the k-tiles still left one at a time, each draining the tensor
// pipe (NOTES.md step 100: promote8's tail of 4 made fp8 8192^2 x 512 5-17 % faster, K = 2880 up to 4 %).

namespace aispflow::kernels {

constexpr int promotion_tail_interval(int every) { return every >= 8 ? every / 2 : 0; }

}  // namespace aispflow::kernels
