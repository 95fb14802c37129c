// Node type `gemm_shapes`: from a model config to the GEMMs one forward pass runs, per phase and size.
// Not hardware-bound: the same params always give the same shapes. Naming convention (docs/nodes.md):
//   <phase>_<b|t><size>_<kind>[_tp<N>]   e.g. decode_b8_qkv_proj, prefill_t4096_mlp_down, decode_b1_moe_down_tp2
#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>
#include <cstdio>

#include "kernels/common/gemm.hpp"
#include "nodes/model_presets.hpp"
#include "nodes/moe_routing.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

namespace {

// Every GEMM kind, in the order a layer runs them (lm_head last, once per forward pass).
const std::vector<std::string>& all_kinds() {
  static const std::vector<std::string> kinds = {"qkv_proj", "attn_out", "mlp_up_gate", "mlp_down",
                                                 "router",   "moe_up_gate", "moe_down", "lm_head"};
  return kinds;
}

struct ShapeRequest {
  bool from_model = false;              // model: and/or config: given
  ModelConfig model;
  std::vector<std::string> phases;
  std::vector<std::int64_t> prefill_tokens;
  std::vector<std::int64_t> decode_batch;
  std::int64_t tp = 1;
  std::set<std::string> include;        // kinds to keep
  json explicit_shapes = json::array(); // {name, m, n, k[, batch]} as given
  std::vector<double> skews;            // routing: Zipf alphas of the MoE expert shapes (empty: balanced)
  std::uint64_t routing_seed = 1;
};

// Named shape sets (`preset:`), added like explicit shapes. kernel-selector: the kernel-selector lab's five
// GEMMs, m, n, k as their names say.
const std::vector<std::pair<std::string, std::vector<kernels::GemmShape>>>& shape_presets() {
  static const std::vector<std::pair<std::string, std::vector<kernels::GemmShape>>> presets = {
      {"kernel-selector",
       {{"prefill_mlp_gather_m8192_n16384_k4096", 8192, 16384, 4096},
        {"prefill_mlp_expand_m16384_n16384_k8192", 16384, 16384, 8192},
        {"decode_mlp_m4096_n4096_k8192", 4096, 4096, 8192},
        {"kv_proj_m4096_n4096_k4096", 4096, 4096, 4096},
        {"attention_qk_m8192_n4096_k4096", 8192, 4096, 4096}}},
  };
  return presets;
}

std::vector<std::string> shape_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, shapes] : shape_presets()) names.push_back(name);
  return names;
}

// routing: {skew: <alpha or list of alphas>, seed: N}
void parse_routing(const json& rt, ShapeRequest& r) {
  if (!rt.is_object()) throw std::invalid_argument("routing: expected a map {skew: <Zipf alpha or list>, seed: N}");
  for (auto it = rt.begin(); it != rt.end(); ++it)
    if (it.key() != "skew" && it.key() != "seed")
      throw std::invalid_argument("routing: unknown field '" + it.key() + "' (expected skew, seed)");
  if (!rt.contains("skew")) throw std::invalid_argument("routing: field 'skew' (Zipf alpha, e.g. 1.35) is required");
  const json skew = rt["skew"].is_array() ? rt["skew"] : json::array({rt["skew"]});
  if (skew.empty()) throw std::invalid_argument("routing: field 'skew' must not be an empty list");
  for (const auto& v : skew) {
    if (!v.is_number() || v.get<double>() < 0)
      throw std::invalid_argument("routing: field 'skew' must hold numbers >= 0 (Zipf alpha), got " + v.dump());
    r.skews.push_back(v.get<double>());
  }
  if (rt.contains("seed")) {
    if (!rt["seed"].is_number_integer() || rt["seed"].get<std::int64_t>() < 0)
      throw std::invalid_argument("routing: field 'seed' must be an integer >= 0, got " + rt["seed"].dump());
    r.routing_seed = rt["seed"].get<std::uint64_t>();
  }
}

// "1.35" -> "zipf1.35": the suffix of routed shapes' names.
std::string skew_tag(double skew) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "zipf%g", skew);
  return buffer;
}

