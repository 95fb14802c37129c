// Built-in model presets. Only numbers published in the models' own config.json / model cards are here;
// anything else is left for the user's `config:` map rather than guessed.
#include "nodes/model_presets.hpp"

#include <cmath>
#include <stdexcept>

namespace aispflow {

namespace {

ModelConfig make(std::string name, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                 std::int64_t head_dim, std::int64_t intermediate, std::int64_t experts, std::int64_t top_k,
                 std::int64_t expert_intermediate, std::int64_t layers, std::int64_t vocab) {
  ModelConfig c;
  c.name = std::move(name);
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.intermediate = intermediate;
  c.experts = experts;
  c.top_k = top_k;
  c.expert_intermediate = expert_intermediate;
  c.layers = layers;
  c.vocab = vocab;
  return c;
}

// Pointer-to-member table so that parsing, printing and listing the fields cannot drift apart.
struct FieldRef {
  const char* name;
  std::int64_t ModelConfig::*member;
};
constexpr FieldRef kFields[] = {
    {"hidden", &ModelConfig::hidden},         {"heads", &ModelConfig::heads},
    {"kv_heads", &ModelConfig::kv_heads},     {"head_dim", &ModelConfig::head_dim},
    {"intermediate", &ModelConfig::intermediate}, {"experts", &ModelConfig::experts},
    {"top_k", &ModelConfig::top_k},           {"expert_intermediate", &ModelConfig::expert_intermediate},
    {"layers", &ModelConfig::layers},         {"vocab", &ModelConfig::vocab},
};

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = {{"name", name}};
  for (const auto& f : kFields) j[f.name] = this->*(f.member);
  return j;
}

const std::vector<std::string>& model_config_fields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& f : kFields) v.emplace_back(f.name);
    return v;
  }();
  return names;
}

const std::vector<ModelConfig>& model_presets() {
  //                         name            hidden heads kv  hdim  interm  exp topk e_int  layers vocab
  static const std::vector<ModelConfig> presets = {
      // openai/gpt-oss-20b config.json: every MLP is a 32-expert MoE (top-4), expert width 2880.
      make("gpt-oss-20b",       2880,   64,   8,  64,      0,  32,  4, 2880,  24, 201088),
      // openai/gpt-oss-120b: same block as 20b with 128 experts and 36 layers.
      make("gpt-oss-120b",      2880,   64,   8,  64,      0, 128,  4, 2880,  36, 201088),
      // meta-llama/Meta-Llama-3-8B config.json.
      make("llama-3-8b",        4096,   32,   8, 128,  14336,   0,  0,    0,  32, 128256),
      // meta-llama/Meta-Llama-3-70B config.json.
      make("llama-3-70b",       8192,   64,   8, 128,  28672,   0,  0,    0,  80, 128256),
      // mistralai/Mixtral-8x7B-v0.1 config.json: 8 experts, top-2, expert width 14336.
      make("mixtral-8x7b",      4096,   32,   8, 128,      0,   8,  2, 14336, 32,  32000),
  };
  return presets;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : model_presets()) names.push_back(p.name);
  return names;
}

std::optional<ModelConfig> find_model_preset(const std::string& name) {
  for (const auto& p : model_presets())
    if (p.name == name) return p;
  return std::nullopt;
}

ModelConfig apply_config_overrides(ModelConfig base, const nlohmann::json& overrides) {
  if (overrides.is_null()) return base;
  if (!overrides.is_object())
    throw std::invalid_argument("config: expected a map of model fields (" + join(model_config_fields()) +
                                "), got " + overrides.dump());
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    const FieldRef* field = nullptr;
    for (const auto& f : kFields)
      if (it.key() == f.name) field = &f;
    if (!field)
      throw std::invalid_argument("config: unknown field '" + it.key() + "' (expected one of: " +
                                  join(model_config_fields()) + ")");
    const auto& v = it.value();
    std::int64_t x = -1;
    if (v.is_number_integer()) x = v.get<std::int64_t>();
    else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) x = std::int64_t(v.get<double>());
    if (x < 0)
      throw std::invalid_argument("config: field '" + it.key() + "' must be a non-negative integer, got " + v.dump());
    base.*(field->member) = x;
  }
  return base;
}

ModelConfig resolve_model(const nlohmann::json& model_param, const nlohmann::json& config_param) {
  ModelConfig base;
  base.name = "custom";
  if (!model_param.is_null()) {
    if (!model_param.is_string()) throw std::invalid_argument("model: expected a preset name, got " + model_param.dump());
    const auto preset = find_model_preset(model_param.get<std::string>());
    if (!preset)
      throw std::invalid_argument("model: unknown preset '" + model_param.get<std::string>() +
                                  "' (available: " + join(model_preset_names()) + "; or describe it with config:)");
    base = *preset;
  }
  ModelConfig out = apply_config_overrides(base, config_param);
  // A preset changed by config: is no longer that preset; the name says so, so records stay honest.
  if (!model_param.is_null() && config_param.is_object() && !config_param.empty()) out.name = base.name + "+config";
  return out;
}

}  // namespace aispflow
