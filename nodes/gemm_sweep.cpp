// Node type `gemm_sweep`: providers x shapes x dtypes -> verified, timed GEMM records (docs/records.md).
// Hardware-bound (the environment fingerprint is part of its cache key) and exclusive (nothing else runs
// while it times).
#include "nodes/gemm_sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "kernels/cpu/cpu_backend.hpp"
#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"
#include "pipeline/registry.hpp"

namespace aispflow {

bool is_gpu_provider_name(const std::string& name) {
  const auto& gpu = kernels::gpu_provider_names();
  // Plugin providers enqueue CUDA work: they are GPU providers too.
  return std::find(gpu.begin(), gpu.end(), name) != gpu.end() || kernels::GemmPlugins::instance().find(name);
}

std::vector<std::string> builtin_provider_names() {
  std::vector<std::string> names = {"auto"};
  for (const auto& n : kernels::cpu_provider_names()) names.push_back(n);
  for (const auto& n : kernels::gpu_provider_names()) names.push_back(n);
  return names;
}

std::vector<std::string> expand_providers(const kernels::Backend& backend, const std::vector<std::string>& requested) {
  const auto available = backend.provider_names();
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& name : requested) {
    if (name == "auto") {
      for (const auto& p : backend.auto_providers()) add(p);
    } else if (std::find(available.begin(), available.end(), name) != available.end() ||
               is_gpu_provider_name(name)) {
      add(name);  // a GPU provider this backend lacks gives skipped records, with the reason
    } else {
      const std::string hint = closest_match(name, available);
      throw std::invalid_argument("providers: unknown provider '" + name + "' on the " + backend.backend_name() +
                                  " backend" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                                  "; available: auto, " + join(available));
    }
  }
  return out;
}

namespace {

// Makes a provider's record safe to publish: ok means verified and timed, anything else carries no timing.
void enforce_honesty(kernels::GemmRecord& r) {
  if (r.status == "ok" && !r.verified) {
    r.status = "failed";
    r.reason = "the provider reported ok without verifying the result; not timed";
  } else if (r.status == "ok" && (!r.time || r.time->samples <= 0 || r.time->median_ms <= 0)) {
    r.status = "failed";
    r.reason = "the provider reported ok without a timing";
  }
  if (r.status != "ok") r.time.reset();
  if (r.status != "ok" && r.reason.empty()) r.reason = "the provider gave no reason";
}

kernels::GemmRecord make_record(const std::string& provider, const kernels::GemmCase& c, const std::string& status,
                                const std::string& reason) {
  kernels::GemmRecord r = kernels::GemmRecord::of(provider, "", c);
  r.status = status;
  r.reason = reason;
  return r;
}

std::string describe(const kernels::GemmRecord& r) {
  if (r.status != "ok") return r.status + ": " + r.reason;
  char buf[128];
  const double tflops = r.shape.flops() / (r.time->median_ms * 1e-3) / 1e12;
  std::snprintf(buf, sizeof buf, "ok %.4g ms (stdrel %.2g%%, %d samples) %.4g TFLOP/s", r.time->median_ms,
                r.time->stdrel * 100, r.time->samples, tflops);
  return buf;
}

}  // namespace

