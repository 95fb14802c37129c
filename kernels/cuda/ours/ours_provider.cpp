#include "kernels/cuda/ours/ours_provider.hpp"

#include <cstdio>
#include <random>

#include "kernels/common/gemm_pick_fit.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/hopper_kernels.hpp"
#include "kernels/cuda/ours/simple_kernels.hpp"
#include "kernels/cuda/ours/unfused.hpp"

namespace aispflow::kernels::cuda {

namespace {

std::string config_name(const OurKernel& k) { return k.config().value("name", std::string("?")); }

SearchCandidate candidate(const OurKernel& k, const GemmCase& c, const GemmProblem& problem) {
  SearchCandidate sc;
  sc.kernel = k.identity(c);
  sc.identity = {{"config", k.config()}};
  sc.launch = k.bind(problem);
  // With an epilogue, the same kernel without it: the epilogue's own check needs it (candidate_search.hpp).
  if (problem.epilogue() != Epilogue::none) sc.bare = k.bind(problem, Epilogue::none);
  sc.extra_tolerance = k.extra_rounding();
  return sc;
}

RoundTimes round_times(const SearchCandidate& c) {
  RoundTimes t;
  if (c.screen) t.screen_ms = c.screen->stats.median_ms;
  if (c.full) t.full_ms = c.full->stats.median_ms;
  return t;
}

// An autotuned record's `pick` (docs/records.md): the configuration the provider runs without autotune, and its
// time against the winner's from the same round of this search (the interleaved finalists' rounds when both
// reached them, else the screening round): how far the default pick lands from the autotuned winner.
json pick_entry(const std::string& name, const std::vector<SearchCandidate>& candidates, std::size_t winner) {
  json j = {{"config", name}};
  for (const auto& cand : candidates) {
    if (cand.identity.value("config", json::object()).value("name", std::string()) != name) continue;
    if (cand.status != "ok") {
      j["status"] = cand.status;
      j["reason"] = cand.reason;
    } else if (const auto r = same_round(round_times(cand), round_times(candidates[winner]))) {
      j["round"] = r->round;
      j["time_ms"] = r->pick_ms;
      j["winner_time_ms"] = r->winner_ms;
      j["ratio_to_winner"] = r->ratio_to_winner();
    }
    return j;
  }
  j["status"] = "skipped";
  j["reason"] = "not among the candidates: it cannot run this case";
  return j;
}

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB", bytes / double(1ull << 30));
  return buffer;
}

}  // namespace

BoundLaunch OurKernel::bind(const GemmProblem& problem) const { return bind(problem, problem.epilogue()); }

OursProvider::OursProvider(std::string name, std::function<GpuContext&()> context, KernelList kernels,
                           ConfigPicker pick, bool can_autotune)
    : name_(std::move(name)),
      context_(std::move(context)),
      kernels_(std::move(kernels)),
      pick_(std::move(pick)),
      can_autotune_(can_autotune) {}

Requirements OursProvider::requirements() const {
  Requirements r;
  r.gpus = 1;
  r.why = name_ + " (aispflow's own CUDA kernels)";
  return r;
}

std::string OursProvider::check_options(const json& options) const {
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (it.key() == "autotune") {
      if (!it.value().is_boolean()) return "autotune: expected true or false, got " + it.value().dump();
      if (it.value().get<bool>() && !can_autotune_)
        return "autotune: " + name_ + " has no configurations to search (ours.cluster has)";
    } else if (it.key() == "config") {
      if (!it.value().is_string()) return "config: expected a configuration name, got " + it.value().dump();
      std::string names;
      for (const auto& k : kernels_) {
        if (config_name(*k) == it.value().get<std::string>()) return {};
        names += (names.empty() ? "" : ", ") + config_name(*k);
      }
      return "config: unknown configuration '" + it.value().get<std::string>() + "' of " + name_ + "; known: " + names;
    } else {
      return "unknown option '" + it.key() + "' (" + name_ + " takes: config" + (can_autotune_ ? ", autotune" : "") +
             ")";
    }
  }
  return {};
}

std::vector<const OurKernel*> OursProvider::chosen(const GemmCase& c) const {
  std::vector<const OurKernel*> out;
  if (c.options.contains("config")) {
    for (const auto& k : kernels_)
      if (config_name(*k) == c.options["config"].get<std::string>()) out.push_back(k.get());
    return out;
  }
  if (c.options.value("autotune", false)) {
    for (const auto& k : kernels_)
      if (!k->unsupported(c)) out.push_back(k.get());
    return out;
  }
  if (!kernels_.empty()) out.push_back(kernels_.at(pick_(kernels_, c)).get());
  return out;
}

