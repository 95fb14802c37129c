#include "kernels/cuda/cutlass/registry.hpp"

#include <map>
#include <string>

// One declaration per compiled instance; each is defined in its generated translation unit.
#define AISPFLOW_CUTLASS_COMPILED(symbol) extern const ::aispflow::kernels::cuda::cutlass_abi::InstanceOps symbol;
#include "cutlass_compiled.inc"
#undef AISPFLOW_CUTLASS_COMPILED

namespace aispflow::kernels::cuda {

namespace {

const std::map<std::string, const cutlass_abi::InstanceOps*>& compiled() {
  static const std::map<std::string, const cutlass_abi::InstanceOps*> table = {
#define AISPFLOW_CUTLASS_COMPILED(symbol) {#symbol, &symbol},
#include "cutlass_compiled.inc"
#undef AISPFLOW_CUTLASS_COMPILED
  };
  return table;
}

}  // namespace

bool cutlass_built() { return std::string(AISPFLOW_CUTLASS_VERSION).size() > 0; }

const cutlass_abi::InstanceOps* cutlass_ops(const CutlassInstance& inst) {
  const auto it = compiled().find(inst.symbol());
  return it == compiled().end() ? nullptr : it->second;
}

std::string cutlass_not_compiled_reason(const CutlassInstance& inst) {
  if (cutlass_ops(inst)) return {};
  if (!cutlass_built()) return std::string("this build has no CUTLASS: ") + AISPFLOW_CUTLASS_NOTE;
  if (!inst.in_build_set(AISPFLOW_CUTLASS_BUILD_SET))
    return std::string("not compiled: built with AISPFLOW_CUTLASS_INSTANCES=") + AISPFLOW_CUTLASS_BUILD_SET +
           " (this instance is in the 'all' set)";
  return std::string("not compiled: ") + AISPFLOW_CUTLASS_NOTE;
}

nlohmann::json cutlass_build_info() {
  if (!cutlass_built()) return {{"unavailable", AISPFLOW_CUTLASS_NOTE}};
  nlohmann::json per_arch = nlohmann::json::object();
  for (const auto& inst : cutlass_manifest()) {
    const std::string arch = "sm_" + std::to_string(inst.arch) + "a";
    if (!per_arch.contains(arch)) per_arch[arch] = 0;
    if (cutlass_ops(inst)) per_arch[arch] = per_arch[arch].get<int>() + 1;
  }
  nlohmann::json j = {{"version", AISPFLOW_CUTLASS_VERSION},
                      {"include", AISPFLOW_CUTLASS_INCLUDE},
                      {"build_set", AISPFLOW_CUTLASS_BUILD_SET},
                      {"instances_compiled", per_arch},
                      {"manifest_rows", cutlass_manifest().size()}};
  if (std::string(AISPFLOW_CUTLASS_NOTE).size()) j["note"] = AISPFLOW_CUTLASS_NOTE;
  return j;
}

}  // namespace aispflow::kernels::cuda