json run_sweep(kernels::Backend& backend, const SweepPlan& plan, const SweepHooks& hooks) {
  const json env = backend.fingerprint();
  // Resolve each provider and its requirement check once.
  struct Resolved {
    std::string name;
    kernels::GemmProvider* provider;
    std::optional<std::string> unmet;
  };
  std::vector<Resolved> providers;
  for (const auto& name : plan.providers) {
    const kernels::GemmPluginProvider* plugin = kernels::GemmPlugins::instance().find(name);
    kernels::GemmProvider* p = plugin ? backend.plugin_provider(*plugin) : backend.provider(name);
    if (p) {
      const json options = plan.provider_options.value(name, json::object());
      if (const std::string problem = p->check_options(options); !problem.empty())
        throw NodeError("provider_options." + name + ": " + problem);
      providers.push_back({name, p, backend.unmet(p->requirements())});
    } else if (is_gpu_provider_name(name)) {
      providers.push_back({name, nullptr, "requires a GPU (the cuda backend); this run uses the " +
                                              backend.backend_name() + " backend"});
    } else {
      throw NodeError("provider '" + name + "' is not offered by the " + backend.backend_name() + " backend");
    }
  }

  json records = json::array();
  std::map<std::string, int> summary = {{"ok", 0}, {"failed", 0}, {"skipped", 0}};
  std::vector<kernels::GemmCase> cases;
  // Shape-major order keeps every provider's result for one (shape, dtype, layout, epilogue) next to each other.
  for (const auto& shape : plan.shapes)
    for (const auto& dtype : plan.dtypes)
      for (const auto& layout : plan.layouts)
        for (const auto& epilogue : plan.epilogues) cases.push_back({shape, dtype, layout, epilogue});
  const std::size_t total = cases.size() * providers.size();
  std::size_t done = 0;
  for (const auto& plain_case : cases) {
    for (const auto& rp : providers) {
      kernels::GemmCase c = plain_case;
      c.options = plan.provider_options.value(rp.name, json::object());
      if (hooks.cancelled && hooks.cancelled())
        throw NodeError("cancelled after " + std::to_string(done) + " of " + std::to_string(total) + " runs");
      std::vector<kernels::GemmRecord> results;
      if (rp.unmet) {
        results.push_back(make_record(rp.name, c, "skipped", *rp.unmet));
      } else if (auto why = rp.provider->unsupported(c)) {
        results.push_back(make_record(rp.name, c, "skipped", *why));
      } else {
        try {
          results = rp.provider->run(c, plan.timing);
        } catch (const std::exception& e) {
          // The contract says providers report kernel failures as records; one that throws anyway still
          // yields a record rather than ending the sweep.
          results = {make_record(rp.name, c, "failed", std::string("the provider threw: ") + e.what())};
        }
        if (results.empty()) results.push_back(make_record(rp.name, c, "failed", "the provider returned no record"));
      }
      ++done;
      for (auto& r : results) {
        // The record names what was asked for, even if the provider left a field empty.
        if (r.provider.empty()) r.provider = rp.name;
        if (r.dtype.empty()) r.dtype = c.dtype;
        if (r.shape.m == 0) r.shape = c.shape;
        if (r.shape.name.empty()) r.shape.name = c.shape.name;
        r.layout = c.layout;
        r.epilogue = c.epilogue;
        // Every record of a plugin provider names the plugin, skipped ones included.
        if (const auto* plugin = kernels::GemmPlugins::instance().find(rp.name); plugin && !r.extra.contains("plugin"))
          r.extra["plugin"] = plugin->plugin_json();
        enforce_honesty(r);
        ++summary[r.status];
        records.push_back(r.to_json(env));
      }
      if (hooks.log)
        hooks.log("[" + std::to_string(done) + "/" + std::to_string(total) + "] " + rp.name + " " + c.shape.name + " " +
                  c.label() + ": " + describe(results.front()));
    }
  }
  return {{"records", std::move(records)},
          {"env", env},
          {"backend", backend.backend_name()},
          {"providers", plan.providers},
          {"dtypes", plan.dtypes},
          {"layouts", plan.layouts},
          {"epilogues", plan.epilogues},
          {"timing", plan.timing.to_json()},
          {"summary", summary}};
}

namespace {

const std::vector<std::string>& known_dtypes() {
  static const std::vector<std::string> names = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2",
                                                 "mxfp8", "nvfp4"};   // block-scaled: docs/records.md
  return names;
}

// Provider names that can be checked without constructing a backend: the CPU providers every backend
// offers, plus GPU provider names (checked against the real backend when the node runs).
std::string check_provider_names(const std::vector<std::string>& names) {
  std::vector<std::string> known = builtin_provider_names();
  for (const auto& n : kernels::GemmPlugins::instance().names()) known.push_back(n);
  for (const auto& name : names) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string hint = closest_match(name, known);
    return "providers: unknown provider '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
           "; known: " + join(known) + " (GPU providers run on the cuda backend; a workflow's `plugins:` add more)";
  }
  return {};
}

std::vector<std::string> read_dtypes(const json& params) {
  auto dtypes = string_list(params, "dtypes", {"fp32"});
  if (dtypes.empty()) throw std::invalid_argument("dtypes: the list is empty");
  for (const auto& d : dtypes)
    if (std::find(known_dtypes().begin(), known_dtypes().end(), d) == known_dtypes().end())
      throw std::invalid_argument("dtypes: unknown dtype '" + d + "' (expected any of: " + join(known_dtypes()) + ")");
  return dtypes;
}

// The layout / epilogue axes: a name or a list of names from `allowed`; absent = {fallback}. Absent params stay
// absent (no default is written into the params), so workflows written before these axes keep their cache keys.
std::vector<std::string> read_axis(const json& params, const std::string& field, const std::vector<std::string>& allowed,
                                   const std::string& fallback) {
  auto values = string_list(params, field, {fallback});
  if (values.empty()) throw std::invalid_argument(field + ": the list is empty");
  for (const auto& v : values)
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      throw std::invalid_argument(field + ": unknown value '" + v + "' (expected any of: " + join(allowed) + ")");
  std::vector<std::string> unique;
  for (const auto& v : values)
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(v);
  return unique;
}

