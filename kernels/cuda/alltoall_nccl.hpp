#pragma once
// The `alltoall` node's nccl transport: grouped ncclSend/ncclRecv over every GPU of this process
// (ncclCommInitAll), the Zipf traffic of kernels/common/alltoall_traffic.hpp, data written and verified on
// the devices, each iteration timed with CUDA events on every GPU (the slowest counts).
#include <nlohmann/json.hpp>

namespace aispflow::kernels::cuda {

// See Backend::run_alltoall for the plan and the result. Throws std::runtime_error (NCCL missing, fewer
// GPUs than asked, NCCL settings that differ from the ones this process already initialised NCCL with).
nlohmann::json run_alltoall_nccl(const nlohmann::json& plan);

}  // namespace aispflow::kernels::cuda
