#include "kernels/cuda/cutlass/cutlass_provider.hpp"

#include <cstdlib>

#include <algorithm>
#include <optional>
#include <random>

#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cutlass/registry.hpp"
#include "kernels/cuda/device.hpp"

namespace aispflow::kernels::cuda {

namespace {

// The architecture a CUTLASS instance must have been built for to run on `d`: sm_90a code runs on CC 9.0 only,
// sm_100a code on CC 10.0 only (arch-specific "a" targets are not forward compatible). 0: none of ours.
int instance_arch_for(const DeviceInfo& d) {
  const int cc = d.compute_capability();
  return cc == 90 ? 90 : cc == 100 ? 100 : 0;
}

std::string arch_requirement(int arch) {
  return arch == 100 ? "requires sm_100 (tcgen05)" : "requires sm_90a (wgmma, TMA)";
}

bool dense_dtype(const std::string& d) { return d == "bf16" || d == "fp8_e4m3"; }

// One manifest row as a candidate of the record: the search's entry when it was run, else why not.
struct Listed {
  nlohmann::json entry;                 // kernel, arch, tile, cluster, schedule, default, can_implement, status...
  std::optional<std::size_t> searched;  // index into the search's candidates
};

// Fills the record from the search (kernels/cuda/candidate_search.hpp) and the rows that never reached it.
void fill_record(GemmRecord& rec, std::vector<Listed>& listed, const std::vector<SearchCandidate>& searched,
                 std::optional<std::size_t> winner, bool list_all) {
  int verified = 0;
  for (auto& l : listed)
    if (l.searched) {
      const auto& c = searched[*l.searched];
      // update(), not a loop over c.to_json().items(): that range would outlive its temporary (the H100 runs'
      // "hang" and crash were this dangling iteration, docs/cutlass.md).
      l.entry.update(c.to_json());
      verified += c.verified ? 1 : 0;
    }
  if (list_all) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& l : listed) all.push_back(l.entry);
    rec.extra["candidates"] = all;
    rec.extra["search"] = {{"candidates", listed.size()}, {"run", searched.size()}, {"verified", verified}};
  }
  if (!winner) {
    rec.verified = false;
    rec.time.reset();
    const SearchCandidate* failed = nullptr;
    for (const auto& c : searched)
      if (c.status == "failed") { failed = &c; break; }
    if (failed) {
      rec.status = "failed";
      rec.kernel = failed->kernel;
      rec.max_rel_err = failed->max_rel_err;
      rec.reason = failed->reason;
    } else {   // nothing could run: the first row's reason says why
      rec.status = "skipped";
      rec.reason = listed.empty() ? "no CUTLASS instance for this case" : listed.front().entry.value("reason", "");
      if (listed.size() > 1)
        rec.reason = "none of the " + std::to_string(listed.size()) + " CUTLASS instances can run this case; first: " + rec.reason;
    }
    return;
  }
  const SearchCandidate& w = searched[*winner];
  rec.status = "ok";
  record_winner(rec, w);
  // The winner's run-time configuration, never silent: scheduler swizzle, the split count of stream-K
  // instances (and the decomposition it asked CUTLASS for), fp8's promotion interval.
  if (w.identity.contains("swizzle")) {
    nlohmann::json sched = {{"swizzle", w.identity["swizzle"]}, {"raster", "heuristic"}};
    for (const char* key : {"splits", "decomposition", "reduction"})
      if (w.identity.contains(key)) sched[key] = w.identity[key];
    rec.extra["scheduler"] = sched;
  }
  if (w.identity.contains("mma_promotion_interval"))
    rec.extra["mainloop"] = {{"mma_promotion_interval", w.identity["mma_promotion_interval"]}};
  if (w.identity.contains("operands")) rec.extra["operands"] = w.identity["operands"];
  if (list_all)
    for (std::size_t i = 0; i < listed.size(); ++i)
      if (listed[i].searched == winner) rec.extra["search"]["winner"] = i;
}

}  // namespace

CutlassProvider::CutlassProvider(std::function<GpuContext&()> context, bool select)
    : context_(std::move(context)), select_(select) {}

Requirements CutlassProvider::requirements() const {
  Requirements r;
  r.gpus = 1;
  r.why = "CUTLASS";
  return r;
}

