// Node type `alltoall`: MoE-readiness all-to-all probes (docs/nodes-comm.md). For every dtype x skew x message
// size it runs the all-to-all of kernels/common/alltoall.hpp's traffic model (Zipf-skewed destinations, every
// received byte verified), records p50 / p99 latency and bus bandwidth per point, judges each point against the
// workflow's thresholds and draws the p99 and bus-bandwidth heatmaps. Transport `mpi`: MPI_Alltoallv on host
// buffers, one process per rank, launched through mpirun (so it runs on a machine without GPUs, and on many
// machines through a hostfile). Hardware-bound and exclusive, like every measuring node.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "nodes/alltoall.hpp"

#include "kernels/common/alltoall.hpp"
#include "nodes/heatmap_plot.hpp"
#include "nodes/inputs.hpp"
#include "nodes/model_presets.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"
#include "nodes/record_match.hpp"

extern char** environ;

namespace aispflow {

namespace fs = std::filesystem;

namespace {

// The study's message sizes per rank (32 KiB .. 2 MiB).
const std::vector<std::int64_t> kStudySizes = {32 << 10, 128 << 10, 512 << 10, 2 << 20};
const std::vector<double> kStudySkews = {0.0, 1.0, 1.15, 1.35};

int element_bytes_of(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8" || dtype == "fp8_e4m3") return 1;
  return 0;
}

std::string size_label(std::int64_t bytes) {
  char b[32];
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) std::snprintf(b, sizeof b, "%lld MiB", (long long)(bytes >> 20));
  else if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) std::snprintf(b, sizeof b, "%lld KiB", (long long)(bytes >> 10));
  else std::snprintf(b, sizeof b, "%lld B", (long long)bytes);
  return b;
}

