#pragma once
// cublaslt.unfused (unfused.cu): cuBLASLt's GEMM then a separate bias(+GELU) kernel, as one timed record.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/cuda/context.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda::ours {
std::vector<std::unique_ptr<OurKernel>> unfused_pair(std::function<GpuContext&()> context);
// C (bf16, count elements, rows of n) = epilogue(C + bias[col]) in place; epilogue 1 = bias, 2 = bias + GELU.
void launch_bias_epilogue(void* c, const void* bias, std::int64_t count, std::int64_t n, int epilogue,
                          cudaStream_t stream);
}