std::vector<std::string> read_layouts(const json& params) {
  return read_axis(params, "layout", kernels::gemm_layouts(), "nn");
}
std::vector<std::string> read_epilogues(const json& params) {
  return read_axis(params, "epilogue", kernels::gemm_epilogues(), "none");
}

// provider_options: a map from a provider of the list to a map of its options. The values themselves are checked
// by the provider when the node runs (GPU providers live in the CUDA plugin).
std::string check_provider_options(const json& params) {
  if (!has_value(params, "provider_options")) return {};
  const json& po = params["provider_options"];
  if (!po.is_object()) return "provider_options: expected a map of provider -> options";
  const auto providers = string_list(params, "providers", {"auto"});
  for (auto it = po.begin(); it != po.end(); ++it) {
    if (std::find(providers.begin(), providers.end(), it.key()) == providers.end())
      return "provider_options: '" + it.key() + "' is not in providers (" + join(providers) + ")";
    if (!it.value().is_object()) return "provider_options." + it.key() + ": expected a map of options";
  }
  return {};
}

// Shapes from the inline param, else from the inputs' "shapes"; then filter and max_shapes.
std::vector<kernels::GemmShape> select_shapes(const NodeContext& ctx) {
  const json& p = ctx.params;
  const bool inline_shapes = has_value(p, "shapes");
  const json source = inline_shapes ? p["shapes"] : collect_shapes(ctx);
  if (!source.is_array() || source.empty())
    throw NodeError("no shapes to sweep: give shapes: [{name, m, n, k}] or an input node that produces shapes "
                    "(e.g. gemm_shapes)");
  std::vector<kernels::GemmShape> shapes;
  std::map<std::string, kernels::GemmShape> by_name;
  for (std::size_t i = 0; i < source.size(); ++i) {
    kernels::GemmShape s;
    try {
      s = kernels::GemmShape::from_json(source[i]);
    } catch (const std::exception& e) {
      std::string from = inline_shapes ? "param shapes[" + std::to_string(i) + "]"
                                       : "input " + source[i].value("_from", std::string("?")) + " shape #" +
                                             std::to_string(i);
      throw NodeError(from + ": " + e.what());
    }
    auto [it, fresh] = by_name.emplace(s.name, s);
    if (!fresh) {
      const auto& o = it->second;
      if (o.m != s.m || o.n != s.n || o.k != s.k || o.batch != s.batch || o.groups != s.groups)
        throw NodeError("two different shapes are both named '" + s.name + "'; shape names must be unique");
      continue;   // the same shape from two inputs: sweep it once
    }
    shapes.push_back(s);
  }
  const std::size_t before = shapes.size();
  if (has_value(p, "filter")) {
    if (!p["filter"].is_string()) throw NodeError("filter: expected a string, got " + p["filter"].dump());
    const std::string filter = p["filter"].get<std::string>();
    std::erase_if(shapes, [&](const kernels::GemmShape& s) { return s.name.find(filter) == std::string::npos; });
    if (shapes.empty())
      throw NodeError("filter '" + filter + "' matches none of the " + std::to_string(before) + " shape names");
  }
  if (has_value(p, "max_shapes")) {
    std::size_t max = 0;
    try {
      max = static_cast<std::size_t>(positive_int(p, "max_shapes", 0));
    } catch (const std::invalid_argument& e) {
      throw NodeError(e.what());
    }
    if (shapes.size() > max) shapes.resize(max);
  }
  return shapes;
}

