// Node type `alltoall`: MoE-readiness all-to-all probe. For every (dtype, message size, Zipf skew) point it
// exchanges skewed expert-dispatch traffic (kernels/common/alltoall_traffic.hpp), verifies every received
// element, times warm-up + iterations one exchange each (the slowest rank per iteration counts) and windows of
// exchanges back to back (nccl-tests' measure, b2b_*), and reports p50/p99, algbw, busbw, the link-bound ideal
// (nodes/alltoall_link_bound.hpp), the bytes moved, the hot rank's receive volume and the split's Gini and
// max/mean, with PASS/FAIL
// against the workflow's thresholds. Any FAIL (or a point whose data check failed) sets the verdict, so the
// run exits 3 as it does for `expect`, also from the cache.
//
// Transports: `mpi` (MPI_Alltoallv on host buffers, launched through mpirun running aispflow-comm-rank);
// `nccl` (grouped ncclSend/ncclRecv over the GPUs of one process, kernels/cuda/alltoall_nccl.cu, reached
// through Backend::run_alltoall) requires a GPU.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "kernels/common/alltoall_traffic.hpp"
#include "nodes/alltoall_link_bound.hpp"
#include "nodes/alltoall_output.hpp"
#include "nodes/inputs.hpp"
#include "nodes/model_presets.hpp"
#include "nodes/mpi_launch.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {
namespace {

const std::vector<std::int64_t> kDefaultSizes = {32 << 10, 128 << 10, 512 << 10, 2 << 20};   // the study's
const std::vector<double> kDefaultSkews = {0, 1.0, 1.15, 1.35};

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp8") return 1;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp32") return 4;
  throw std::invalid_argument("dtypes: unknown dtype \"" + dtype + "\" (expected bf16, fp16, fp8 or fp32)");
}

