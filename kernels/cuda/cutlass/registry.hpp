#pragma once
// Which manifest instances this build compiled (kernels/cuda/cutlass/cutlass.cmake generates the list), their
// entry points, and what `aispflow hw` says about CUTLASS.
#include <nlohmann/json.hpp>

#include "kernels/common/cutlass_manifest.hpp"
#include "kernels/cuda/cutlass/instance_abi.hpp"

namespace aispflow::kernels::cuda {

// nullptr when the instance is in the manifest but not in this build (other build set, no CUTLASS, no sm_100a).
const cutlass_abi::InstanceOps* cutlass_ops(const CutlassInstance& inst);
// Why an instance is absent from this build; empty when compiled.
std::string cutlass_not_compiled_reason(const CutlassInstance& inst);
// {"version", "include", "build_set", "instances_compiled": {"sm_90a": n, "sm_100a": n}, "manifest_rows", "note"}
// or {"unavailable": why} for a build without CUTLASS.
nlohmann::json cutlass_build_info();
bool cutlass_built();

}  // namespace aispflow::kernels::cuda
