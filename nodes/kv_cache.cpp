// Node type `kv_cache`: how much memory the KV cache of a model takes at a context length and batch, and
// what still fits on one GPU. Pure arithmetic (not hardware-bound). GB here is always 1e9 bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "nodes/model_presets.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

namespace {

constexpr double kBytesPerGB = 1e9;

// Storage of one cached element in bits (fp4 packs two elements per byte; block scales are not counted).
int bits_per_element(const std::string& dtype) {
  if (dtype == "fp32") return 32;
  if (dtype == "fp16" || dtype == "bf16") return 16;
  if (dtype == "fp8" || dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 8;
  if (dtype == "fp4") return 4;
  throw std::invalid_argument("dtype: unknown KV-cache dtype '" + dtype + "' (expected fp32, fp16, bf16, fp8, fp4)");
}

// Optional non-negative integer (0 = not given).
std::int64_t optional_int(const json& p, const std::string& field) {
  return has_value(p, field) ? positive_int(p, field, 0) : 0;
}

struct KvRequest {
  std::string model = "custom";
  std::int64_t layers = 0, kv_heads = 0, head_dim = 0, kv_dim = 0;
  std::string kv_dim_from;    // how kv_dim was obtained, for the output (so a reader can check it)
  std::int64_t tokens = 0, batch = 1;
  std::string dtype;
  double gpu_memory_gb = 0, overhead_fraction = 0.1, reserved_gb = 0, weights_gb = 0;
};

KvRequest parse(const json& p) {
  KvRequest r;
  // Model dimensions: a preset first (if named), then any field given explicitly wins.
  ModelConfig m;
  if (has_value(p, "model")) {
    m = resolve_model(p["model"], json());
    r.model = m.name;
  }
  if (has_value(p, "layers")) m.layers = positive_int(p, "layers", 0);
  if (has_value(p, "hidden")) m.hidden = optional_int(p, "hidden");
  if (has_value(p, "heads")) m.heads = optional_int(p, "heads");
  if (has_value(p, "kv_heads")) m.kv_heads = optional_int(p, "kv_heads");
  if (has_value(p, "head_dim")) m.head_dim = optional_int(p, "head_dim");
  if (m.layers <= 0) throw std::invalid_argument("layers: required (or name a model preset), expected a positive integer");
  r.layers = m.layers;

  if (m.head_dim == 0 && m.hidden > 0 && m.heads > 0 && m.hidden % m.heads != 0)
    throw std::invalid_argument("hidden: " + std::to_string(m.hidden) + " is not a multiple of heads = " +
                                std::to_string(m.heads) + "; give head_dim");
  const std::int64_t kv_heads = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const std::int64_t head_dim = m.effective_head_dim();
  if (kv_heads > 0 && head_dim > 0) {
    r.kv_heads = kv_heads;
    r.head_dim = head_dim;
    r.kv_dim = kv_heads * head_dim;
    r.kv_dim_from = "kv_heads * head_dim";
  } else if (m.hidden > 0 && m.heads == 0 && m.kv_heads == 0) {
    // Only the model width known: every head has its own K and V (multi-head attention), so K and V are
    // each `hidden` wide per token and layer.
    r.kv_dim = m.hidden;
    r.kv_dim_from = "hidden (multi-head attention: no heads/kv_heads given)";
  } else {
    throw std::invalid_argument("kv_heads: cannot size K/V; give kv_heads and head_dim, or hidden (+ heads, "
                                "+ kv_heads for grouped-query attention), or a model preset");
  }

  r.tokens = required_positive_int(p, "tokens");
  r.batch = positive_int(p, "batch", 1);
  r.dtype = "fp16";
  if (has_value(p, "dtype")) {
    if (!p["dtype"].is_string()) throw std::invalid_argument("dtype: expected a string, got " + p["dtype"].dump());
    r.dtype = p["dtype"].get<std::string>();
  }
  (void)bits_per_element(r.dtype);
  r.gpu_memory_gb = required_number(p, "gpu_memory_gb");
  r.overhead_fraction = number(p, "overhead_fraction", 0.1, /*allow_zero=*/true);
  if (r.overhead_fraction >= 1)
    throw std::invalid_argument("overhead_fraction: expected a fraction in [0, 1), got " +
                                p["overhead_fraction"].dump());
  r.reserved_gb = number(p, "reserved_gb", 0, true);
  r.weights_gb = number(p, "weights_gb", 0, true);
  return r;
}

json compute(const KvRequest& r) {
  // K and V, every layer, one vector of kv_dim elements each: 2 * layers * kv_dim elements per token.
  // Counted in bits first so fp4 (half a byte) stays exact.
  const std::int64_t bits_per_token = 2 * r.layers * r.kv_dim * bits_per_element(r.dtype);
  const std::int64_t bytes_per_token = bits_per_token / 8;
  const std::int64_t bytes_per_sequence = bytes_per_token * r.tokens;
  const std::int64_t total_bytes = bytes_per_sequence * r.batch;
  const double available_gb = r.gpu_memory_gb * (1.0 - r.overhead_fraction) - r.reserved_gb - r.weights_gb;
  // Rounded to whole bytes so that 192 * 0.9 - 40 = 132.8 GB does not become 132.79999... and lose a slot.
  const double available_bytes = std::max(0.0, std::round(available_gb * kBytesPerGB));
  const auto whole = [](double x) { return static_cast<std::int64_t>(std::floor(x)); };

  json out = {
      {"model", r.model},
      {"layers", r.layers},
      {"kv_dim", r.kv_dim},
      {"kv_dim_from", r.kv_dim_from},
      {"dtype", r.dtype},
      {"bytes_per_element", bits_per_element(r.dtype) / 8.0},
      {"tokens", r.tokens},
      {"batch", r.batch},
      {"bytes_per_token", bytes_per_token},
      {"bytes_per_sequence", bytes_per_sequence},
      {"total_bytes", total_bytes},
      {"total_gb", double(total_bytes) / kBytesPerGB},
      {"gpu_memory_gb", r.gpu_memory_gb},
      {"overhead_fraction", r.overhead_fraction},
      {"reserved_gb", r.reserved_gb},
      {"weights_gb", r.weights_gb},
      {"available_gb", available_gb},
      {"fits", double(total_bytes) <= available_bytes && available_bytes > 0},
      {"max_batch", whole(available_bytes / double(bytes_per_sequence))},
      {"max_tokens", whole(available_bytes / double(bytes_per_token * r.batch))},
      {"units", "GB = 1e9 bytes; available_gb = gpu_memory_gb * (1 - overhead_fraction) - reserved_gb - weights_gb; "
                "max_batch at `tokens`, max_tokens at `batch`"},
  };
  if (r.kv_heads > 0) {
    out["kv_heads"] = r.kv_heads;
    out["head_dim"] = r.head_dim;
  }
  return out;
}

class KvCacheNode final : public CalculatorNode {
 public:
  std::string name() const override { return "kv_cache"; }
  std::string doc() const override {
    return "KV-cache sizing: bytes per token = 2 (K and V) * layers * kv_heads * head_dim * bytes per element; "
           "total for tokens x batch; whether it fits in gpu_memory_gb * (1 - overhead_fraction) - reserved_gb - "
           "weights_gb; the largest batch (at tokens) and context (at batch) that fit. GB = 1e9 bytes.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"model", ParamKind::string, json(), false, "model preset for layers/kv_heads/head_dim: " +
                                                        join(model_preset_names())},
        {"layers", ParamKind::integer, json(), false, "transformer layers (required unless model is given)"},
        {"kv_heads", ParamKind::integer, json(), false, "key/value heads (default: heads)"},
        {"head_dim", ParamKind::integer, json(), false, "head dimension (default: hidden / heads)"},
        {"hidden", ParamKind::integer, json(), false, "model width; alone (no heads) it means MHA: K/V width = hidden"},
        {"heads", ParamKind::integer, json(), false, "query heads (to derive head_dim from hidden)"},
        {"tokens", ParamKind::integer, json(), true, "context length per sequence"},
        {"batch", ParamKind::integer, 1, false, "sequences held at once"},
        {"dtype", ParamKind::string, "fp16", false, "cache element type: fp32, fp16, bf16, fp8, fp4"},
        {"gpu_memory_gb", ParamKind::number, json(), true, "GPU memory in GB (1e9 bytes)"},
        {"overhead_fraction", ParamKind::number, 0.1, false, "fraction of memory unusable (runtime, fragmentation)"},
        {"reserved_gb", ParamKind::number, 0, false, "memory reserved for activations etc., GB"},
        {"weights_gb", ParamKind::number, 0, false, "memory taken by the weights, GB"},
    };
  }
  json calculate(const json& params) const override { return compute(parse(params)); }
};

}  // namespace

std::unique_ptr<NodeType> make_kv_cache_node() { return std::make_unique<KvCacheNode>(); }

}  // namespace aispflow
