#include "kernels/cuda/plugin_provider.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"

namespace aispflow::kernels::cuda {

namespace {

int plugin_elem(Elem e) {
  switch (e) {
    case Elem::f32: return AISPFLOW_ELEM_F32;
    case Elem::f16: return AISPFLOW_ELEM_F16;
    case Elem::bf16: return AISPFLOW_ELEM_BF16;
    case Elem::e4m3: return AISPFLOW_ELEM_E4M3;
  }
  return 0;
}

// The case as the plugin sees it. `dtype_name` points into `spec`, which must outlive the case.
aispflow_gemm_case_v1_t plugin_case(const GemmCase& c, const LtDtype& spec, bool b_transposed, float scale_a,
                                  float scale_b) {
  aispflow_gemm_case_v1_t g{};
  g.m = c.shape.m;
  g.n = c.shape.n;
  g.k = c.shape.k;
  g.batch = c.shape.batch;
  g.dtype = plugin_dtype_bit(c.dtype);
  g.dtype_name = spec.name.c_str();
  g.layout = b_transposed ? AISPFLOW_LAYOUT_NT : AISPFLOW_LAYOUT_NN;
  g.epilogue = plugin_epilogue_bit(c.epilogue);
  g.ab_elem = plugin_elem(spec.ab);
  g.c_elem = plugin_elem(spec.c);
  g.scale_a = scale_a;
  g.scale_b = scale_b;
  const auto& sys = system_info();
  g.device = sys.devices.empty() ? -1 : 0;
  g.compute_capability = sys.devices.empty() ? 0 : sys.devices.front().compute_capability();
  return g;
}

}  // namespace

PluginGemmProvider::PluginGemmProvider(GemmPluginProvider entry, std::function<GpuContext&()> context)
    : entry_(std::move(entry)), context_(std::move(context)) {}

Requirements PluginGemmProvider::requirements() const {
  Requirements r;
  r.gpus = 1;
  r.why = entry_.name + " (plugin " + entry_.plugin_path.filename().string() + ")";
  return r;
}

std::string PluginGemmProvider::check_options(const json& options) const {
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (it.key() == "autotune") {
      if (!it.value().is_boolean()) return "autotune: expected true or false, got " + it.value().dump();
    } else if (it.key() == "config") {
      const auto names = entry_.config_names();
      if (!it.value().is_string()) return "config: expected a configuration name, got " + it.value().dump();
      if (std::find(names.begin(), names.end(), it.value().get<std::string>()) == names.end()) {
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        return "config: unknown configuration '" + it.value().get<std::string>() + "' of " + entry_.name +
               "; known: " + known;
      }
    } else {
      return "unknown option '" + it.key() + "' (" + entry_.name + " takes: config, autotune)";
    }
  }
  return {};
}

std::vector<int> PluginGemmProvider::chosen(const GemmCase& c, const aispflow_gemm_case_v1_t& gemm,
                                            std::string* why) const {
  const aispflow_gemm_provider_v1_t& t = *entry_.table;
  auto declines = [&](int config) -> const char* { return t.check ? t.check(&gemm, config) : nullptr; };
  std::vector<int> out;
  if (c.options.contains("config")) {
    const auto names = entry_.config_names();
    const int i = int(std::find(names.begin(), names.end(), c.options["config"].get<std::string>()) - names.begin());
    if (const char* no = declines(i)) *why = names[std::size_t(i)] + ": " + no;
    else out.push_back(i);
    return out;
  }
  if (c.options.value("autotune", false)) {
    for (int i = 0; i < t.config_count; ++i)
      if (!declines(i)) out.push_back(i);
    if (out.empty()) *why = std::string("no configuration of ") + entry_.name + " accepts it; the first: " + declines(0);
    return out;
  }
  if (t.default_config) {
    const int i = t.default_config(&gemm);
    if (i < 0 || i >= t.config_count) {
      *why = entry_.name + "'s default_config() returned " + std::to_string(i) + ", not a configuration index";
    } else if (const char* no = declines(i)) {
      *why = no;
    } else {
      out.push_back(i);
    }
    return out;
  }
  for (int i = 0; i < t.config_count; ++i)
    if (!declines(i)) return {i};
  *why = declines(0);
  return out;
}

std::optional<std::string> PluginGemmProvider::unsupported(const GemmCase& c) const {
  const aispflow_gemm_provider_v1_t& t = *entry_.table;
  const auto spec = lt_dtype(c.dtype);
  if (!spec || !(t.dtypes & plugin_dtype_bit(c.dtype))) {
    std::string offered;
    for (const auto& d : plugin_dtype_names(t.dtypes)) offered += (offered.empty() ? "" : ", ") + d;
    return entry_.name + " offers " + offered + "; not " + c.dtype;
  }
  if (!(t.layouts & plugin_layout_bit(c.layout))) return entry_.name + " does not offer layout " + c.layout;
  if (!(t.epilogues & plugin_epilogue_bit(c.epilogue))) return entry_.name + " does not offer epilogue " + c.epilogue;
  if (c.shape.m <= 0 || c.shape.n <= 0 || c.shape.k <= 0 || c.shape.batch <= 0) return std::string("empty shape");
  const bool b_transposed = spec->b_transposed || c.layout == "nt";
  // B is stored N x K for fp8 whatever the layout (GemmProblem): the plugin must offer that storage.
  if (!(t.layouts & (b_transposed ? AISPFLOW_LAYOUT_NT : AISPFLOW_LAYOUT_NN)))
    return entry_.name + " does not offer B stored " + (b_transposed ? "N x K" : "K x N") + ", which " + c.dtype +
           " uses";
  const auto& sys = system_info();
  if (sys.devices.empty()) return "no CUDA device: " + sys.why_no_device;
  const aispflow_gemm_case_v1_t gemm = plugin_case(c, *spec, b_transposed, 1.0f, 1.0f);
  std::string why;
  if (chosen(c, gemm, &why).empty()) return why;
  const double need = GemmProblem::device_bytes(c.shape, *spec) + 4.0 * double(kGuardBytes);
  const double have = sys.devices.front().memory_gib * double(1ull << 30);
  if (need > have) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "needs %.2f GiB of GPU memory; the device has %.2f GiB",
                  need / double(1ull << 30), have / double(1ull << 30));
    return std::string(buffer);
  }
  return std::nullopt;
}