std::optional<std::string> CutlassProvider::unsupported(const GemmCase& c) const {
  const GemmShape& s = c.shape;
  if (!dense_dtype(c.dtype) && c.dtype != "mxfp8" && c.dtype != "nvfp4")
    return name() + " offers bf16, fp8_e4m3, mxfp8, nvfp4; not '" + c.dtype + "'";
  if (c.epilogue != "none")
    return name() + " instances are built with epilogue none (linear combination, beta 0); not '" + c.epilogue + "'";
  if (!s.groups.empty()) return std::string("a grouped (MoE routing) shape: cutlass.grouped runs those");
  if (s.batch != 1) return name() + " runs single GEMMs; batch " + std::to_string(s.batch) + " is not offered";
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return std::string("empty shape");
  if (!cutlass_built()) return cutlass_build_info().value("unavailable", std::string("no CUTLASS in this build"));
  const auto& sys = system_info();
  if (sys.devices.empty()) return "no CUDA device: " + sys.why_no_device;
  const DeviceInfo& d = sys.devices.front();
  const int arch = instance_arch_for(d);
  if (!dense_dtype(c.dtype)) {
    if (arch != 100) return arch_requirement(100) + "; found sm_" + std::to_string(d.compute_capability()) + " on " + d.name;
    return c.dtype + " instances are compiled, but aispflow does not yet quantize operands into CUTLASS's "
           "block-scale-factor layout, so they are not run (docs/cutlass.md)";
  }
  if (arch == 0)
    return "CUTLASS instances are built for sm_90a and sm_100a; found sm_" + std::to_string(d.compute_capability()) +
           " on " + d.name;
  const auto spec = lt_dtype(c.dtype);
  const double need = GemmProblem::device_bytes(s, *spec);
  if (need > d.memory_gib * double(1ull << 30)) return std::string("needs more GPU memory than ") + d.name + " has";
  return std::nullopt;
}

