#pragma once
// Transformer model configurations: the few numbers from a model card that decide the shapes of its GEMMs
// and the size of its KV cache. Used by the gemm_shapes and kv_cache node types.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow {

struct ModelConfig {
  std::string name;                   // preset name, or "custom"
  std::int64_t hidden = 0;            // model (residual) width
  std::int64_t heads = 0;             // query heads
  std::int64_t kv_heads = 0;          // key/value heads (GQA); 0 = same as heads
  std::int64_t head_dim = 0;          // 0 = hidden / heads
  std::int64_t intermediate = 0;      // dense MLP width (models without experts)
  std::int64_t experts = 0;           // routed experts per MoE layer; 0 = dense model
  std::int64_t top_k = 0;             // experts each token is routed to
  std::int64_t expert_intermediate = 0;  // MLP width of one expert
  std::int64_t layers = 0;
  std::int64_t vocab = 0;

  bool is_moe() const { return experts > 0; }
  // Derived values with the documented defaults applied.
  std::int64_t effective_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  std::int64_t effective_head_dim() const { return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0); }

  nlohmann::json to_json() const;
};

// The field names a `config:` map may set, in documentation order.
const std::vector<std::string>& model_config_fields();

// Built-in presets (numbers from the public model cards / config.json files).
const std::vector<ModelConfig>& model_presets();
std::vector<std::string> model_preset_names();
std::optional<ModelConfig> find_model_preset(const std::string& name);

// Starting from `base`, sets every field present in `overrides` (a JSON object using model_config_fields()).
// Throws std::invalid_argument naming the field when a key is unknown or a value is not a non-negative integer.
ModelConfig apply_config_overrides(ModelConfig base, const nlohmann::json& overrides);

// Resolves the usual `model:` + `config:` parameter pair: the preset (if named) with the config applied.
// Throws std::invalid_argument with a message listing the presets when the name is unknown.
ModelConfig resolve_model(const nlohmann::json& model_param, const nlohmann::json& config_param);

}  // namespace aispflow
