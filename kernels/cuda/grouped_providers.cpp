#include "kernels/cuda/grouped_providers.hpp"

#include <cstdlib>

#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cublaslt_provider.hpp"
#include "kernels/cuda/cutlass/instance_abi.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/harness.hpp"

namespace aispflow::kernels::cuda {

namespace {

std::vector<std::int64_t> groups_of(const GemmShape& s) {
  return s.groups.empty() ? std::vector<std::int64_t>(std::size_t(s.batch), s.m) : s.groups;
}

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw CudaError(std::string(what) + " failed: cuBLAS status " + std::to_string(int(st)));
}

// One cuBLAS handle per provider, made on first use on the provider's device.
struct CublasHandle {
  cublasHandle_t h = nullptr;
  ~CublasHandle() {
    if (h) cublasDestroy(h);
  }
  cublasHandle_t get() {
    if (!h) check_cublas(cublasCreate(&h), "cublasCreate");
    return h;
  }
};

// What a grouped method launches for one problem: a name for `kernel`, extra facts, the launch.
struct GroupedLaunch {
  std::string kernel;
  nlohmann::json extra = nlohmann::json::object();
  std::function<void(cudaStream_t)> launch;
  std::vector<std::shared_ptr<void>> keep;   // device buffers the launch refers to
};

class GroupedProvider final : public GemmProvider {
 public:
  GroupedProvider(GroupedMethod method, std::function<GpuContext&()> context)
      : method_(method), context_(std::move(context)) {}
  std::string name() const override { return grouped_provider_names()[std::size_t(method_)]; }
  Requirements requirements() const override {
    Requirements r;
    r.gpus = 1;
    r.why = "grouped GEMM";
    return r;
  }
  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (c.dtype != "bf16") return name() + " offers bf16; not '" + c.dtype + "'";
    if (c.layout != "nn" || c.epilogue != "none") return name() + " offers layout nn without an epilogue";
    if (c.shape.groups.empty() && c.shape.batch < 2)
      return std::string("not a grouped shape (no groups, batch 1): gemm_shapes routing: makes grouped shapes");
    const auto& sys = system_info();
    if (sys.devices.empty()) return "no CUDA device: " + sys.why_no_device;
    const DeviceInfo& d = sys.devices.front();
    if (method_ == GroupedMethod::cutlass) {
#if AISPFLOW_CUTLASS_HAS_GROUPED
      if (d.compute_capability() != 90)
        return "requires sm_90a (the CUTLASS grouped instance is built for Hopper); found sm_" +
               std::to_string(d.compute_capability());
      if (c.shape.n % 8 || c.shape.k % 8) return std::string("CUTLASS's TMA needs N and K to be multiples of 8");
#else
      return std::string("this build has no CUTLASS (see `aispflow hw`)");
#endif
    }
    if (d.compute_capability() < 80) return std::string("bf16 needs sm_80+");
    return std::nullopt;
  }

  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override;

 private:
  GroupedLaunch make_launch(GemmProblem& p, const std::vector<std::int64_t>& groups, GpuContext& ctx, int copy);
  std::string verify(GemmProblem& p, const std::vector<std::int64_t>& groups, const GroupedLaunch& launch, int copy,
                     double& worst, cudaStream_t stream);
  GroupedMethod method_;
  std::function<GpuContext&()> context_;
  CublasHandle cublas_;
};