std::string PluginGemmProvider::run_error(int code) const {
  const char* text = entry_.table->error_string ? entry_.table->error_string(code) : nullptr;
  return entry_.name + "'s run() returned error " + std::to_string(code) + (text ? std::string(": ") + text : "");
}

std::vector<GemmRecord> PluginGemmProvider::run(const GemmCase& c, const TimingPolicy& timing) {
  GemmRecord rec = GemmRecord::of(entry_.name, entry_.name, c);
  rec.extra["plugin"] = entry_.plugin_json();
  if (auto why = unsupported(c)) {
    rec.status = "skipped";
    rec.reason = *why;
    return {rec};
  }
  try {
    GpuContext& ctx = context_();
    std::lock_guard busy(ctx.busy());
    ScopedDevice on(ctx.device());
    const LtDtype spec = *lt_dtype(c.dtype);
    const std::uint64_t seed = random_seed();
    const int copies = operand_copies_for(timing, c.shape, spec, ctx.device());
    GemmVariant variant = GemmVariant::of(c);
    variant.c_guard_bytes = kGuardBytes;
    GemmProblem problem(c.shape, spec, seed, ctx.stream(), copies, variant);
    record_problem(rec, problem, seed);
    rec.extra["verification"] =
        "every element vs the CUDA fp32-accumulating reference GEMM on the same random inputs (kernels/cuda/"
        "gemm_data.cu), epilogue included; output poisoned with NaN before the run; first and last operand copy; "
        "guard bytes around every copy of C checked after verification and after timing";

    const aispflow_gemm_case_v1_t gemm =
        plugin_case(c, problem.dtype(), problem.b_transposed(), problem.scale_a(), problem.scale_b());
    std::string why;
    const std::vector<int> configs = chosen(c, gemm, &why);
    if (configs.empty()) {
      rec.status = "skipped";
      rec.reason = why;
      return {rec};
    }
    const aispflow_gemm_provider_v1_t* table = entry_.table;
    std::size_t workspace_bytes = 0;
    for (int i : configs)
      if (table->workspace_bytes) workspace_bytes = std::max(workspace_bytes, table->workspace_bytes(&gemm, i));
    auto workspace = std::make_shared<DeviceBuffer>(workspace_bytes);
    const bool fp8 = spec.ab == Elem::e4m3;
    std::vector<SearchCandidate> candidates;
    for (int i : configs) {
      SearchCandidate sc;
      sc.kernel = table->config_names[i];
      sc.identity = {{"config", sc.kernel}};
      auto bind = [this, table, i, &problem, workspace, fp8](const aispflow_gemm_case_v1_t& g) -> BoundLaunch {
        return [this, table, g, i, &problem, workspace, fp8](cudaStream_t s, int copy) {
          const int code = table->run(&g, i, problem.a(copy), problem.b(copy), problem.c(copy),
                                      fp8 ? problem.device_scale_a() : nullptr, fp8 ? problem.device_scale_b() : nullptr,
                                      problem.bias(), workspace->get(), s);
          if (code != 0) throw CudaError(run_error(code));
        };
      };
      sc.launch = bind(gemm);
      // With an epilogue, the same configuration without it, where the plugin offers that: the epilogue's own
      // check needs it (candidate_search.hpp); without it a fused record fails verification, never passes unchecked.
      if (problem.epilogue() != Epilogue::none && (table->epilogues & plugin_epilogue_bit("none"))) {
        aispflow_gemm_case_v1_t bare = gemm;
        bare.epilogue = plugin_epilogue_bit("none");
        if (!table->check || table->check(&bare, i) == nullptr) sc.bare = bind(bare);
      }
      candidates.push_back(std::move(sc));
    }
    const bool autotune = c.options.value("autotune", false);
    auto winner = run_candidate_search(candidates, problem, ctx.harness(), timing);
    // Timing ran thousands of launches on every copy: a stray write there fails the record as well.
    std::optional<std::string> outside;
    if (winner) outside = problem.check_guards(ctx.stream());
    if (autotune) {
      json all = json::array();
      for (const auto& cand : candidates) all.push_back(cand.to_json());
      rec.extra["candidates"] = all;
    }
    if (!winner || outside) {
      const SearchCandidate& first = winner ? candidates[*winner] : candidates.front();
      record_failure(rec, first,
                     outside    ? "memory check failed after timing: " + *outside
                     : autotune ? "no configuration of " + std::to_string(candidates.size()) +
                                      " passed verification and timing; first: " + first.reason
                                : first.reason);
      return {rec};
    }
    const SearchCandidate& w = candidates[*winner];
    record_winner(rec, w);
    rec.extra["config"] = w.kernel;
  } catch (const std::exception& e) {
    record_failure(rec, e.what());
  }
  return {rec};
}

}  // namespace aispflow::kernels::cuda
