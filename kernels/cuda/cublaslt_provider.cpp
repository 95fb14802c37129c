#include "kernels/cuda/cublaslt_provider.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"

namespace aispflow::kernels::cuda {

namespace {

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB", bytes / double(1ull << 30));
  return buffer;
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

// One search candidate per heuristic result, up to `count`, best first as the heuristic ranks them. The heuristic
// does not always rank the same way when asked for 1 and for 32 algorithms; a longer list must contain `cublaslt`'s
// own pick, so it is put first if the longer list lacks it (heuristic_rank 0: the algorithm `cublaslt` runs).
std::vector<SearchCandidate> lt_candidates(GpuContext& ctx, const GemmProblem& problem, int count) {
  const auto plan = std::make_shared<LtPlan>(ctx, problem);
  // With an epilogue: the same algorithm without it, for the epilogue check (candidate_search.hpp).
  std::shared_ptr<LtPlan> bare_plan;
  std::optional<cublasLtMatmulAlgo_t> bare_top;
  if (problem.epilogue() != Epilogue::none) {
    bare_plan = std::make_shared<LtPlan>(ctx, problem, /*fuse_epilogue=*/false);
    if (const auto top = bare_plan->candidates(1); !top.empty()) bare_top = top.front().algo;
  }
  auto heuristics = plan->candidates(count);
  if (count > 1) {
    const auto top = plan->candidates(1);
    if (!top.empty()) {
      auto same = [&](const cublasLtMatmulHeuristicResult_t& r) {
        return std::memcmp(&r.algo, &top.front().algo, sizeof r.algo) == 0;
      };
      auto it = std::find_if(heuristics.begin(), heuristics.end(), same);
      if (it != heuristics.end()) heuristics.erase(it);
      heuristics.insert(heuristics.begin(), top.front());
    }
  }
  std::vector<SearchCandidate> candidates(heuristics.size());
  for (std::size_t i = 0; i < heuristics.size(); ++i) {
    const nlohmann::json identity = lt_algo_identity(heuristics[i]);
    candidates[i].identity = {{"heuristic_rank", int(i)}, {"algo", identity}};
    candidates[i].kernel = lt_kernel_name(identity);
    const cublasLtMatmulAlgo_t algo = heuristics[i].algo;
    candidates[i].launch = [plan, algo](cudaStream_t s, int copy) { plan->run(algo, s, copy); };
    if (!bare_plan) continue;
    if (bare_plan->supports(algo)) {
      candidates[i].bare = [bare_plan, algo](cudaStream_t s, int copy) { bare_plan->run(algo, s, copy); };
    } else if (bare_top) {
      // Rare: this algorithm exists only with the epilogue. A*B from the bare problem's heuristic top instead;
      // both accumulate in fp32, and the check's bound covers two accumulation orders.
      const cublasLtMatmulAlgo_t other = *bare_top;
      candidates[i].bare = [bare_plan, other](cudaStream_t s, int copy) { bare_plan->run(other, s, copy); };
      candidates[i].bare_note = "cuBLASLt refuses this algorithm without the epilogue; A*B from its heuristic top: " +
                                lt_kernel_name(lt_algo_identity(bare_plan->candidates(1).front()));
    }
  }
  return candidates;
}

}  // namespace

CublasLtProvider::CublasLtProvider(std::function<GpuContext&()> context, bool sweep)
    : context_(std::move(context)), sweep_(sweep) {}

Requirements CublasLtProvider::requirements() const {
  Requirements r;
  r.gpus = 1;
  r.why = "cuBLASLt";
  return r;
}

std::optional<std::string> CublasLtProvider::unsupported(const GemmCase& c) const {
  const GemmShape& shape = c.shape;
  const std::string& dtype = c.dtype;
  const auto spec = lt_dtype(dtype);
  if (!spec) return name() + " offers " + join(lt_dtype_names()) + "; not '" + dtype + "'";
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) return std::string("empty shape");
  if (shape.batch > 65535) return std::string("batch above 65535");
  const auto& sys = system_info();
  if (sys.devices.empty()) return "no CUDA device: " + sys.why_no_device;
  const DeviceInfo& d = sys.devices.front();
  if (d.compute_capability() < spec->min_compute_capability)
    return dtype + " needs sm_" + std::to_string(spec->min_compute_capability) + "+ tensor cores; found sm_" +
           std::to_string(d.compute_capability()) + " on " + d.name;
  if (spec->ab == Elem::e4m3 && (shape.k % 16 != 0 || shape.n % 16 != 0))
    return "fp8_e4m3 in cuBLASLt needs K and N to be multiples of 16 (16-byte aligned rows of the TN operands); "
           "got K=" + std::to_string(shape.k) + ", N=" + std::to_string(shape.n);
  const double need = GemmProblem::device_bytes(shape, *spec) + double(GpuContext::kWorkspaceBytes);
  if (need > d.memory_gib * double(1ull << 30))
    return "needs " + gib(need) + " of GPU memory; " + d.name + " has " + gib(d.memory_gib * double(1ull << 30));
  return std::nullopt;
}