// The launch of operand copy `copy` (each copy its own pointer tables and metadata, built once here).
GroupedLaunch GroupedProvider::make_launch(GemmProblem& p, const std::vector<std::int64_t>& groups, GpuContext& ctx,
                                           int copy) {
  const GemmShape& s = p.shape();
  const int n = int(s.n), k = int(s.k);
  // Experts with rows: the others do no work (and some kernels refuse empty problems).
  std::vector<int> m;
  std::vector<const void*> a, b;
  std::vector<void*> cc;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g] == 0) continue;
    m.push_back(int(groups[g]));
    a.push_back(static_cast<char*>(p.a(copy)) + g * std::size_t(s.m * s.k) * 2);
    b.push_back(static_cast<char*>(p.b(copy)) + g * std::size_t(s.k * s.n) * 2);
    cc.push_back(static_cast<char*>(p.c(copy)) + g * std::size_t(s.m * s.n) * 2);
  }
  GroupedLaunch out;
  out.extra["experts_with_rows"] = m.size();
  const cudaStream_t stream = ctx.stream();
  if (method_ == GroupedMethod::cutlass) {
#if AISPFLOW_CUTLASS_HAS_GROUPED
    const auto& ops = cutlass_abi::sm90_grouped_bf16;
    auto args = std::make_shared<cutlass_abi::GroupedArgs>();
    auto hm = std::make_shared<std::vector<int>>(m);
    auto ha = std::make_shared<std::vector<const void*>>(a);
    auto hb = std::make_shared<std::vector<const void*>>(b);
    auto hc = std::make_shared<std::vector<void*>>(cc);
    args->groups = int(m.size());
    args->host_m = hm->data();
    args->host_a = ha->data();
    args->host_b = hb->data();
    args->host_c = hc->data();
    args->n = n;
    args->k = k;
    args->sm_count = system_info().devices[std::size_t(ctx.device())].sm_count;
    args->stream = stream;
    auto meta = std::make_shared<DeviceBuffer>(ops.metadata_bytes(args->groups));
    if (ops.prepare(*args, meta->get()) != cutlass_abi::kOk) throw CudaError("CUTLASS grouped: uploading metadata failed");
    if (ops.can_implement(*args, meta->get()) != cutlass_abi::kOk) throw CudaError("CUTLASS grouped: can_implement: no");
    auto ws = std::make_shared<DeviceBuffer>(ops.workspace_bytes(*args, meta->get()));
    out.kernel = cutlass_abi::sm90_grouped_bf16_name;
    out.keep = {args, hm, ha, hb, hc, meta, ws};
    out.launch = [args, meta, ws, &ops](cudaStream_t st) {
      cutlass_abi::GroupedArgs a2 = *args;
      a2.stream = st;
      if (ops.run(a2, meta->get(), ws->get()) != cutlass_abi::kOk)
        throw CudaError(std::string("CUTLASS grouped run failed: ") + cudaGetErrorString(cudaGetLastError()));
    };
#endif
    return out;
  }
  // cuBLAS is column-major: C_g^T (N x m_g) = B_g^T (N x K) * A_g^T (K x m_g), no data moved.
  cublasHandle_t h = cublas_.get();
  // The context's workspace (cuBLASLt's; never in use at the same time): cuBLAS then allocates nothing while
  // the harness captures launches into a CUDA graph.
  check_cublas(cublasSetWorkspace(h, ctx.workspace(), ctx.workspace_bytes()), "cublasSetWorkspace");
  if (method_ == GroupedMethod::cublas_grouped) {
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 5)
    const int G = int(m.size());
    auto host = std::make_shared<std::vector<int>>();   // m', n', k', lda, ldb, ldc, group sizes
    auto& v = *host;
    v.resize(std::size_t(7 * G));
    for (int g = 0; g < G; ++g) {
      v[std::size_t(g)] = n;
      v[std::size_t(G + g)] = m[std::size_t(g)];
      v[std::size_t(2 * G + g)] = k;
      v[std::size_t(3 * G + g)] = n;
      v[std::size_t(4 * G + g)] = k;
      v[std::size_t(5 * G + g)] = n;
      v[std::size_t(6 * G + g)] = 1;
    }
    auto ops = std::make_shared<std::vector<cublasOperation_t>>(std::size_t(G), CUBLAS_OP_N);
    auto alpha = std::make_shared<std::vector<float>>(std::size_t(G), 1.0f);
    auto beta = std::make_shared<std::vector<float>>(std::size_t(G), 0.0f);
    auto ptrs = std::make_shared<DeviceBuffer>(sizeof(void*) * 3 * std::size_t(G));
    std::vector<const void*> all;
    for (auto x : b) all.push_back(x);   // cuBLAS's A is our B
    for (auto x : a) all.push_back(x);
    for (auto x : cc) all.push_back(x);
    AISPFLOW_CUDA_CHECK(cudaMemcpy(ptrs->get(), all.data(), sizeof(void*) * all.size(), cudaMemcpyHostToDevice));
    out.kernel = "cublasGemmGroupedBatchedEx bf16 -> bf16, compute 32F, " + std::to_string(G) + " groups of 1";
    out.extra["method"] = "cublasGemmGroupedBatchedEx";
    out.keep = {host, ops, alpha, beta, ptrs};
    out.launch = [h, host, ops, alpha, beta, ptrs, G](cudaStream_t st) {
      check_cublas(cublasSetStream(h, st), "cublasSetStream");
      const auto* v = host->data();
      auto** p = static_cast<const void**>(ptrs->get());
      check_cublas(cublasGemmGroupedBatchedEx(h, ops->data(), ops->data(), v, v + G, v + 2 * G, alpha->data(), p,
                                              CUDA_R_16BF, v + 3 * G, p + G, CUDA_R_16BF, v + 4 * G, beta->data(),
                                              const_cast<void**>(p + 2 * G), CUDA_R_16BF, v + 5 * G, G, v + 6 * G,
                                              CUBLAS_COMPUTE_32F),
                   "cublasGemmGroupedBatchedEx");
    };
    return out;