class GemmSweepNode final : public NodeType {
 public:
  std::string name() const override { return "gemm_sweep"; }
  std::string doc() const override {
    return "Verifies, then times, every provider x shape x dtype and writes one record each (docs/records.md): "
           "status ok (verified against a float64 reference, then timed until stable: median, min, max, stdrel, "
           "TFLOP/s, GB/s, intensity), failed (never timed) or skipped (unsupported, or requirements unmet, with the "
           "reason). Shapes come from the shapes param or from the inputs (gemm_shapes). `auto` = the active "
           "backend's default providers.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"providers", ParamKind::list, json::array({"auto"}), false,
         "GEMM providers (cpu.naive, cpu.blocked, cpu.openblas, cublaslt, cublaslt.sweep, ..., the providers of the "
         "workflow's plugins: `aispflow providers`) or auto"},
        {"shapes", ParamKind::list, json(), false, "inline shapes [{name, m, n, k[, batch]}]; default: the inputs'"},
        {"dtypes", ParamKind::list, json::array({"fp32"}), false, "data types: " + join(known_dtypes())},
        {"layout", ParamKind::any, json(), false,
         "B's storage, a name or a list: nn (B is K x N, the default) | nt (B is N x K, a Linear weight)"},
        {"epilogue", ParamKind::any, json(), false,
         "fused output operation, a name or a list: none (default) | bias | bias_gelu (GELU, tanh form)"},
        {"provider_options", ParamKind::map, json(), false,
         "per provider options, e.g. {ours.cluster: {autotune: true}} (docs/nodes.md)"},
        timing_param(),
        {"max_shapes", ParamKind::integer, json(), false, "sweep only the first N shapes (quick runs)"},
        {"filter", ParamKind::string, json(), false, "keep shapes whose name contains this text"},
    };
  }
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 1}; }
  // A sweep of GPU providers only needs a GPU; a mixed list runs anywhere (its GPU providers skip, with
  // the reason, where there is none). The node is exclusive, so it never shares a GPU while timing.
  Requirements requirements(const json& params) const override {
    Requirements req;
    try {
      const auto names = string_list(params, "providers", {"auto"});
      if (!names.empty() && std::all_of(names.begin(), names.end(), is_gpu_provider_name)) {
        req.gpus = 1;
        req.why = "GPU providers " + join(names);
      }
    } catch (const std::exception&) {
      // Malformed providers are reported by check_params.
    }
    return req;
  }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};
    try {
      const auto providers = string_list(params, "providers", {"auto"});
      if (providers.empty()) return "providers: the list is empty";
      if (auto err = check_provider_names(providers); !err.empty()) return err;
      (void)read_dtypes(params);
      (void)read_layouts(params);
      (void)read_epilogues(params);
      (void)timing_policy(params);
      if (auto err = check_provider_options(params); !err.empty()) return err;
      if (has_value(params, "max_shapes")) (void)positive_int(params, "max_shapes", 0);
      if (has_value(params, "filter") && !params["filter"].is_string()) return "filter: expected a string";
      if (has_value(params, "shapes")) {
        if (!params["shapes"].is_array()) return "shapes: expected a list of {name, m, n, k}";
        for (std::size_t i = 0; i < params["shapes"].size(); ++i) {
          try {
            (void)kernels::GemmShape::from_json(params["shapes"][i]);
          } catch (const std::exception& e) {
            return "shapes[" + std::to_string(i) + "]: " + e.what();
          }
        }
      }
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  // The plugins whose providers this sweep names: their content is part of its key (a rebuilt plugin re-runs
  // exactly the sweeps that use it).
  std::vector<std::string> key_files(const json& params) const override {
    std::vector<std::string> files;
    try {
      for (const auto& name : string_list(params, "providers", {"auto"}))
        if (const auto* plugin = kernels::GemmPlugins::instance().find(name)) {
          const std::string path = plugin->plugin_path.string();
          if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
        }
    } catch (const std::exception&) {
      // Malformed providers are reported by check_params.
    }
    return files;
  }
  NodeOutput run(NodeContext& ctx) const override {
    // Provider names are checked against the active backend here (check_params only knows the CPU ones).
    kernels::Backend& backend = backend_of(ctx);
    SweepPlan plan;
    try {
      plan.providers = expand_providers(backend, string_list(ctx.params, "providers", {"auto"}));
      plan.dtypes = read_dtypes(ctx.params);
      plan.layouts = read_layouts(ctx.params);
      plan.epilogues = read_epilogues(ctx.params);
      if (has_value(ctx.params, "provider_options")) plan.provider_options = ctx.params["provider_options"];
      plan.timing = timing_policy(ctx.params);
    } catch (const std::invalid_argument& e) {
      throw NodeError(e.what());
    }
    if (plan.providers.empty()) throw NodeError("providers: `auto` named no provider on the " + backend.backend_name() +
                                                " backend");
    plan.shapes = select_shapes(ctx);
    ctx.info("sweeping " + std::to_string(plan.shapes.size()) + " shapes x " + std::to_string(plan.dtypes.size()) +
             " dtypes x " + std::to_string(plan.layouts.size() * plan.epilogues.size()) +
             " layout/epilogue variants x providers " + join(plan.providers));
    NodeOutput out;
    out.data = run_sweep(backend, plan, {[&ctx] { return ctx.cancelled(); }, [&ctx](const std::string& s) { ctx.info(s); }});
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_gemm_sweep_node() { return std::make_unique<GemmSweepNode>(); }

}  // namespace aispflow