// "32KiB", "2 MiB", "4096" or a number -> bytes.
std::int64_t parse_size(const json& v, const std::string& field) {
  if (v.is_number_integer() && v.get<std::int64_t>() > 0) return v.get<std::int64_t>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::erase(s, ' ');
    std::size_t pos = 0;
    double x = 0;
    try {
      x = std::stod(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    const std::string unit = s.substr(pos);
    const std::map<std::string, double> units = {{"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0},
                                                 {"GiB", 1073741824.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
    if (pos > 0 && units.count(unit) && x > 0) return std::int64_t(std::llround(x * units.at(unit)));
  }
  throw std::invalid_argument(field + ": expected a positive size in bytes or like \"32KiB\", \"2MiB\"; got " + v.dump());
}

struct Point {
  std::string dtype;
  int element_bytes = 1;
  std::int64_t payload_bytes = 0;
  std::string label;   // column label: the size, and where it comes from for model-derived sizes
  double skew = 0;
};

struct Plan {
  int ranks = 2;
  std::vector<Point> points;
  int warmup = 5, iterations = 30;
  double timeout_s = 300;
  std::optional<double> max_p99_ms, min_busbw_gbps;
};

Plan read_plan(const json& p) {
  Plan plan;
  plan.ranks = int(positive_int(p, "ranks", 2));
  plan.warmup = int(has_value(p, "warmup") ? p["warmup"].get<int>() : 5);
  if (plan.warmup < 0) throw std::invalid_argument("warmup: expected >= 0");
  plan.iterations = int(positive_int(p, "iterations", 30));
  if (plan.iterations < 30) throw std::invalid_argument("iterations: at least 30 (p99 needs them), got " +
                                                        std::to_string(plan.iterations));
  plan.timeout_s = has_value(p, "timeout_s") ? p["timeout_s"].get<double>() : 300.0;
  if (!(plan.timeout_s > 0)) throw std::invalid_argument("timeout_s: expected a positive number of seconds");
  if (has_value(p, "thresholds")) {
    const json& t = p["thresholds"];
    if (!t.is_object()) throw std::invalid_argument("thresholds: expected {max_p99_ms, min_busbw_gbps}");
    for (auto it = t.begin(); it != t.end(); ++it) {
      if (!it.value().is_number()) throw std::invalid_argument("thresholds." + it.key() + ": expected a number");
      if (it.key() == "max_p99_ms") plan.max_p99_ms = it.value().get<double>();
      else if (it.key() == "min_busbw_gbps") plan.min_busbw_gbps = it.value().get<double>();
      else throw std::invalid_argument("thresholds: unknown key '" + it.key() + "' (max_p99_ms, min_busbw_gbps)");
    }
  }
  std::vector<std::int64_t> sizes;
  if (has_value(p, "sizes")) {
    if (!p["sizes"].is_array() || p["sizes"].empty()) throw std::invalid_argument("sizes: expected a list of sizes");
    for (std::size_t i = 0; i < p["sizes"].size(); ++i) sizes.push_back(parse_size(p["sizes"][i], "sizes[" + std::to_string(i) + "]"));
  } else {
    sizes = kStudySizes;   // the study's sizes; a model adds its dispatch sizes to them
  }
  std::vector<double> skews = kStudySkews;
  if (has_value(p, "skews")) {
    skews.clear();
    for (const auto& s : p["skews"]) {
      if (!s.is_number() || s.get<double>() < 0) throw std::invalid_argument("skews: expected Zipf alphas >= 0, got " + s.dump());
      skews.push_back(s.get<double>());
    }
  }
  const auto dtypes = string_list(p, "dtypes", {"bf16"});
  for (const auto& dtype : dtypes) {
    const int eb = element_bytes_of(dtype);
    if (eb == 0) throw std::invalid_argument("dtypes: unknown dtype '" + dtype + "' (bf16, fp8, fp32)");
    std::vector<std::pair<std::int64_t, std::string>> columns;
    for (auto s : sizes) columns.push_back({s / eb * eb, size_label(s / eb * eb)});
    if (has_value(p, "model")) {
      // The model's dispatch: every token's hidden state goes to top_k experts, spread over the ranks.
      const ModelConfig m = resolve_model(p["model"], json());
      if (!m.is_moe()) throw std::invalid_argument("model: '" + m.name + "' has no experts to dispatch to");
      auto add = [&](const std::string& what, std::int64_t tokens) {
        const std::int64_t bytes = tokens * m.hidden * eb * m.top_k / plan.ranks / eb * eb;
        if (bytes > 0) columns.push_back({bytes, what + " (" + size_label(bytes) + ")"});
      };
      for (auto b : has_value(p, "decode_batches") ? positive_int_list(p, "decode_batches", {}) : std::vector<std::int64_t>{1, 64})
        add("decode b" + std::to_string(b), b);
      for (auto t : has_value(p, "prefill_lengths") ? positive_int_list(p, "prefill_lengths", {}) : std::vector<std::int64_t>{4096})
        add("prefill t" + std::to_string(t), t);
    }
    for (double skew : skews)
      for (const auto& [bytes, label] : columns) plan.points.push_back({dtype, eb, bytes, label, skew});
  }
  return plan;
}

fs::path self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0) return (fs::path(dir) / name).string();
  return {};
}

std::string tail_of(const fs::path& file, std::size_t bytes) {
  std::ifstream in(file);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

// Runs argv in its own process group, stdout and stderr into `log`; kills the whole group when the time is up or
// the run is cancelled. Returns the exit status (-1: timed out, -2: cancelled).
int run_launcher(const std::vector<std::string>& argv, const fs::path& log, double timeout_s, const NodeContext& ctx) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) throw NodeError("cannot start " + argv[0] + ": " + std::strerror(err));
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s || ctx.cancelled()) {
      ::kill(-pid, SIGKILL);   // mpirun and every rank it started: nothing is left running
      ::waitpid(pid, &status, 0);
      return waited > timeout_s ? -1 : -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

json run_mpi(const Plan& plan, const json& params, const NodeContext& ctx) {
  const fs::path worker = self_dir() / "aispflow-comm-worker";
  if (!fs::exists(worker))
    throw NodeError("transport mpi: " + worker.string() + " is missing (this aispflow was built without MPI: install "
                    "OpenMPI, e.g. .ci/install-deps.sh, and rebuild)");
  const std::string mpirun = find_on_path("mpirun");
  if (mpirun.empty()) throw NodeError("transport mpi: no mpirun on PATH (install OpenMPI: .ci/install-deps.sh)");
  json spec = {{"warmup", plan.warmup}, {"iterations", plan.iterations}, {"points", json::array()}};
  for (const auto& pt : plan.points)
    spec["points"].push_back({{"dtype", pt.dtype}, {"element_bytes", pt.element_bytes},
                              {"payload_bytes", pt.payload_bytes}, {"skew", pt.skew}});
  const fs::path out = fs::absolute(ctx.out_dir);
  const fs::path spec_file = out / "alltoall_spec.json", result_file = out / "alltoall_result.json",
                 log_file = out / "mpirun.log";
  write_output_file(ctx, "alltoall_spec.json", spec.dump(2) + "\n");
  std::vector<std::string> argv = {mpirun};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");   // OpenMPI refuses root without it
  if (plan.ranks > int(std::thread::hardware_concurrency())) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), {"-np", std::to_string(plan.ranks)});
  if (has_value(params, "hosts")) argv.insert(argv.end(), {"--host", join(string_list(params, "hosts", {}))});
  for (const auto& a : string_list(params, "mpirun_args", {})) argv.push_back(a);
  argv.insert(argv.end(), {"-x", "NCCL_NVLS_ENABLE=0"});
  for (const char* hook : {"AISPFLOW_COMM_TEST_CORRUPT", "AISPFLOW_COMM_TEST_ABORT_RANK"})
    if (std::getenv(hook)) argv.insert(argv.end(), {"-x", hook});
  argv.insert(argv.end(), {worker.string(), spec_file.string(), result_file.string()});
  ctx.info("mpirun -np " + std::to_string(plan.ranks) + ": " + std::to_string(plan.points.size()) + " points");
  const int status = run_launcher(argv, log_file, plan.timeout_s, ctx);
  if (status == -2) throw NodeError("cancelled; every rank was stopped");
  if (status == -1)
    throw NodeError("timed out after " + std::to_string(int(plan.timeout_s)) + " s (timeout_s); every rank was "
                    "stopped, no result recorded. mpirun said: " + tail_of(log_file, 800));
  if (status != 0 || !fs::exists(result_file))
    throw NodeError("mpirun exited with status " + std::to_string(status) + "; no result recorded (a rank failed). "
                    "mpirun said: " + tail_of(log_file, 1200));
  std::ifstream in(result_file);
  return json::parse(in);
}