#else
    out.extra["method"] = "per-expert loop (this cuBLAS has no cublasGemmGroupedBatchedEx)";
#endif
  }
  // One GEMM per expert on one stream.
  if (!out.extra.contains("method")) out.extra["method"] = "per-expert loop";
  out.kernel = "cublasGemmEx bf16 -> bf16, compute 32F, one launch per expert (" + std::to_string(m.size()) + ")";
  out.launch = [h, m, a, b, cc, n, k](cudaStream_t st) {
    check_cublas(cublasSetStream(h, st), "cublasSetStream");
    const float one = 1.0f, zero = 0.0f;
    for (std::size_t g = 0; g < m.size(); ++g)
      check_cublas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m[g], k, &one, b[g], CUDA_R_16BF, n, a[g], CUDA_R_16BF,
                                k, &zero, cc[g], CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
  };
  return out;
}

std::vector<GemmRecord> GroupedProvider::run(const GemmCase& c, const TimingPolicy& timing) {
  GemmRecord rec = GemmRecord::of(name(), name(), c);
  if (auto why = unsupported(c)) {
    rec.status = "skipped";
    rec.reason = *why;
    return {rec};
  }
  const auto groups = groups_of(c.shape);
  if (method_ == GroupedMethod::padded) {
    // cuBLASLt's batched GEMM on the padded shape: every expert computes max(m_g) rows.
    GemmCase padded = c;
    padded.shape.groups.clear();
    CublasLtProvider lt(context_, /*sweep=*/false);
    GemmRecord r = lt.run(padded, timing).front();
    r.provider = name();
    r.shape = c.shape;   // FLOPs of the real rows only
    r.extra["padded"] = {{"rows_computed", c.shape.m * c.shape.batch}, {"real_rows", c.shape.real_rows()},
                         {"how", "cuBLASLt strided batched GEMM, every expert padded to the largest group"}};
    return {r};
  }
  try {
    GpuContext& ctx = context_();
    std::lock_guard busy(ctx.busy());
    ScopedDevice on(ctx.device());
    const cudaStream_t stream = ctx.stream();
    const std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}();
    GemmShape padded = c.shape;
    padded.groups.clear();
    const LtDtype spec = *lt_dtype("bf16");
    // Operand copies as every other GEMM provider keeps them (padded's cuBLASLt too), so a small grouped shape
    // is timed with cold operands like its `padded` neighbour; a MoE layer's weights alone (experts x K x N)
    // usually exceed twice the L2, and then one copy is enough.
    const int copies = timing.flush_cache
                           ? GemmProblem::copies_for_cold_l2(padded, spec, double(system_info().devices[std::size_t(ctx.device())].l2_bytes),
                                                             Harness::kMaxGraphLaunches)
                           : 1;
    GemmProblem problem(padded, spec, seed, stream, copies, GemmVariant::of(c));
    record_problem(rec, problem, seed);
    rec.extra["verification"] = "each expert's m_g rows vs the CUDA fp32-accumulating reference on the same inputs; "
                                "output poisoned with NaN before the run; first and last operand copy, each against "
                                "its own reference";
    std::vector<GroupedLaunch> launches;
    for (int copy = 0; copy < problem.copies(); ++copy) launches.push_back(make_launch(problem, groups, ctx, copy));
    rec.kernel = launches.front().kernel;
    for (auto& [key, value] : launches.front().extra.items()) rec.extra[key] = value;

    double worst = 0;
    for (int copy : {0, problem.copies() - 1}) {
      if (std::string why = verify(problem, groups, launches[std::size_t(copy)], copy, worst, stream); !why.empty()) {
        rec.status = "failed";
        rec.max_rel_err = worst;
        rec.reason = why;
        return {rec};
      }
      if (problem.copies() == 1) break;
    }
    rec.verified = true;
    rec.max_rel_err = worst;
    // Each launch of a timing graph takes the next copy, so short launches still read cold operands.
    auto next = std::make_shared<int>(0);
    Measurement m = ctx.harness().time(timing, [&launches, next](cudaStream_t st) {
      launches[std::size_t((*next)++ % int(launches.size()))].launch(st);
    });
    m.operand_copies = problem.copies();
    rec.time = m.stats;
    rec.extra["timing"] = m.timing_json();
    if (!m.warnings.empty()) rec.extra["warnings"] = m.warnings;
  } catch (const std::exception& e) {
    record_failure(rec, e.what());
  }
  return {rec};
}