std::vector<GemmRecord> CublasLtProvider::run(const GemmCase& gemm, const TimingPolicy& timing) {
  const GemmShape& shape = gemm.shape;
  const std::string& dtype = gemm.dtype;
  GemmRecord rec = GemmRecord::of(name(), "cublasLt", gemm);
  if (auto why = unsupported(gemm)) {
    rec.status = "skipped";
    rec.reason = *why;
    return {rec};
  }
  const LtDtype spec = *lt_dtype(dtype);
  try {
    GpuContext& ctx = context_();
    std::lock_guard busy(ctx.busy());
    ScopedDevice on(ctx.device());
    const cudaStream_t stream = ctx.stream();

    std::size_t free_bytes = 0, total_bytes = 0;
    AISPFLOW_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double need = GemmProblem::device_bytes(shape, spec);
    if (need > 0.95 * double(free_bytes)) {
      rec.status = "skipped";
      rec.reason = "needs " + gib(need) + " of GPU memory; " + gib(double(free_bytes)) + " free";
      return {rec};
    }

    const std::uint64_t seed = random_seed();
    const int copies = operand_copies_for(timing, shape, spec, ctx.device());
    // Random operands (+ bias) and the fp32 reference, epilogue included.
    GemmProblem problem(shape, spec, seed, stream, copies, GemmVariant::of(gemm));
    record_problem(rec, problem, seed);
    rec.extra["verification"] =
        "every element vs the CUDA fp32-accumulating reference GEMM on the same inputs (kernels/cuda/gemm_data.cu); "
        "output poisoned with NaN before the run; first and last operand copy, each against its own reference; with "
        "an epilogue, the epilogue also on its own (epilogue_check)";
    if (problem.copies() > 1)
      rec.extra["operand_copies"]["why"] =
          "launches rotate over copies (each with its own random data; the first and the last verified against their "
          "own reference) so that each reads A and B from HBM, not from an L2 warmed by the previous launch";
    if (spec.b_transposed && gemm.layout == "nn")
      rec.extra["layout_note"] = "B stored transposed (row-major N x K) because cuBLASLt's fp8 kernels need the TN form; "
                            "the record's C = A[MxK] * B[KxN] is the same product";

    auto candidates = lt_candidates(ctx, problem, sweep_ ? kSweepCandidates : 1);
    if (candidates.empty()) {
      rec.status = "skipped";
      rec.reason = "cuBLASLt's heuristic returned no algorithm for this problem on " + system_info().devices[std::size_t(ctx.device())].name;
      return {rec};
    }
    SearchOptions options;
    options.finalists = sweep_ ? kSweepFinalists : 1;
    // The heuristic's own choice always reaches the final, so the sweep's winner is, by construction and in the
    // same measurement pass, never slower than what `cublaslt` alone would pick.
    options.always_final = std::size_t(0);
    if (!sweep_) candidates.resize(1);
    const auto winner = run_candidate_search(candidates, problem, ctx.harness(), timing, options);

    if (sweep_) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& c : candidates) all.push_back(c.to_json());
      rec.extra["candidates"] = all;
    }
    if (!winner) {
      const SearchCandidate& first = candidates[0];
      record_failure(rec, first,
                     sweep_ ? "no candidate of " + std::to_string(candidates.size()) +
                                  " passed verification and timing; heuristic top: " + first.reason
                            : first.reason);
      return {rec};
    }
    const SearchCandidate& w = candidates[*winner];
    record_winner(rec, w);
    rec.extra["algo"] = w.identity["algo"];
    rec.extra["heuristic_rank"] = w.identity["heuristic_rank"];
    if (sweep_) {
      int verified = 0, finalists = 0;
      for (const auto& c : candidates) {
        verified += c.verified ? 1 : 0;
        finalists += c.full ? 1 : 0;
      }
      rec.extra["sweep"] = {{"candidates", candidates.size()}, {"verified", verified},
                            {"finalists", finalists},          {"winner_rank", int(*winner)}};
    }
  } catch (const std::exception& e) {
    record_failure(rec, e.what());
  }
  return {rec};
}

std::vector<SearchCandidate> CublasLtProvider::candidates_for(const GemmCase& /*c*/, const GemmProblem& problem) {
  // Both providers' picks: the heuristic's top one (cublaslt) and its longer list (cublaslt.sweep).
  return lt_candidates(context_(), problem, kSweepCandidates);
}

std::optional<Ceiling> measure_gemm_ceiling(const std::function<GpuContext&()>& context, const std::string& dtype,
                                            std::int64_t n, const TimingPolicy& timing, std::string* why) {
  CublasLtProvider provider(context, /*sweep=*/false);
  GemmShape shape;
  shape.name = "peak_" + std::to_string(n);
  shape.m = shape.n = shape.k = n;
  const GemmRecord rec = provider.run(GemmCase{shape, dtype}, timing).front();
  if (rec.status != "ok" || !rec.time) {
    if (why) *why = rec.status + ": " + rec.reason;
    return std::nullopt;
  }
  Ceiling c = {{"name", "gemm." + dtype},
               {"kind", "achieved"},
               {"unit", "TFLOP/s"},
               {"value", shape.flops() / (rec.time->median_ms * 1e-3) / 1e12},
               {"dtype", dtype},
               {"source", "measured"},
               {"method", "cuBLASLt heuristic top algorithm on a verified " + std::to_string(n) + "^3 " + dtype +
                              " GEMM, random inputs, L2 flushed: " + rec.kernel},
               {"verified", rec.verified},
               {"max_rel_err", rec.max_rel_err},
               {"time_ms", rec.time->to_json()},
               {"samples", rec.time->samples}};
  if (rec.extra.contains("warnings")) c["warnings"] = rec.extra["warnings"];
  return c;
}

}  // namespace aispflow::kernels::cuda
