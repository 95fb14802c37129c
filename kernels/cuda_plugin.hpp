#pragma once
// Finds and loads the CUDA backend plugin (libaispflow_cuda.so) once per process. See
// kernels/cuda/plugin/entry.cpp for why the CUDA backend is a plugin.
//
// Search order: $AISPFLOW_CUDA_PLUGIN (a file), the executable's directory, its parent, ../lib beside
// it, the build tree this executable came from, then the dynamic linker's own search (LD_LIBRARY_PATH).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/common/backend.hpp"

namespace aispflow::kernels {

// True when this build produced the plugin (AISPFLOW_CUDA found nvcc).
bool cuda_plugin_built();

// Whether the plugin loads and the CUDA runtime finds a usable device; otherwise false and *why_not says
// which of the two failed and why.
bool cuda_backend_usable(std::string* why_not);

// The CUDA backend from the plugin. Throws std::invalid_argument naming the reason when it cannot be made.
std::unique_ptr<Backend> make_cuda_backend_from_plugin();

// `aispflow replay`: kernels/cuda/replay.hpp's replay_gemm, run inside the plugin. Throws std::invalid_argument
// when the plugin or a device is unusable or the request is at fault, std::runtime_error when the GPU work fails.
nlohmann::json replay_gemm_in_plugin(const nlohmann::json& request);

}  // namespace aispflow::kernels