// One verified launch on `copy`: poisoned output, then every expert's rows against that copy's reference.
// Returns why it failed, or "" (worst: the largest error seen so far).
std::string GroupedProvider::verify(GemmProblem& problem, const std::vector<std::int64_t>& groups,
                                    const GroupedLaunch& launch, int copy, double& worst, cudaStream_t stream) {
  const GemmShape& padded = problem.shape();
  problem.poison_output(stream, copy);
  launch.launch(stream);
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g] == 0) continue;
    const Comparison cmp =
        problem.check_output_range(stream, std::int64_t(g) * padded.m * padded.n, groups[g] * padded.n, copy);
    worst = std::max(worst, cmp.max_rel_err);
    if (cmp.non_finite != 0 || cmp.max_rel_err > problem.tolerance()) {
      char tol[32];
      std::snprintf(tol, sizeof tol, "%.3g", problem.tolerance());
      return "verification failed in expert " + std::to_string(g) + " (" + std::to_string(groups[g]) + " rows)" +
             (copy > 0 ? " on operand copy " + std::to_string(copy) : std::string()) + ": " +
             cmp.describe(padded.n) + ", tolerance " + tol;
    }
  }
  return {};
}

}  // namespace

const std::vector<std::string>& grouped_provider_names() {
  static const std::vector<std::string> names = {"cutlass.grouped", "cublaslt.grouped", "cublas.per_expert", "padded"};
  return names;
}

std::unique_ptr<GemmProvider> make_grouped_provider(GroupedMethod method, std::function<GpuContext&()> context) {
  return std::make_unique<GroupedProvider>(method, std::move(context));
}

}  // namespace aispflow::kernels::cuda
