#pragma once
// The compiled Hopper instance an ours.cluster configuration runs for a case, from its config() JSON (tile, schedule,
// promotion interval) and the case's dtype and layout: what the probes need to look an instance up
// (hopper_instance, HopperInstanceOverride) without the library's private bind() state.
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/cuda/ours/hopper_params.hpp"

namespace aispflow::bench {

inline kernels::cuda::ours::HopperInstanceKey instance_key_of(const nlohmann::json& config, const std::string& dtype,
                                                              const std::string& layout) {
  return {dtype == "fp8_e4m3", config["tile"][0].get<int>(), config["tile"][1].get<int>(), layout == "nn",
          config["schedule"].get<std::string>() == "pingpong", config["promotion_interval"].get<int>()};
}

}  // namespace aispflow::bench