ShapeRequest parse_request(const json& p) {
  ShapeRequest r;
  const json model = p.value("model", json());
  const json config = p.value("config", json());
  r.from_model = !model.is_null() || (config.is_object() && !config.empty());
  if (r.from_model) r.model = resolve_model(model, config);

  r.phases = string_list(p, "phases", {"prefill", "decode"});
  for (const auto& ph : r.phases)
    if (ph != "prefill" && ph != "decode")
      throw std::invalid_argument("phases: unknown phase '" + ph + "' (expected prefill and/or decode)");
  r.prefill_tokens = positive_int_list(p, "prefill_tokens", {512, 4096});
  r.decode_batch = positive_int_list(p, "decode_batch", {1, 8, 64, 128});
  r.tp = positive_int(p, "tp", 1);

  const auto include = string_list(p, "include", all_kinds());
  for (const auto& kind : include) {
    if (std::find(all_kinds().begin(), all_kinds().end(), kind) == all_kinds().end())
      throw std::invalid_argument("include: unknown GEMM kind '" + kind + "' (expected any of: " +
                                  join(all_kinds()) + ")");
    r.include.insert(kind);
  }

  if (p.contains("shapes") && !p["shapes"].is_null()) {
    if (!p["shapes"].is_array()) throw std::invalid_argument("shapes: expected a list of {name, m, n, k}");
    for (std::size_t i = 0; i < p["shapes"].size(); ++i) {
      try {
        (void)kernels::GemmShape::from_json(p["shapes"][i]);
      } catch (const std::exception& e) {
        throw std::invalid_argument("shapes[" + std::to_string(i) + "]: " + e.what());
      }
      r.explicit_shapes.push_back(p["shapes"][i]);
    }
  }
  for (const auto& name : string_list(p, "preset", {})) {
    bool found = false;
    for (const auto& [preset, shapes] : shape_presets()) {
      if (preset != name) continue;
      found = true;
      for (const auto& s : shapes) {
        json j = s.to_json();
        j["kind"] = "preset:" + preset;
        r.explicit_shapes.push_back(j);
      }
    }
    if (!found)
      throw std::invalid_argument("preset: unknown shape preset '" + name + "' (expected any of: " +
                                  join(shape_preset_names()) + ")");
  }
  if (p.contains("routing") && !p["routing"].is_null()) {
    parse_routing(p["routing"], r);
    if (!r.from_model || !r.model.is_moe())
      throw std::invalid_argument("routing: applies to a MoE model's expert GEMMs; give a MoE model: or config:");
  }
  if (!r.from_model && r.explicit_shapes.empty())
    throw std::invalid_argument("give model: (one of: " + join(model_preset_names()) +
                                "), a config: map, an explicit shapes: list or a preset: (" +
                                join(shape_preset_names()) + ")");
  return r;
}

// The per-rank dimensions of one layer under tensor parallelism, checked for the kinds that are kept.
struct LayerDims {
  std::int64_t hidden, q_dim, kv_dim, mlp, expert_mlp, experts, top_k, vocab;
};

LayerDims layer_dims(const ModelConfig& m, std::int64_t tp, const std::set<std::string>& include) {
  auto wants = [&](std::initializer_list<const char*> kinds) {
    for (const char* k : kinds)
      if (include.count(k)) return true;
    return false;
  };
  auto need = [&](std::int64_t value, const char* field, const char* what) {
    if (value <= 0)
      throw std::invalid_argument("config: field '" + std::string(field) + "' must be > 0 for " + what +
                                  " (set it in config:, or leave those kinds out with include:)");
  };
  auto divide = [&](std::int64_t value, const char* field) {
    if (value % tp != 0)
      throw std::invalid_argument("tp: " + std::to_string(tp) + " does not divide " + field + " = " +
                                  std::to_string(value));
    return value / tp;
  };
  LayerDims d{};
  d.hidden = m.hidden;
  if (wants({"qkv_proj", "attn_out", "mlp_up_gate", "mlp_down", "router", "moe_up_gate", "moe_down", "lm_head"}))
    need(m.hidden, "hidden", "every GEMM");
  if (wants({"qkv_proj", "attn_out"})) {
    need(m.heads, "heads", "qkv_proj/attn_out");
    if (m.head_dim == 0 && m.hidden % m.heads != 0)
      throw std::invalid_argument("config: hidden = " + std::to_string(m.hidden) + " is not a multiple of heads = " +
                                  std::to_string(m.heads) + "; give head_dim explicitly");
    const std::int64_t head_dim = m.effective_head_dim();
    const std::int64_t kv = m.effective_kv_heads();
    const std::int64_t q_heads = divide(m.heads, "heads");
    // KV heads are split across ranks when there are enough of them; with fewer KV heads than ranks each
    // rank keeps one replicated KV head (the usual GQA practice), which needs tp to be a multiple of them.
    std::int64_t kv_per_rank = 0;
    if (kv % tp == 0) kv_per_rank = kv / tp;
    else if (tp % kv == 0) kv_per_rank = 1;
    else
      throw std::invalid_argument("tp: " + std::to_string(tp) + " neither divides kv_heads = " + std::to_string(kv) +
                                  " nor is a multiple of it");
    d.q_dim = q_heads * head_dim;
    d.kv_dim = kv_per_rank * head_dim;
  }
  if (!m.is_moe() && wants({"mlp_up_gate", "mlp_down"})) {
    need(m.intermediate, "intermediate", "the dense MLP (mlp_up_gate/mlp_down)");
    d.mlp = divide(m.intermediate, "intermediate");
  }
  if (m.is_moe()) {
    d.experts = m.experts;
    if (wants({"moe_up_gate", "moe_down"})) {
      need(m.top_k, "top_k", "moe_up_gate/moe_down");
      if (m.top_k > m.experts)
        throw std::invalid_argument("config: top_k = " + std::to_string(m.top_k) + " exceeds experts = " +
                                    std::to_string(m.experts));
      need(m.expert_intermediate, "expert_intermediate", "moe_up_gate/moe_down");
      d.expert_mlp = divide(m.expert_intermediate, "expert_intermediate");
      d.top_k = m.top_k;
    }
  }
  if (include.count("lm_head")) {
    need(m.vocab, "vocab", "lm_head");
    d.vocab = (m.vocab + tp - 1) / tp;   // vocab-parallel: the last rank's slice is padded
  }
  return d;
}