std::vector<GemmRecord> CutlassProvider::run(const GemmCase& gemm, const TimingPolicy& timing) {
  GemmRecord rec = GemmRecord::of(name(), "cutlass", gemm);
  if (auto why = unsupported(gemm)) {
    rec.status = "skipped";
    rec.reason = *why;
    if (select_)   // the profiler's list is still useful: which instances exist, and why none ran
      for (const CutlassInstance* inst : cutlass_instances_for(gemm))
        rec.extra["candidates"].push_back({{"kernel", inst->name()}, {"status", "skipped"}, {"reason", *why}});
    return {rec};
  }
  try {
    GpuContext& ctx = context_();
    std::lock_guard busy(ctx.busy());
    ScopedDevice on(ctx.device());
    const cudaStream_t stream = ctx.stream();
    const DeviceInfo& dev = system_info().devices[std::size_t(ctx.device())];
    const int arch = instance_arch_for(dev);
    const LtDtype spec = *lt_dtype(gemm.dtype);

    const std::uint64_t seed = random_seed();
    const int copies = operand_copies_for(timing, gemm.shape, spec, ctx.device());
    // GemmProblem stores fp8's B as N x K whatever the layout (as for cuBLASLt): cutlass_storage_layout().
    GemmProblem problem(gemm.shape, spec, seed, stream, copies, GemmVariant::of(gemm));
    const std::string storage = problem.b_transposed() ? "nt" : "nn";
    if (storage != cutlass_storage_layout(gemm)) throw std::logic_error("cutlass: B storage does not match the instances");
    record_problem(rec, problem, seed);   // its fp8 `scales` are replaced below: CUTLASS applies them as alpha
    rec.extra["cutlass"] = cutlass_build_info()["version"];
    rec.extra["verification"] =
        "every element vs the CUDA fp32-accumulating reference GEMM on the same inputs (kernels/cuda/gemm_data.cu); "
        "output poisoned with NaN before the run; first and last operand copy, each against its own reference";
    if (spec.ab == Elem::e4m3) {
      rec.extra["scales"] = {{"a", problem.scale_a()}, {"b", problem.scale_b()},
                             {"applied_as", "alpha = scale_a * scale_b"}, {"output", "bf16"}};
      if (gemm.layout == "nn")
        rec.extra["layout_note"] = "B stored transposed (row-major N x K): Hopper's fp8 wgmma reads B K-major; "
                                   "the record's C = A[MxK] * B[KxN] is the same product";
    }

    cutlass_abi::GemmArgs base = cutlass_problem_args(problem, dev.sm_count);
    base.stream = stream;

    std::vector<const CutlassInstance*> rows;
    for (const CutlassInstance* inst : cutlass_instances_for(gemm))
      if (select_ || (inst->set == "pick" && inst->arch == arch)) rows.push_back(inst);
    std::vector<Listed> listed;
    std::vector<SearchCandidate> candidates;   // the (row, swizzle) pairs that can run: what the search sees
    std::vector<std::pair<const cutlass_abi::InstanceOps*, CutlassVariant>> ops;   // entry points and variant per candidate
    std::optional<std::size_t> pick;
    std::size_t workspace = 0;
    for (const CutlassInstance* inst : rows) {
      Listed l;
      l.entry = {{"kernel", inst->name()},
                 {"arch", "sm_" + std::to_string(inst->arch) + "a"},
                 {"tile", std::to_string(inst->tile_m) + "x" + std::to_string(inst->tile_n) + "x" +
                              std::to_string(inst->tile_k)},
                 {"cluster", std::to_string(inst->cluster_m) + "x" + std::to_string(inst->cluster_n) + "x1"},
                 {"schedule", inst->schedule},
                 {"default", inst->set == "pick"}};
      const cutlass_abi::InstanceOps* o = cutlass_ops(*inst);
      std::string why;
      if (inst->arch != arch) {
        why = arch_requirement(inst->arch);
      } else if (!o) {
        why = cutlass_not_compiled_reason(*inst);
      } else {
        const bool can = o->can_implement(base) == cutlass_abi::kOk;
        l.entry["can_implement"] = can;
        if (!can) {
          const auto rule = cutlass_alignment_problem(*inst, gemm.shape);
          why = "CUTLASS can_implement: no" + (rule ? " (" + *rule + ")" : std::string());
        } else {
          workspace = std::max(workspace, o->workspace_bytes(base));
        }
      }
      if (!why.empty()) {
        l.entry["status"] = "skipped";
        l.entry["reason"] = why;
        listed.push_back(std::move(l));
        continue;
      }
      // One candidate per run-time configuration of the same kernel (cutlass_variants): scheduler swizzle, split
      // count, fp8 promotion interval. `cutlass` runs CUTLASS's defaults only.
      for (const CutlassVariant& var : cutlass_variants(*inst, gemm.shape, dev.sm_count, select_)) {
        Listed v = l;
        v.entry["swizzle"] = var.swizzle;
        if (inst->stream_k()) {
          v.entry["splits"] = var.splits;
          v.entry["decomposition"] = var.splits > 1 ? "split_k" : "heuristic";
          v.entry["reduction"] = var.nondeterministic ? "nondeterministic" : "deterministic";
        }
        if (var.promotion > 0) v.entry["mma_promotion_interval"] = var.promotion;
        if (inst->swap_ab()) v.entry["operands"] = "swapped: C^T = B * A^T (tile_m along N, tile_n along M)";
        if (inst->set == "pick" && !pick) pick = candidates.size();   // the first variant: CUTLASS's defaults
        v.searched = candidates.size();
        SearchCandidate cand;
        cand.kernel = inst->name();
        cand.identity = v.entry;
        candidates.push_back(std::move(cand));
        ops.push_back({o, var});
        if (inst->stream_k()) {   // split-K's partial sums: the workspace depends on the split count
          cutlass_abi::GemmArgs a = base;
          a.splits = var.splits;
          workspace = std::max(workspace, o->workspace_bytes(a));
        }
        listed.push_back(std::move(v));
      }
    }
    DeviceBuffer ws(workspace);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const cutlass_abi::InstanceOps* o = ops[i].first;
      cutlass_abi::GemmArgs args = base;
      args.swizzle = ops[i].second.swizzle;
      args.splits = ops[i].second.splits;
      args.promotion_interval = ops[i].second.promotion;
      args.reduction = ops[i].second.nondeterministic ? 1 : 0;
      args.workspace = ws.get();
      args.workspace_bytes = ws.bytes();
      candidates[i].launch = cutlass_launch(o, args, problem, candidates[i].kernel);
    }
    std::optional<std::size_t> winner;
    if (!candidates.empty()) {
      SearchOptions options;
      options.finalists = kFinalists;
      options.always_final = pick;
      winner = run_candidate_search(candidates, problem, ctx.harness(), timing, options);
    }
    fill_record(rec, listed, candidates, winner, select_);
  } catch (const std::exception& e) {
    record_failure(rec, e.what());
  }
  return {rec};
}

cutlass_abi::GemmArgs cutlass_problem_args(const GemmProblem& problem, int sm_count) {
  cutlass_abi::GemmArgs args;
  args.m = int(problem.shape().m);
  args.n = int(problem.shape().n);
  args.k = int(problem.shape().k);
  args.alpha = problem.dtype().ab == Elem::e4m3 ? problem.scale_a() * problem.scale_b() : 1.0f;
  args.sm_count = sm_count;
  return args;
}

BoundLaunch cutlass_launch(const cutlass_abi::InstanceOps* ops, const cutlass_abi::GemmArgs& args,
                           GemmProblem& problem, const std::string& kernel) {
  return [ops, args, &problem, kernel](cudaStream_t s, int copy) {
    cutlass_abi::GemmArgs a = args;
    a.a = problem.a(copy);
    a.b = problem.b(copy);
    a.c = problem.c(copy);
    a.stream = s;
    if (const int st = ops->run(a); st != cutlass_abi::kOk)
      throw CudaError("CUTLASS " + kernel + (st == cutlass_abi::kCannotImplement ? ": cannot implement" : ": launch failed") +
                      " (" + cudaGetErrorString(cudaGetLastError()) + ")");
  };
}

}  // namespace aispflow::kernels::cuda