std::vector<double> skew_list(const json& params) {
  if (!has_value(params, "skews")) return kDefaultSkews;
  if (!params["skews"].is_array()) throw std::invalid_argument("skews: expected a list of numbers >= 0");
  std::vector<double> out;
  for (const auto& v : params["skews"]) {
    if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>()))
      throw std::invalid_argument("skews: expected numbers >= 0, found " + v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

struct SizePoint {
  std::int64_t bytes;
  std::string label;   // "512 KiB", "decode b=8 (1.4 MiB)"
};

// Bytes per rank: the explicit sizes, plus the model's dispatch (tokens x hidden x bytes x top_k over ranks).
std::vector<SizePoint> sizes_for(const json& params, int elem_bytes, int ranks) {
  std::vector<SizePoint> out;
  for (auto b : positive_int_list(params, "sizes", kDefaultSizes)) out.push_back({b, alltoall_size_label(b)});
  if (!has_value(params, "model")) return out;
  const ModelConfig m = resolve_model(params["model"], params.value("config", json()));
  if (!m.is_moe()) throw std::invalid_argument("model: " + m.name + " has no experts (top_k 0): no dispatch to derive");
  auto add = [&](const std::string& what, std::int64_t tokens) {
    const std::int64_t bytes = tokens * m.hidden * elem_bytes * m.top_k / std::max(ranks, 1);
    if (bytes > 0) out.push_back({bytes, what + " (" + std::to_string(bytes) + " B)"});
  };
  for (auto b : positive_int_list(params, "decode_batches", {1, 32})) add("decode b=" + std::to_string(b), b);
  for (auto l : positive_int_list(params, "prefill_lengths", {2048})) add("prefill " + std::to_string(l), l);
  return out;
}

std::map<std::string, std::string> nccl_env_of(const json& params) {
  std::map<std::string, std::string> env;
  if (!has_value(params, "nccl_env")) return env;
  if (!params["nccl_env"].is_object()) throw std::invalid_argument("nccl_env: expected a map NAME: value");
  for (auto it = params["nccl_env"].begin(); it != params["nccl_env"].end(); ++it) {
    if (it.key().rfind("NCCL_", 0) != 0) throw std::invalid_argument("nccl_env." + it.key() + ": expected an NCCL_* name");
    env[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return env;
}

struct Thresholds {
  std::optional<double> max_p99_ms, min_busbw_gbps;
};
Thresholds thresholds_of(const json& params) {
  Thresholds t;
  if (!has_value(params, "thresholds")) return t;
  const json& th = params["thresholds"];
  if (!th.is_object()) throw std::invalid_argument("thresholds: expected {max_p99_ms, min_busbw_gbps}");
  for (auto it = th.begin(); it != th.end(); ++it) {
    if (it.key() != "max_p99_ms" && it.key() != "min_busbw_gbps")
      throw std::invalid_argument("thresholds." + it.key() + ": unknown (expected max_p99_ms or min_busbw_gbps)");
    if (!it.value().is_number() || it.value().get<double>() < 0)
      throw std::invalid_argument("thresholds." + it.key() + ": expected a number >= 0");
  }
  if (th.contains("max_p99_ms")) t.max_p99_ms = th["max_p99_ms"].get<double>();
  if (th.contains("min_busbw_gbps")) t.min_busbw_gbps = th["min_busbw_gbps"].get<double>();
  return t;
}

// The plan the rank worker runs: every point with its element count.
json plan_of(const json& params, int ranks) {
  json points = json::array();
  for (const auto& dtype : string_list(params, "dtypes", {"bf16", "fp8", "fp32"})) {
    const int width = dtype_bytes(dtype);
    for (const auto& size : sizes_for(params, width, ranks)) {
      const std::int64_t elements = size.bytes / width;
      if (elements <= 0) throw std::invalid_argument("sizes: " + std::to_string(size.bytes) + " bytes hold no " + dtype + " element");
      if (elements > (std::int64_t(1) << 30)) throw std::invalid_argument("sizes: " + size.label + " is too large (max 1 Gi elements)");
      for (double skew : skew_list(params))
        points.push_back({{"dtype", dtype}, {"elem_bytes", width}, {"size_bytes", elements * width},
                          {"size_label", size.label}, {"elements", elements}, {"skew", skew}});
    }
  }
  return {{"warmup", positive_int(params, "warmup", 5)}, {"iterations", positive_int(params, "iterations", 30)},
          {"window_exchanges", positive_int(params, "window_exchanges", 20)}, {"windows", positive_int(params, "windows", 3)},
          {"local_copy", params.value("local_copy", false)}, {"points", points}};
}

// The back-to-back measure of a point (nccl-tests' method): `window_exchanges` exchanges per timed window, the
// median window's time per exchange, and algbw/busbw over it. Absent from results of older rank programs.
void add_back_to_back(json& r, const json& measured, int ranks, double bytes_per_rank) {
  using namespace comm;
  if (!measured.contains("window_s") || measured["window_s"].empty()) return;
  const int n = measured.value("window_exchanges", 1);
  std::vector<double> per_exchange_ms;
  for (double s : measured["window_s"]) per_exchange_ms.push_back(s * 1e3 / n);
  const double t = percentile(per_exchange_ms, 0.5);
  r["b2b_exchanges"] = n;
  r["b2b_windows"] = per_exchange_ms.size();
  r["b2b_time_ms"] = t;
  r["b2b_min_time_ms"] = *std::min_element(per_exchange_ms.begin(), per_exchange_ms.end());
  const double algbw = t > 0 ? bytes_per_rank / (t * 1e-3) / 1e9 : 0;
  r["b2b_algbw_gbps"] = algbw;
  r["b2b_busbw_gbps"] = busbw_from_algbw(algbw, ranks);
}

// Statistics and verdict of one point measured by `ranks` ranks.
json point_record(const json& measured, int ranks, const std::string& transport, const Thresholds& th,
                  const PairBandwidth& pair_bw) {
  using namespace comm;
  json r = {{"transport", transport}, {"ranks", ranks}};
  for (const char* k : {"dtype", "size_bytes", "size_label", "skew", "elements", "wrong"}) r[k] = measured.at(k);
  const int width = measured.at("elem_bytes").get<int>();
  const auto split = zipf_split(measured.at("elements").get<std::int64_t>(), ranks, measured.at("skew").get<double>());
  const auto recv = receive_counts(traffic_matrix(measured.at("elements").get<std::int64_t>(), ranks,
                                                  measured.at("skew").get<double>()));
  const double bytes_per_rank = double(measured.at("elements").get<std::int64_t>()) * width;
  r["bytes_moved"] = bytes_per_rank * ranks;                    // every element every rank sends, self included
  r["hot_rank_recv_bytes"] = double(*std::max_element(recv.begin(), recv.end())) * width;
  r["split_gini"] = gini(split);
  r["split_max_over_mean"] = max_over_mean(split);
  if (measured.at("wrong").get<long long>() > 0 || !measured.contains("times_s")) {
    r["status"] = "failed";
    r["reason"] = std::to_string(measured.at("wrong").get<long long>()) + " received element(s) wrong: not timed";
    r["result"] = "FAIL";
    return r;
  }
  std::vector<double> ms;
  for (double s : measured["times_s"]) ms.push_back(s * 1e3);
  const double p50 = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
  double sum = 0;
  for (double v : ms) sum += v;
  r["iterations"] = ms.size();
  r["p50_ms"] = p50;
  r["p99_ms"] = p99;
  r["mean_ms"] = sum / double(ms.size());
  r["min_ms"] = *std::min_element(ms.begin(), ms.end());
  r["max_ms"] = *std::max_element(ms.begin(), ms.end());
  // algbw: the bytes one rank sends over the median time, as nccl-tests counts it (GB/s = 1e9 B/s).
  const double algbw = p50 > 0 ? bytes_per_rank / (p50 * 1e-3) / 1e9 : 0;
  r["algbw_gbps"] = algbw;
  r["busbw_gbps"] = busbw_from_algbw(algbw, ranks);
  r["hot_rank_recv_gbps"] = p50 > 0 ? r["hot_rank_recv_bytes"].get<double>() / (p50 * 1e-3) / 1e9 : 0;
  add_back_to_back(r, measured, ranks, bytes_per_rank);
  add_link_bound(r, pair_bw, ranks, width);
  r["status"] = "ok";
  std::vector<std::string> why;
  if (th.max_p99_ms && p99 > *th.max_p99_ms) why.push_back("p99 " + std::to_string(p99) + " ms > max_p99_ms");
  if (th.min_busbw_gbps && r["busbw_gbps"].get<double>() < *th.min_busbw_gbps)
    why.push_back("busbw " + std::to_string(r["busbw_gbps"].get<double>()) + " GB/s < min_busbw_gbps" +
                  (ranks <= 1 ? " (one rank: busbw = algbw x (n-1)/n = 0)" : ""));
  r["result"] = why.empty() ? "PASS" : "FAIL";
  if (!why.empty()) r["reason"] = join(why, "; ");
  return r;
}

// The rank program mpirun starts: `aispflow-comm-rank` (transport mpi) or `aispflow-comm-nccl-rank` (transport
// nccl under mpirun). $AISPFLOW_COMM_RANK / $AISPFLOW_COMM_NCCL_RANK, else beside this executable, else where the
// build put it; empty when this build has none.
struct RankProgram {
  const char* file;
  const char* env;
  const char* built;
};
#ifdef AISPFLOW_COMM_RANK_BUILD_PATH
constexpr RankProgram kMpiRank{"aispflow-comm-rank", "AISPFLOW_COMM_RANK", AISPFLOW_COMM_RANK_BUILD_PATH};
#else
constexpr RankProgram kMpiRank{"aispflow-comm-rank", "AISPFLOW_COMM_RANK", ""};
#endif
#ifdef AISPFLOW_COMM_NCCL_RANK_BUILD_PATH
constexpr RankProgram kNcclRank{"aispflow-comm-nccl-rank", "AISPFLOW_COMM_NCCL_RANK", AISPFLOW_COMM_NCCL_RANK_BUILD_PATH};
#else
constexpr RankProgram kNcclRank{"aispflow-comm-nccl-rank", "AISPFLOW_COMM_NCCL_RANK", ""};
#endif

std::filesystem::path rank_worker(const RankProgram& program) {
  if (const char* p = std::getenv(program.env); p && *p) return p;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / program.file)) return self.parent_path() / program.file;
  return program.built;
}

// The Open MPI settings this process hands mpirun through its environment (OMPI_MCA_*, inherited by every rank):
// they decide how the host transport moves its bytes. Issue 18: the GPU hosts' image sets
// OMPI_MCA_btl_vader_single_copy_mechanism=none (copy-in/copy-out), which ompi_info reports with "data source:
// environment"; docs/nodes-comm.md says what it costs and how mpirun_args overrides it.
json ompi_mca_env() {
  json out = json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("OMPI_MCA_", 0) == 0 && kv.find('=') != std::string::npos)
      out[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  return out;
}

json run_mpi(NodeContext& ctx, const json& plan, int ranks, const std::map<std::string, std::string>& nccl_env,
            const RankProgram& program) {
  const bool srun = ctx.params.value("launch", std::string()) == "srun";
  const std::string what = std::string(&program == &kNcclRank ? "transport nccl" : "transport mpi") +
                           (srun ? " under srun" : &program == &kNcclRank ? " under mpirun" : "");
  const auto mpirun = srun ? find_srun() : find_mpirun();
  if (!mpirun)
    throw NodeError(what + " unavailable: " +
                    (srun ? "no srun on PATH (Slurm's client tools)" : "no mpirun on PATH (install openmpi-bin)"));
  const auto worker = rank_worker(program);
  if (worker.empty() || !std::filesystem::exists(worker))
    throw NodeError(what + " unavailable: " + program.file + " was not built (" +
                    (&program == &kNcclRank ? "it needs MPI, CUDA and nccl.h at build time)" : "MPI not found at build time?)"));
  const auto plan_file = ctx.out_dir / "plan.json", result_file = ctx.out_dir / "ranks_result.json";
  std::ofstream(plan_file) << plan.dump(1) << "\n";
  MpiLaunch launch;
  launch.ranks = ranks;
  launch.hosts = string_list(ctx.params, "hosts", {});
  launch.extra_args = string_list(ctx.params, "mpirun_args", {});
  launch.env = nccl_env;
  launch.env["NCCL_NVLS_ENABLE"] = "0";   // NVLink multicast stays off on the lent machines
  launch.program = {worker.string(), plan_file.string(), result_file.string()};
  launch.timeout_s = number(ctx.params, "timeout_s", 600);
  launch.srun = srun;
  launch.gpu_per_rank = srun && &program == &kNcclRank;
  ctx.info((srun ? "srun " : "mpirun ") + std::to_string(ranks) + " ranks, " + std::to_string(plan["points"].size()) + " points");
  const MpiRunResult run = run_mpirun(*mpirun, launch, ctx.out_dir / "mpirun.log", ctx.cancel);
  std::filesystem::remove(plan_file);
  auto tail = [&] {
    std::string t = run.output.size() > 3000 ? "..." + run.output.substr(run.output.size() - 3000) : run.output;
    return t;
  };
  if (run.cancelled) throw NodeError("cancelled");
  if (run.timed_out)
    throw NodeError(std::string(srun ? "srun" : "mpirun") + " (" + std::to_string(ranks) + " ranks) did not finish within timeout_s = " +
                    std::to_string(launch.timeout_s) + " s: a rank hung; the job was killed. Output:\n" + tail());
  if (run.exit_status != 0 || !std::filesystem::exists(result_file))
    throw NodeError(std::string(srun ? "srun" : "mpirun") + " (" + std::to_string(ranks) + " ranks) failed with status " + std::to_string(run.exit_status) +
                    "; no complete result. Output:\n" + tail());
  std::ifstream in(result_file);
  json result = json::parse(in, nullptr, false);
  std::filesystem::remove(result_file);
  std::filesystem::remove(ctx.out_dir / "mpirun.log");
  if (result.is_discarded() || !result.value("complete", false) || result["points"].size() != plan["points"].size())
    throw NodeError("the rank worker's result is incomplete or unreadable");
  return result;
}

class AlltoallNode : public NodeType {
 public:
  std::string name() const override { return "alltoall"; }
  std::string doc() const override {
    return "All-to-all probe for MoE expert dispatch: Zipf-skewed splits per (dtype, size, skew), every element "
           "verified, per-exchange p50/p99 latency with algbw/busbw over p50, back-to-back time and busbw (b2b_*, "
           "nccl-tests' measure), the link-bound ideal from a p2p input or pair_gbps, hot-rank volume, PASS/FAIL "
           "against thresholds (a FAIL exits 3). "
           "transport mpi (MPI_Alltoallv through mpirun) or nccl (GPUs). Writes alltoall.csv and alltoall.md.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"transport", ParamKind::string, "mpi", false, "mpi | nccl"},
        {"launch", ParamKind::string, json(), false,
         "nccl: process (every GPU of this process, ncclCommInitAll) | mpirun (one rank per GPU through mpirun, "
         "the NCCL id broadcast over MPI; with hosts, across machines); mpi or nccl: srun (ranks are tasks of the "
         "Slurm allocation, `srun --mpi=pmix`, one GPU per rank for nccl; ranks default to $SLURM_NTASKS)"},
        {"ranks", ParamKind::integer, json(), false, "mpi: number of MPI ranks (default 2); nccl: GPUs (default all)"},
        {"hosts", ParamKind::list, json(), false, "mpi: hosts for mpirun --host (default: this machine)"},
        {"mpirun_args", ParamKind::list, json(), false, "extra mpirun arguments, before the program"},
        {"sizes", ParamKind::list, json(), false, "bytes per rank (default 32 KiB, 128 KiB, 512 KiB, 2 MiB)"},
        {"model", ParamKind::any, json(), false, "model preset (e.g. gpt-oss-20b): adds dispatch-derived sizes"},
        {"config", ParamKind::map, json(), false, "overrides of the model's config"},
        {"decode_batches", ParamKind::list, json(), false, "decode batch sizes for model sizes (default [1, 32])"},
        {"prefill_lengths", ParamKind::list, json(), false, "prefill lengths for model sizes (default [2048])"},
        {"skews", ParamKind::list, json(), false, "Zipf alphas (default [0, 1.0, 1.15, 1.35]); 0 = uniform"},
        {"dtypes", ParamKind::list, json(), false, "element types (default [bf16, fp8, fp32])"},
        {"warmup", ParamKind::integer, 5, false, "untimed iterations per point"},
        {"iterations", ParamKind::integer, 30, false, "timed iterations per point (>= 30)"},
        {"window_exchanges", ParamKind::integer, 20, false,
         "exchanges per back-to-back window (nccl-tests' measure: time per exchange = window / n)"},
        {"windows", ParamKind::integer, 3, false, "back-to-back windows per point (the median counts)"},
        {"local_copy", ParamKind::boolean, false, false,
         "nccl: the share a rank keeps as a device copy beside the NCCL exchange (instead of a send to itself)"},
        {"pair_gbps", ParamKind::any, json(), false,
         "GPU pair bandwidth for the link-bound ideal when no p2p node is an input: GB/s (every pair) or an n x n matrix"},
        {"timeout_s", ParamKind::number, 600, false, "kill the whole job after this many seconds"},
        {"thresholds", ParamKind::map, json(), false, "{max_p99_ms, min_busbw_gbps}: PASS/FAIL per point"},
        {"nccl_env", ParamKind::map, json(), false, "NCCL_* settings applied before NCCL init (and recorded)"},
    };
  }
  // Version 2: the back-to-back measure, the link-bound ideal, per-rank threads in the in-process launch.
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 2}; }
  Requirements requirements(const json& params) const override {
    Requirements req;
    if (params.value("transport", std::string("mpi")) == "nccl") {
      req.gpus = 1;
      req.why = "alltoall transport nccl";
    }
    return req;
  }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};
    try {
      const std::string t = params.value("transport", std::string("mpi"));
      if (t != "mpi" && t != "nccl") return "transport: expected mpi or nccl, got \"" + t + "\"";
      const std::string l = params.value("launch", std::string("process"));
      if (l != "process" && l != "mpirun" && l != "srun")
        return "launch: expected process, mpirun or srun, got \"" + l + "\"";
      if (l == "mpirun" && t != "nccl") return "launch: mpirun applies to transport nccl (transport mpi always uses mpirun)";
      if (params.value("local_copy", false) && t != "nccl") return "local_copy: applies to transport nccl";
      (void)positive_int(params, "window_exchanges", 20);
      (void)positive_int(params, "windows", 3);
      check_pair_gbps(params);
      if (positive_int(params, "iterations", 30) < 30) return "iterations: at least 30 timed iterations are required";
      const int ranks = int(positive_int(params, "ranks", 2));
      plan_of(params, ranks);
      thresholds_of(params);
      nccl_env_of(params);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  NodeOutput run(NodeContext& ctx) const override {
    if (auto e = check_params(ctx.params); !e.empty()) throw NodeError(e);
    const std::string transport = ctx.params.value("transport", std::string("mpi"));
    const auto env = nccl_env_of(ctx.params);
    const Thresholds th = thresholds_of(ctx.params);
    const bool nccl = transport == "nccl";
    const std::string launch = ctx.params.value("launch", std::string("process"));
    const bool under_mpirun = !nccl || launch == "mpirun" || launch == "srun";
    // mpi: `ranks` processes (default 2). nccl: one rank per GPU, every GPU of this machine unless `ranks` (needed
    // with hosts) says otherwise; the dispatch sizes are spread over that many.
    // srun: the allocation's tasks ($SLURM_NTASKS, one rank each) unless `ranks` says otherwise.
    const char* tasks = launch == "srun" ? std::getenv("SLURM_NTASKS") : nullptr;
    const int ranks = has_value(ctx.params, "ranks") ? int(positive_int(ctx.params, "ranks", 2))
                      : tasks && std::atoi(tasks) > 0 ? std::atoi(tasks)
                      : !nccl ? 2
                              : std::max(1, ctx.env->resource_total("gpu"));
    json plan = plan_of(ctx.params, ranks);
    json result;
    if (under_mpirun) {
      if (nccl) ctx.info("nccl under mpirun: " + std::to_string(ranks) + " rank(s), one per GPU");
      result = run_mpi(ctx, plan, ranks, env, nccl ? kNcclRank : kMpiRank);
    } else {
      plan["ranks"] = ranks;
      plan["nccl_env"] = env;
      ctx.info("nccl over " + std::to_string(ranks) + " GPU(s), " + std::to_string(plan["points"].size()) + " points" +
               (ranks == 1 ? " (one GPU: busbw = algbw x (n-1)/n = 0)" : ""));
      try {
        result = backend_of(ctx).run_alltoall(plan);
      } catch (const NodeError&) {
        throw;
      } catch (const std::exception& e) {
        throw NodeError(std::string("transport nccl: ") + e.what());
      }
      if (!result.value("complete", false) || result["points"].size() != plan["points"].size())
        throw NodeError("transport nccl: incomplete result");
    }

    const PairBandwidth pair_bw = pair_bandwidth_for(ctx, ranks, has_value(ctx.params, "hosts"));
    json points = json::array();
    int pass = 0, fail = 0, failed = 0;
    for (const auto& m : result["points"]) {
      points.push_back(point_record(m, ranks, transport, th, pair_bw));
      const auto& p = points.back();
      (p["result"] == "PASS" ? pass : fail)++;
      if (p["status"] == "failed") ++failed;
    }
    NodeOutput out;
    out.data = {{"transport", transport}, {"ranks", ranks}, {"mpi_library", result.value("mpi_library", "")},
                {"nccl_version", result.value("nccl_version", "")},
                {"launch", launch == "srun" || nccl ? launch : "mpirun"},
                {"nccl_env", env}, {"warmup", plan["warmup"]}, {"iterations", plan["iterations"]},
                {"window_exchanges", plan["window_exchanges"]}, {"windows", plan["windows"]},
                {"local_copy", plan["local_copy"]}, {"pair_bandwidth", pair_bw.to_json()},
                {"thresholds", ctx.params.value("thresholds", json())}, {"points", points},
                {"summary", {{"pass", pass}, {"fail", fail}, {"failed_points", failed}}}};
    if (result.contains("placement")) out.data["placement"] = result["placement"];   // host:GPU of each rank
    if (under_mpirun) out.data["ompi_mca_env"] = ompi_mca_env();
    if (!nccl && out.data["ompi_mca_env"].value("OMPI_MCA_btl_vader_single_copy_mechanism", "") == "none")
      ctx.info("note: the environment sets OMPI_MCA_btl_vader_single_copy_mechanism=none: large messages go by "
               "copy-in/copy-out (docs/nodes-comm.md; mpirun_args: [--mca, btl_vader_single_copy_mechanism, cma])");
    out.data["heatmaps"] = alltoall_heatmap_data(points, transport, ranks);
    out.verdict = fail > 0 ? Verdict::expectations_not_met : Verdict::ok;
    out.data["verdict"] = to_string(out.verdict);
    write_alltoall_heatmaps(ctx, out.data["heatmaps"]);
    write_output_file(ctx, "alltoall.csv", alltoall_csv(points));
    write_output_file(ctx, "alltoall.md", alltoall_markdown(points));
    ctx.info(std::to_string(pass) + " PASS, " + std::to_string(fail) + " FAIL (" + std::to_string(failed) +
             " with wrong data) over " + std::to_string(points.size()) + " points, " + std::to_string(ranks) + " ranks");
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_alltoall_node() { return std::make_unique<AlltoallNode>(); }

}  // namespace aispflow