json shape_entry(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                 const std::string& kind, const std::string& phase, std::int64_t tokens, const ShapeRequest& r,
                 std::int64_t per_forward, const std::vector<std::int64_t>& groups = {}) {
  kernels::GemmShape s;
  s.groups = groups;
  s.name = name;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  json j = {{"name", name}, {"m", m},         {"n", n},           {"k", k},         {"batch", batch},
            {"kind", kind}, {"phase", phase}, {"tokens", tokens}, {"model", r.model.name},
            {"tp", r.tp},   {"flops", s.flops()}};
  if (per_forward > 0) j["per_forward"] = per_forward;
  if (!groups.empty()) j["groups"] = groups;
  return j;
}

// The GEMMs of one phase at one size (tokens = prompt length for prefill, batch size for decode).
void add_phase_shapes(const ShapeRequest& r, const LayerDims& d, const std::string& phase, std::int64_t tokens,
                      json& out) {
  const std::string prefix = phase + (phase == "decode" ? "_b" : "_t") + std::to_string(tokens) + "_";
  const std::string suffix = r.tp > 1 ? "_tp" + std::to_string(r.tp) : "";
  const std::int64_t layers = r.model.layers;
  auto add = [&](const std::string& kind, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                 std::int64_t per_forward) {
    if (!r.include.count(kind)) return;
    out.push_back(shape_entry(prefix + kind + suffix, m, n, k, batch, kind, phase, tokens, r, per_forward));
  };
  add("qkv_proj", tokens, d.q_dim + 2 * d.kv_dim, d.hidden, 1, layers);
  add("attn_out", tokens, d.hidden, d.q_dim, 1, layers);
  if (!r.model.is_moe()) {
    add("mlp_up_gate", tokens, 2 * d.mlp, d.hidden, 1, layers);   // gate and up fused into one GEMM
    add("mlp_down", tokens, d.hidden, d.mlp, 1, layers);
  } else {
    add("router", tokens, d.experts, d.hidden, 1, layers);
    // Each token goes to top_k of the experts; with balanced routing an expert sees tokens*top_k/experts of
    // them. The grouped GEMM is `experts` independent GEMMs at that M (rounded up, at least one row).
    const std::int64_t per_expert = std::max<std::int64_t>(1, (tokens * d.top_k + d.experts - 1) / d.experts);
    if (r.skews.empty()) {
      add("moe_up_gate", per_expert, 2 * d.expert_mlp, d.hidden, d.experts, layers);
      add("moe_down", per_expert, d.hidden, d.expert_mlp, d.experts, layers);
    }
    // Skewed routing: the experts' real row counts (`groups`), M = the largest; one shape per skew.
    for (const double skew : r.skews) {
      const auto groups = routed_tokens_per_expert(tokens, d.experts, d.top_k, skew, r.routing_seed);
      const std::int64_t largest = *std::max_element(groups.begin(), groups.end());
      for (const auto& [kind, n, k] : {std::tuple<std::string, std::int64_t, std::int64_t>{"moe_up_gate", 2 * d.expert_mlp, d.hidden},
                                       {"moe_down", d.hidden, d.expert_mlp}}) {
        if (!r.include.count(kind)) continue;
        json e = shape_entry(prefix + kind + "_" + skew_tag(skew) + suffix, largest, n, k, d.experts, kind, phase,
                             tokens, r, layers, groups);
        e["routing"] = {{"skew", skew}, {"seed", r.routing_seed}, {"top_k", d.top_k}};
        out.push_back(e);
      }
    }
  }
  add("lm_head", tokens, d.vocab, d.hidden, 1, 1);
}