// PASS / FAIL of a point against the thresholds; a point with wrong bytes fails whatever its speed.
void judge(json& point, const Plan& plan) {
  std::vector<std::string> why;
  if (point.value("status", "") != "ok") why.push_back(point.value("reason", std::string("no timing")));
  if (plan.max_p99_ms && point.contains("p99_ms") && point["p99_ms"].get<double>() > *plan.max_p99_ms)
    why.push_back("p99 " + records::format_number(point["p99_ms"].get<double>()) + " ms > max_p99_ms " +
                  records::format_number(*plan.max_p99_ms));
  if (plan.min_busbw_gbps && point.contains("busbw_gbps") && point["busbw_gbps"].get<double>() < *plan.min_busbw_gbps)
    why.push_back("busbw " + records::format_number(point["busbw_gbps"].get<double>()) + " GB/s < min_busbw_gbps " +
                  records::format_number(*plan.min_busbw_gbps));
  point["verdict"] = why.empty() ? "PASS" : "FAIL";
  if (!why.empty()) point["verdict_reason"] = join(why);
}

void write_tables_and_heatmaps(const NodeContext& ctx, const json& points, const Plan& plan, const std::string& title) {
  std::string csv = "transport,ranks,dtype,payload_bytes,skew,p50_ms,p99_ms,algbw_gbps,busbw_gbps,hot_rank_recv_gbps,"
                    "split_gini,split_max_over_mean,wrong,verdict\n";
  std::string md = "# " + title + "\n\n| dtype | skew | size | p50 ms | p99 ms | busbw GB/s | hot-rank recv GB/s | "
                   "gini | wrong | verdict |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const json& p = points[i];
    auto num = [&](const char* f) { return p.contains(f) ? records::format_number(p[f].get<double>()) : std::string("-"); };
    csv += p["transport"].get<std::string>() + "," + std::to_string(p["ranks"].get<int>()) + "," +
           p["dtype"].get<std::string>() + "," + std::to_string(p["payload_bytes"].get<std::int64_t>()) + "," +
           num("skew") + "," + num("p50_ms") + "," + num("p99_ms") + "," + num("algbw_gbps") + "," + num("busbw_gbps") +
           "," + num("hot_rank_recv_gbps") + "," + num("split_gini") + "," + num("split_max_over_mean") + "," +
           std::to_string(p["wrong"].get<std::int64_t>()) + "," + p["verdict"].get<std::string>() + "\n";
    md += "| " + p["dtype"].get<std::string>() + " | " + num("skew") + " | " + plan.points[i].label + " | " +
          num("p50_ms") + " | " + num("p99_ms") + " | " + num("busbw_gbps") + " | " + num("hot_rank_recv_gbps") +
          " | " + num("split_gini") + " | " + std::to_string(p["wrong"].get<std::int64_t>()) + " | " +
          p["verdict"].get<std::string>() + (p.contains("verdict_reason") ? ": " + p["verdict_reason"].get<std::string>() : "") +
          " |\n";
  }
  md += "\nbusbw = algbw x (n-1)/n (nccl-tests' all-to-all definition); algbw = payload per rank / p50 time. The "
        "hot rank receives the most (skewed destinations): its receive bandwidth bounds a skewed exchange.\n";
  write_output_file(ctx, "alltoall.csv", csv);
  write_output_file(ctx, "alltoall.md", md);
  // One heatmap pair per dtype: rows = skew, columns = message size.
  std::map<std::string, std::vector<std::size_t>> by_dtype;
  for (std::size_t i = 0; i < plan.points.size(); ++i) by_dtype[plan.points[i].dtype].push_back(i);
  for (const auto& [dtype, idx] : by_dtype) {
    std::vector<std::string> cols, rows;
    for (std::size_t i : idx) {
      if (std::find(cols.begin(), cols.end(), plan.points[i].label) == cols.end()) cols.push_back(plan.points[i].label);
      const std::string r = "alpha " + records::format_number(plan.points[i].skew);
      if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
    }
    HeatmapSpec p99{title + ": p99 latency, " + dtype, std::to_string(plan.ranks) + " ranks, mpi", "message size per rank",
                    "Zipf skew of destinations", cols, rows, {}, "ms", false, {}};
    HeatmapSpec bw = p99;
    bw.title = title + ": bus bandwidth, " + dtype;
    bw.unit = "GB/s";
    bw.higher_is_better = true;
    p99.values.assign(rows.size(), std::vector<double>(cols.size(), std::nan("")));
    bw.values = p99.values;
    p99.notes.assign(rows.size(), std::vector<std::string>(cols.size()));
    bw.notes = p99.notes;
    for (std::size_t i : idx) {
      const auto r = std::size_t(std::find(rows.begin(), rows.end(), "alpha " + records::format_number(plan.points[i].skew)) - rows.begin());
      const auto c = std::size_t(std::find(cols.begin(), cols.end(), plan.points[i].label) - cols.begin());
      const json& p = points[i];
      if (p.contains("p99_ms")) p99.values[r][c] = p["p99_ms"].get<double>();
      if (p.contains("busbw_gbps")) bw.values[r][c] = p["busbw_gbps"].get<double>();
      if (p["verdict"] == "FAIL") p99.notes[r][c] = bw.notes[r][c] = "FAIL";
    }
    write_output_file(ctx, "heatmap_p99_" + dtype + ".svg", render_heatmap_svg(p99));
    write_output_file(ctx, "heatmap_busbw_" + dtype + ".svg", render_heatmap_svg(bw));
  }
}