std::optional<std::string> OursProvider::unsupported(const GemmCase& c) const {
  const auto spec = lt_dtype(c.dtype);
  if (!spec) return name_ + " does not offer " + c.dtype;
  if (c.shape.m <= 0 || c.shape.n <= 0 || c.shape.k <= 0 || c.shape.batch <= 0) return std::string("empty shape");
  const auto& sys = system_info();
  if (sys.devices.empty()) return "no CUDA device: " + sys.why_no_device;
  const auto configs = chosen(c);
  if (configs.empty()) {
    // Say why the configuration the provider would pick declines it (autotune found none).
    if (!kernels_.empty())
      if (auto why = kernels_.at(pick_(kernels_, c))->unsupported(c)) return why;
    return name_ + " has no configuration for " + c.shape.name + " " + c.label();
  }
  if (auto why = configs.front()->unsupported(c); why && configs.size() == 1) return why;
  const double need = GemmProblem::device_bytes(c.shape, *spec) + double(c.shape.m * c.shape.n * c.shape.batch) * 16.0;
  const double have = sys.devices.front().memory_gib * double(1ull << 30);
  if (need > have) return "needs " + gib(need) + " of GPU memory; the device has " + gib(have);
  return std::nullopt;
}

std::vector<GemmRecord> OursProvider::run(const GemmCase& c, const TimingPolicy& timing) {
  GemmRecord rec = GemmRecord::of(name_, name_, c);
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
    GemmProblem problem(c.shape, spec, seed, ctx.stream(), copies, GemmVariant::of(c));
    record_problem(rec, problem, seed);
    rec.extra["verification"] =
        "every element vs the CUDA fp32-accumulating reference GEMM on the same random inputs (kernels/cuda/"
        "gemm_data.cu), epilogue included; output poisoned with NaN before the run; first and last operand copy, each "
        "against its own reference; with an epilogue, the epilogue also on its own (epilogue_check)";
    if (problem.b_transposed() && c.layout == "nn")
      rec.extra["layout_note"] = "fp8 wgmma reads only K-major operands: B stored N x K, as the cuBLASLt fp8 "
                                 "provider does; the record's C = A[MxK] * B[KxN] is the same product";

    std::vector<SearchCandidate> candidates;
    for (const OurKernel* k : chosen(c))
      if (!k->unsupported(c)) candidates.push_back(candidate(*k, c, problem));
    const bool autotune = c.options.value("autotune", false);
    const auto winner = run_candidate_search(candidates, problem, ctx.harness(), timing);
    if (autotune) {
      json all = json::array();
      if (winner) all.push_back(candidates[*winner].to_json());
      for (std::size_t i = 0; i < candidates.size(); ++i)
        if (!winner || i != *winner) all.push_back(candidates[i].to_json());
      rec.extra["candidates"] = all;
      int verified = 0;
      for (const auto& cand : candidates) verified += cand.verified ? 1 : 0;
      rec.extra["autotune"] = {{"candidates", candidates.size()}, {"verified", verified}};
      if (winner) rec.extra["pick"] = pick_entry(config_name(*kernels_.at(pick_(kernels_, c))), candidates, *winner);
    }
    if (!winner) {
      const SearchCandidate& first = candidates.front();
      record_failure(rec, first,
                     autotune ? "no candidate of " + std::to_string(candidates.size()) +
                                    " passed verification and timing; first: " + first.reason
                              : first.reason);
      return {rec};
    }
    const SearchCandidate& w = candidates[*winner];
    rec.tolerance = problem.tolerance() + w.extra_tolerance;
    record_winner(rec, w);
    rec.extra["config"] = w.identity["config"];
  } catch (const std::exception& e) {
    record_failure(rec, e.what());
  }
  return {rec};
}

std::vector<SearchCandidate> OursProvider::candidates_for(const GemmCase& c, const GemmProblem& problem) {
  std::vector<SearchCandidate> out;
  for (const auto& k : kernels_)
    if (!k->unsupported(c)) out.push_back(candidate(*k, c, problem));
  return out;
}

std::unique_ptr<GemmProvider> make_ours_provider(const std::string& name, std::function<GpuContext&()> context) {
  if (name == "ours.naive")
    return std::make_unique<OursProvider>(name, context, ours::naive_kernels(), ours::pick_first, false);
  if (name == "ours.tiled")
    return std::make_unique<OursProvider>(name, context, ours::tiled_kernels(), ours::pick_first, false);
  if (name == "ours.wgmma")
    return std::make_unique<OursProvider>(name, context, ours::wgmma_kernels(), ours::pick_wgmma, false);
  if (name == "ours.cluster")
    return std::make_unique<OursProvider>(name, context, ours::cluster_kernels(), ours::pick_cluster, true);
  if (name == "cublaslt.unfused")
    return std::make_unique<OursProvider>(name, context, ours::unfused_pair(context), ours::pick_first, false);
  return nullptr;
}

}  // namespace aispflow::kernels::cuda
