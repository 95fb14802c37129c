#pragma once
// Datasheet ceilings for known GPUs, matched by the device name the CUDA runtime reports.
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels::cuda {

// Dense (no structured sparsity) tensor-core TFLOP/s per dtype, fp32 CUDA-core TFLOP/s and HBM GB/s, each
// {"name": "datasheet.bf16", "kind", "unit", "value", "dtype"?, "source": "datasheet", "method": <document>}.
// Empty for a device not in the table.
std::vector<Ceiling> datasheet_ceilings_for(const std::string& device_name);

}  // namespace aispflow::kernels::cuda