class AlltoallNode final : public NodeType {
 public:
  std::string name() const override { return "alltoall"; }
  std::string doc() const override {
    return "MoE-readiness all-to-all probe: Zipf-skewed destination splits x message sizes x dtypes; every received "
           "byte verified; p50/p99 latency, algbw and busbw (nccl-tests' definition) per point; PASS/FAIL against "
           "thresholds (a FAIL exits 3, as expect does); heatmaps. Transport mpi: MPI_Alltoallv under mpirun.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"transport", ParamKind::string, json("mpi"), false, "mpi (MPI_Alltoallv on host buffers, launched with mpirun)"},
        {"ranks", ParamKind::integer, json(2), false, "MPI ranks (processes)"},
        {"hosts", ParamKind::list, json(), false, "mpirun --host list (multi-node: docs/multinode.md)"},
        {"mpirun_args", ParamKind::list, json(), false, "extra mpirun arguments, e.g. [--hostfile, hosts.txt]"},
        {"sizes", ParamKind::list, json(), false, "payload per rank: bytes or \"32KiB\"; default the study's 32 KiB..2 MiB"},
        {"model", ParamKind::any, json(), false, "a gemm_shapes model preset: adds its dispatch sizes"},
        {"decode_batches", ParamKind::list, json(), false, "decode batch sizes for the model's dispatch (default [1, 64])"},
        {"prefill_lengths", ParamKind::list, json(), false, "prefill lengths for the model's dispatch (default [4096])"},
        {"skews", ParamKind::list, json(), false, "Zipf alphas of the destination split; default [0, 1.0, 1.15, 1.35]"},
        {"dtypes", ParamKind::list, json::array({"bf16"}), false, "bf16, fp8, fp32 (element size of the splits)"},
        {"warmup", ParamKind::integer, json(5), false, "untimed iterations per point"},
        {"iterations", ParamKind::integer, json(30), false, "timed iterations per point (at least 30)"},
        {"timeout_s", ParamKind::number, json(300), false, "the whole probe; past it every rank is stopped, the node fails"},
        {"thresholds", ParamKind::map, json(), false, "{max_p99_ms, min_busbw_gbps}: PASS/FAIL per point"},
        {"title", ParamKind::string, json("all-to-all"), false, "heading of tables and heatmaps"},
    };
  }
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 1}; }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};
    try {
      const std::string transport = params.value("transport", std::string("mpi"));
      if (transport != "mpi") return "transport: '" + transport + "' is not available in this build (mpi)";
      (void)read_plan(params);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  NodeOutput run(NodeContext& ctx) const override {
    Plan plan;
    try {
      plan = read_plan(ctx.params);
    } catch (const std::invalid_argument& e) {
      throw NodeError(e.what());
    }
    json result = run_mpi(plan, ctx.params, ctx);
    json points = result.value("points", json::array());
    if (points.size() != plan.points.size())
      throw NodeError("the ranks returned " + std::to_string(points.size()) + " points of " +
                      std::to_string(plan.points.size()) + "; not recording a partial result");
    int failed = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      points[i]["size_label"] = plan.points[i].label;
      judge(points[i], plan);
      failed += points[i]["verdict"] == "FAIL" ? 1 : 0;
    }
    const std::string title = ctx.params.value("title", std::string("all-to-all"));
    write_tables_and_heatmaps(ctx, points, plan, title);
    NodeOutput out;
    out.verdict = failed ? Verdict::expectations_not_met : Verdict::ok;
    out.data = {{"points", points}, {"transport", "mpi"}, {"ranks", plan.ranks}, {"mpi", result.value("mpi", "")},
                {"env", backend_of(ctx).fingerprint()}, {"failed_points", failed}, {"verdict", to_string(out.verdict)},
                {"thresholds", ctx.params.value("thresholds", json::object())}};
    ctx.info(std::to_string(points.size()) + " points, " + std::to_string(failed) + " FAIL");
    return out;
  }
};

}  // namespace

json mpi_launcher_info() {
  const std::string mpirun = find_on_path("mpirun");
  const fs::path worker = self_dir() / "aispflow-comm-worker";
  if (mpirun.empty()) return {{"unavailable", "no mpirun on PATH (install OpenMPI: .ci/install-deps.sh)"}};
  json info = {{"mpirun", mpirun}};
  if (FILE* f = ::popen((mpirun + " --version 2>&1").c_str(), "r")) {
    char line[256] = {};
    if (std::fgets(line, sizeof line, f)) {
      std::string v(line);
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      info["version"] = v;
    }
    ::pclose(f);
  }
  if (fs::exists(worker)) info["worker"] = worker.string();
  else info["unavailable"] = "this aispflow was built without MPI: no " + worker.string();
  return info;
}

std::unique_ptr<NodeType> make_alltoall_node() { return std::make_unique<AlltoallNode>(); }

}  // namespace aispflow