json build_shapes(const ShapeRequest& r) {
  json shapes = json::array();
  if (r.from_model) {
    const LayerDims d = layer_dims(r.model, r.tp, r.include);
    for (const auto& phase : r.phases) {
      const auto& sizes = phase == "prefill" ? r.prefill_tokens : r.decode_batch;
      for (std::int64_t size : sizes) add_phase_shapes(r, d, phase, size, shapes);
    }
  }
  for (const auto& given : r.explicit_shapes) {
    const auto s = kernels::GemmShape::from_json(given);
    json j = {{"name", s.name}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"batch", s.batch},
              {"kind", given.value("kind", "explicit")}, {"phase", given.value("phase", "")},
              {"tokens", s.m}, {"model", given.value("model", "")}, {"tp", 1}, {"flops", s.flops()}};
    if (!s.groups.empty()) j["groups"] = s.groups;
    shapes.push_back(j);
  }
  // Names identify shapes in records, expectations and comparisons: they must be unique.
  std::set<std::string> seen;
  for (const auto& s : shapes)
    if (!seen.insert(s["name"].get<std::string>()).second)
      throw std::invalid_argument("shapes: the name '" + s["name"].get<std::string>() +
                                  "' occurs twice; names must be unique");
  return shapes;
}

class GemmShapesNode final : public NodeType {
 public:
  std::string name() const override { return "gemm_shapes"; }
  std::string doc() const override {
    return "The GEMMs of a transformer's forward pass, from a model preset or config: per layer QKV projection, "
           "attention output, dense MLP up/gate and down or MoE router and per-expert up/gate and down (grouped at "
           "the expected tokens per expert), plus the LM head; for prefill (prompt lengths) and decode (batch "
           "sizes), optionally per tensor-parallel rank. Output {\"shapes\": [{name, m, n, k, batch, kind, phase, "
           "tokens, model, tp, flops, per_forward}]}. Presets: " + join(model_preset_names()) + ".";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"model", ParamKind::string, json(), false, "model preset: " + join(model_preset_names())},
        {"config", ParamKind::map, json(), false,
         "model fields, overriding the preset's: " + join(model_config_fields())},
        {"phases", ParamKind::list, json::array({"prefill", "decode"}), false, "prefill and/or decode"},
        {"prefill_tokens", ParamKind::list, json::array({512, 4096}), false, "prompt lengths for prefill"},
        {"decode_batch", ParamKind::list, json::array({1, 8, 64, 128}), false, "batch sizes for decode"},
        {"tp", ParamKind::integer, 1, false,
         "tensor-parallel degree: shards N of qkv_proj/mlp_up_gate/moe_up_gate/lm_head and K of "
         "attn_out/mlp_down/moe_down"},
        {"include", ParamKind::list, json(), false, "GEMM kinds to keep (default all): " + join(all_kinds())},
        {"shapes", ParamKind::list, json(), false,
         "explicit shapes [{name, m, n, k[, batch][, groups]}]; alone they are the output, with a model they are added"},
        {"preset", ParamKind::list, json(), false, "named shape sets added like shapes:: " + join(shape_preset_names())},
        {"routing", ParamKind::map, json(), false,
         "MoE expert shapes under skewed routing {skew: <Zipf alpha or list>, seed: N}: per-expert rows drawn "
         "(sum = tokens x top_k) and recorded as groups: [m_0, ...], M = the largest; one shape per skew"},
    };
  }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};   // checked again once ${refs} are substituted
    try {
      (void)build_shapes(parse_request(params));
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  NodeOutput run(NodeContext& ctx) const override {
    ShapeRequest request;
    json shapes;
    try {
      request = parse_request(ctx.params);
      shapes = build_shapes(request);
    } catch (const std::invalid_argument& e) {
      throw NodeError(e.what());
    }
    NodeOutput out;
    out.data["shapes"] = std::move(shapes);
    if (request.from_model) out.data["model"] = request.model.to_json();
    out.data["tp"] = request.tp;
    ctx.info(std::to_string(out.data["shapes"].size()) + " shapes");
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_gemm_shapes_node() { return std::make_unique<GemmShapesNode>(); }

}  // namespace aispflow
