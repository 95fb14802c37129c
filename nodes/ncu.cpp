// Node type `ncu`: Nsight Compute over chosen records of an upstream gemm_sweep, feeding the dual roofline.
//
// For each chosen record it runs `ncu ... aispflow replay --record FILE --index i`: the replay rebuilds the case
// from the record (provider, kernel, shape, dtype, layout, epilogue, seed), verifies it, warms it up and launches
// it once more between cudaProfilerStart/Stop (kernels/cuda/replay.hpp), so ncu (--profile-from-start off)
// measures exactly that launch. The metrics are one fixed, versioned set (nodes/ncu_profile.hpp). It writes the
// two CSVs the `roofline` node reads (kernels_csv + ncu_throughput_csv) and hands them on in its artifact, so a
// roofline node with this node as an input draws each kernel with its binding resource.
//
// Skipped, with the reason, where ncu is missing, where profiling is not permitted (ERR_NVGPUCTRPERM) and, by its
// requirements, where there is no GPU. Its cache key holds the ncu version and the metric set's name and version.
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <unistd.h>

#include "kernels/common/gemm.hpp"
#include "nodes/inputs.hpp"
#include "nodes/ncu_csv.hpp"
#include "nodes/ncu_profile.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"
#include "nodes/record_match.hpp"
#include "nodes/roofline_kernels.hpp"
#include "pipeline/child_process.hpp"
#include "pipeline/node_extras.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;

// Providers whose records `aispflow replay` can relaunch (they list their candidates: kernels/cuda/replay.hpp).
bool replayable(const std::string& provider) {
  return provider == "cublaslt" || provider == "cublaslt.sweep" || provider == "cublaslt.unfused" ||
         provider.rfind("ours.", 0) == 0;
}

// ncu: the `ncu` param (a name looked up on PATH, or a path), else the CUDA toolkit's copy.
std::optional<fs::path> find_ncu(const json& params) {
  const std::string name = params.value("ncu", std::string("ncu"));
  if (auto p = find_program(name)) return p;
  if (name == "ncu")
    for (const char* fallback : {"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"})
      if (auto p = find_program(fallback)) return p;
  return std::nullopt;
}

// Nsight Compute runs under the child-process facility: a timeout, Ctrl-C or aispflow's death ends it together with
// the `aispflow replay` it started.
ChildSpec spec_of(std::vector<std::string> argv) {
  ChildSpec spec;
  spec.argv = std::move(argv);
  spec.stop_grace = std::chrono::milliseconds(500);
  return spec;
}

std::string scratch_file(const std::string& what) {
  static std::atomic<int> counter{0};
  return (fs::temp_directory_path() / ("aispflow-" + what + "-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(counter++)))
      .string();
}

// `ncu --version` -> "2025.2.1.0", remembered per path for the life of the process (the cache key asks often).
std::string ncu_version(const fs::path& ncu) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(ncu.string()); it != known.end()) return it->second;
  const std::string log = scratch_file("ncu-version");
  const LoggedRun r = run_logged(spec_of({ncu.string(), "--version"}), log, 60);
  std::error_code ec;
  fs::remove(log, ec);
  std::string v = ncu::parse_version(r.output).value_or("unknown (" + ncu.string() + " --version printed no version)");
  return known[ncu.string()] = v;
}

std::string number_text(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string quoted(const std::string& s) {   // ncu's own CSV quotes every field
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string tail(const std::string& text, std::size_t n = 2500) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

// One launch to profile: a record, or one of its other candidates.
struct Target {
  json record;
  std::string kernel;          // what the replay launches
  bool candidate = false;      // another candidate of the record's search, not its winner
  double achieved_tflops = 0;  // from the sweep's timing of that kernel
  std::string label;           // "cublaslt.sweep prefill_t512_qkv_proj bf16"
};

std::optional<double> median_ms(const json& timing) {
  if (timing.is_object() && timing.contains("median") && timing["median"].is_number()) return timing["median"].get<double>();
  return std::nullopt;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& value) {
  if (patterns.empty()) return true;
  for (const auto& p : patterns)
    if (records::glob_match(p, value)) return true;
  return false;
}

// The records the node profiles: every ok, verified record of a replayable provider (each is its provider's winner
// for a shape, dtype, layout and epilogue), narrowed by providers / shapes / dtypes, plus `candidates` of the
// runners-up of searching providers (cublaslt.sweep, ours.cluster with autotune).
std::vector<Target> select_targets(const json& all, const json& params, std::vector<std::string>& warnings) {
  const auto providers = string_list(params, "providers", {});
  const auto shapes = string_list(params, "shapes", {});
  const auto dtypes = string_list(params, "dtypes", {});
  const int extra = params.value("candidates", 0);
  std::vector<Target> out;
  int not_replayable = 0;
  for (const json& rec : all) {
    if (!records::is_ok(rec) || !rec.value("verified", false)) continue;
    const std::string provider = records::provider_of(rec);
    if (!matches_any(providers, provider) || !matches_any(shapes, records::shape_name_of(rec)) ||
        (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), records::dtype_of(rec)) == dtypes.end()))
      continue;
    if (!replayable(provider) || !rec.contains("seed")) {
      ++not_replayable;
      continue;
    }
    const std::string label = records::identity_text(rec);
    const double flops = kernels::GemmShape::from_json(rec["shape"]).flops();
    out.push_back({rec, rec.value("kernel", std::string()), false, records::number_at(rec, "tflops").value_or(0), label});
    if (extra <= 0 || !rec.contains("candidates") || !rec["candidates"].is_array()) continue;
    std::vector<std::pair<double, std::string>> others;   // (median ms, kernel) of verified, timed runners-up
    for (const auto& c : rec["candidates"]) {
      if (!c.is_object() || !c.value("verified", false) || c.value("kernel", std::string()) == out.back().kernel) continue;
      auto ms = median_ms(c.value("time_ms", json()));
      if (!ms) ms = median_ms(c.value("screen_time_ms", json()));
      if (ms && *ms > 0) others.emplace_back(*ms, c["kernel"].get<std::string>());
    }
    std::sort(others.begin(), others.end());
    for (int i = 0; i < extra && i < int(others.size()); ++i)
      out.push_back({rec, others[std::size_t(i)].second, true, flops / (others[std::size_t(i)].first * 1e-3) / 1e12,
                     label + " runner-up " + std::to_string(i + 1)});
  }
  if (not_replayable > 0)
    warnings.push_back(std::to_string(not_replayable) + " selected record(s) left out: only cublaslt*, ours.* records "
                                                        "with a seed can be replayed");
  return out;
}

int compute_capability(const json& all) {
  for (const auto& rec : all)
    if (rec.contains("env") && rec["env"].is_object() && rec["env"].contains("cc") && rec["env"]["cc"].is_string()) {
      const std::string cc = rec["env"]["cc"];   // "9.0"
      const auto dot = cc.find('.');
      if (dot == std::string::npos) continue;
      try {
        return std::stoi(cc.substr(0, dot)) * 10 + std::stoi(cc.substr(dot + 1));
      } catch (const std::exception&) {
      }
    }
  return 0;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// What one profiled target gave.
struct Profile {
  std::vector<ncu::Launch> launches;   // every kernel between cudaProfilerStart and Stop
  std::size_t main = 0;                // the longest: the GEMM (others: a split-K reduction, a bias kernel ...)
  json replay;
};

class NcuNode : public NodeType, public EnvironmentFacts {
 public:
  std::string name() const override { return "ncu"; }
  std::string doc() const override {
    return "Nsight Compute over chosen records of upstream gemm_sweep nodes (default: every verified record of a "
           "cublaslt* or ours.* provider, i.e. each provider's winner per shape and dtype): replays each record's "
           "verified kernel launch once, warm, on the same operands (aispflow replay), with the fixed metric set "
           "roofline/2 (SM, tensor-pipe, L1, L2, DRAM throughput, achieved occupancy, TMEM on sm_100); writes "
           "kernels.csv + ncu_throughput.csv, which a `roofline` node taking this node as an input plots with each "
           "kernel's binding resource. Skipped where ncu is missing or profiling is not permitted.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"providers", ParamKind::list, json::array(), false, "profile only these providers (globs; default: all)"},
        {"shapes", ParamKind::list, json::array(), false, "profile only these shapes (globs; default: all)"},
        {"dtypes", ParamKind::list, json::array(), false, "profile only these dtypes (default: all)"},
        {"candidates", ParamKind::integer, 0, false,
         "also profile this many runners-up of each searching provider's record (cublaslt.sweep; ours.cluster "
         "with autotune), fastest first"},
        {"max_records", ParamKind::integer, 16, false, "fail rather than profile more launches than this"},
        {"metric_set", ParamKind::string, "roofline", false, "the metric set (only 'roofline', version 1, so far)"},
        {"ncu", ParamKind::string, "ncu", false, "the ncu executable: a name on PATH or a path"},
        {"clock_control", ParamKind::string, "none", false,
         "ncu --clock-control: none (the GPU's own boost clocks, as the sweep timed) | base (locked base clocks)"},
        {"cache_control", ParamKind::string, "all", false,
         "ncu --cache-control: all (caches flushed before the launch, as the sweep's flushed L2) | none"},
        {"intensity", ParamKind::string, "dram", false,
         "x of each kernel point: dram (FLOPs / DRAM bytes ncu measured) | compulsory (the record's intensity)"},
        {"warmup", ParamKind::integer, 3, false, "launches of the replay before the profiled one"},
        {"timeout_s", ParamKind::number, 300, false, "per profiled launch (ncu, replay and all)"},
    };
  }
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 1}; }
  Requirements requirements(const json&) const override {
    Requirements r;
    r.gpus = 1;
    r.why = "Nsight Compute profiles a GPU kernel";
    return r;
  }
  std::string check_params(const json& p) const override {
    if (contains_unresolved_ref(p)) return {};
    // Absent fields take their defaults (the first allowed value), as the engine fills them.
    auto one_of = [&](const char* field, std::initializer_list<const char*> allowed) -> std::string {
      const std::string v = p.value(field, std::string(*allowed.begin()));
      std::string list;
      for (const char* a : allowed) {
        if (v == a) return {};
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      return std::string("field '") + field + "': expected one of " + list + ", got '" + v + "'";
    };
    for (const auto& err : {one_of("metric_set", {"roofline"}), one_of("clock_control", {"none", "base"}),
                            one_of("cache_control", {"all", "none"}), one_of("intensity", {"dram", "compulsory"})})
      if (!err.empty()) return err;
    if (p.value("candidates", 0) < 0) return "field 'candidates': expected 0 or more";
    if (p.value("max_records", 16) < 1) return "field 'max_records': expected 1 or more";
    if (p.value("warmup", 3) < 0) return "field 'warmup': expected 0 or more";
    try {
      number(p, "timeout_s", 300);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  json environment_facts(const json& params) const override {
    const auto ncu = find_ncu(params);
    return {{"ncu_version", ncu ? ncu_version(*ncu) : std::string("not found")},
            {"metric_set", ncu::roofline_metric_set().id()}};
  }

  NodeOutput run(NodeContext& ctx) const override {
    if (std::string err = check_params(ctx.params); !err.empty()) throw NodeError(err);
    const auto ncu_path = find_ncu(ctx.params);
    if (!ncu_path)
      throw NodeSkipped("ncu (Nsight Compute) not found: '" + ctx.params.value("ncu", std::string("ncu")) +
                        "' is not on PATH nor in /usr/local/cuda/bin (install Nsight Compute or set param ncu)");
    std::vector<std::string> warnings;
    const json all = collect_records(ctx);
    std::vector<Target> targets = select_targets(all, ctx.params, warnings);
    if (targets.empty())
      throw NodeError("no record to profile: the inputs have no ok, verified record of a cublaslt* or ours.* provider "
                      "matching providers/shapes/dtypes (" + std::to_string(all.size()) + " records in the inputs)");
    const int max_records = ctx.params.value("max_records", 16);
    if (int(targets.size()) > max_records)
      throw NodeError(std::to_string(targets.size()) + " launches selected, more than max_records = " +
                      std::to_string(max_records) + ": narrow providers/shapes/dtypes or raise max_records");

    // The metrics: the set's for this GPU's architecture, less those this ncu does not offer on it.
    const auto& set = ncu::roofline_metric_set();
    const int cc = compute_capability(all);
    std::vector<std::string> metrics;
    json unavailable = json::array();
    const fs::path query_log = ctx.out_dir / "ncu_query_metrics.log";
    const LoggedRun query = run_logged(spec_of({ncu_path->string(), "--query-metrics"}), query_log, 120, ctx.cancel);
    std::error_code ec;
    fs::remove(query_log, ec);
    if (auto why = ncu::profiling_refused(query.output)) throw NodeSkipped(*why);
    const auto offered = query.exit_status == 0 ? ncu::parse_query_metrics(query.output) : std::set<std::string>();
    if (offered.empty())
      warnings.push_back("ncu --query-metrics listed nothing (status " + std::to_string(query.exit_status) +
                         "): every metric of the set is asked for");
    for (const auto& m : set.for_cc(cc)) {
      if (!offered.empty() && !offered.count(m.base()))
        unavailable.push_back({{"metric", m.name}, {"role", m.role}, {"reason", "not offered by this ncu on this GPU"}});
      else
        metrics.push_back(m.name);
    }

    // The records, as the replay reads them.
    json chosen = json::array();
    for (const auto& t : targets) chosen.push_back(t.record);
    const fs::path records_file = ctx.out_dir / "replayed_records.json";
    std::ofstream(records_file) << json{{"records", chosen}}.dump(1) << "\n";

    std::error_code self_ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", self_ec);
    if (self_ec) throw NodeError("cannot find this executable (/proc/self/exe) to run `aispflow replay`");
    const double timeout_s = number(ctx.params, "timeout_s", 300);
    std::vector<Profile> profiles;
    json first_command;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (ctx.cancelled()) throw NodeError("cancelled");
      const std::string n = std::to_string(i);
      ncu::CommandOptions o;
      o.ncu = *ncu_path;
      o.metrics = metrics;
      o.clock_control = ctx.params.value("clock_control", std::string("none"));
      o.cache_control = ctx.params.value("cache_control", std::string("all"));
      o.log_file = ctx.out_dir / ("ncu_" + n + ".csv");
      o.program = {self.string(), "replay", "--record", records_file.string(), "--index", n, "--warmup",
                   std::to_string(ctx.params.value("warmup", 3)), "--out", (ctx.out_dir / ("replay_" + n + ".json")).string()};
      if (targets[i].candidate) o.program.insert(o.program.end(), {"--kernel", targets[i].kernel});
      const auto argv = ncu::command_line(o);
      if (i == 0) {   // for the artifact: the node's scratch directory is gone by the time anyone reads it
        first_command = json::array();
        const std::string out = ctx.out_dir.string();
        for (std::string a : argv) {
          if (const auto at = a.find(out); at != std::string::npos) a.replace(at, out.size(), "<node output>");
          first_command.push_back(a);
        }
      }
      ctx.info("ncu " + std::to_string(i + 1) + "/" + std::to_string(targets.size()) + ": " + targets[i].label);
      const LoggedRun r = run_logged(spec_of(argv), ctx.out_dir / ("ncu_" + n + ".log"), timeout_s, ctx.cancel);
      const std::string table = read_file(o.log_file);
      if (auto why = ncu::profiling_refused(r.output + table)) throw NodeSkipped(*why);
      if (r.cancelled) throw NodeError("cancelled");
      const std::string who = "record " + n + " (" + targets[i].label + ")";
      if (r.timed_out) throw NodeError(who + ": ncu did not finish within timeout_s = " + number_text(timeout_s) + " s");
      if (r.exit_status != 0)
        throw NodeError(who + ": ncu exited with status " + std::to_string(r.exit_status) + ":\n" + tail(r.output + table));
      Profile p;
      try {
        p.launches = ncu::read_launches(table, "ncu_" + n + ".csv");
      } catch (const std::exception& e) {
        throw NodeError(who + ": " + e.what() + "\n" + tail(r.output));
      }
      if (p.launches.empty()) throw NodeError(who + ": ncu profiled no kernel launch:\n" + tail(r.output + table));
      for (std::size_t l = 1; l < p.launches.size(); ++l)
        if (p.launches[l].values["gpu__time_duration.sum"] > p.launches[p.main].values["gpu__time_duration.sum"]) p.main = l;
      // The replay's own word that the launch ncu measured was the verified one and computed the right product.
      p.replay = json::parse(read_file(ctx.out_dir / ("replay_" + n + ".json")), nullptr, false);
      if (p.replay.is_discarded() || !p.replay.is_object() || !p.replay.value("verified", false) ||
          !p.replay.contains("profiled") || !p.replay["profiled"].value("verified", false))
        throw NodeError(who + ": the replay did not report a verified launch (replay_" + n + ".json):\n" +
                        tail(r.output));
      profiles.push_back(std::move(p));
    }
    return finish(ctx, targets, profiles, metrics, unavailable, warnings, *ncu_path, first_command);
  }

 private:
  NodeOutput finish(NodeContext& ctx, const std::vector<Target>& targets, const std::vector<Profile>& profiles,
                    const std::vector<std::string>& metrics, const json& unavailable, std::vector<std::string>& warnings,
                    const fs::path& ncu_path, const json& command) const {
    const bool dram_intensity = ctx.params.value("intensity", std::string("dram")) == "dram";
    // The two CSVs of the roofline node: ncu's raw layout (one row per target: its main kernel, under a name unique
    // to the target, since two records may run the same kernel) and the kernels' places on the roofline.
    std::string throughput = quoted("ID") + "," + quoted("Kernel Name");
    std::string units_row = quoted("") + "," + quoted("");
    for (const auto& m : metrics) throughput += "," + quoted(m);
    std::string kernels_csv = "kernel,intensity,achieved_tflops,label\n";
    json profiled = json::array();
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const Target& t = targets[i];
      const Profile& p = profiles[i];
      const ncu::Launch& main = p.launches[p.main];
      if (i == 0)
        for (const auto& m : metrics) units_row += "," + quoted(main.units.count(m) ? main.units.at(m) : "");
      const std::string name = "[" + std::to_string(i) + " " + t.label + "] " + main.kernel;
      std::string row = quoted(std::to_string(i)) + "," + quoted(name);
      json values = json::object(), units = json::object();
      std::vector<std::string> missing;
      for (const auto& m : metrics) {
        auto v = main.values.find(m);
        row += "," + quoted(v == main.values.end() ? "" : number_text(v->second));
        if (v == main.values.end()) {
          missing.push_back(m);
        } else {
          values[m] = v->second;
          units[m] = main.units.count(m) ? main.units.at(m) : "";
        }
      }
      throughput += "\n" + row;
      // DRAM bytes of every kernel in the range (the whole GEMM's traffic), in bytes.
      double bytes = 0;
      bool have_bytes = true;
      for (const auto& l : p.launches)
        for (const char* m : {"dram__bytes_read.sum", "dram__bytes_write.sum"}) {
          auto v = l.values.find(m);
          if (v == l.values.end()) {
            have_bytes = false;
            continue;
          }
          const std::string unit = l.units.count(m) ? l.units.at(m) : "";
          bytes += v->second * (unit.empty() ? 1.0 : ncu::unit_scale(unit).value_or(1.0));
        }
      const double flops = kernels::GemmShape::from_json(t.record["shape"]).flops();
      double intensity = records::number_at(t.record, "intensity").value_or(0);
      std::string intensity_source = "compulsory (the record's)";
      if (dram_intensity && have_bytes && bytes > 0) {
        intensity = flops / bytes;
        intensity_source = "FLOPs / DRAM bytes measured by ncu";
      } else if (dram_intensity) {
        warnings.push_back(t.label + ": no DRAM bytes from ncu; placed at its compulsory intensity");
      }
      if (!missing.empty()) warnings.push_back(t.label + ": ncu gave no value for " + join(missing));
      kernels_csv += csv_field(name) + "," + number_text(intensity) + "," + number_text(t.achieved_tflops) + "," +
                     csv_field(t.label) + "\n";
      json in_range = json::array();
      for (const auto& l : p.launches)
        in_range.push_back({{"kernel", l.kernel}, {"gpu__time_duration.sum", l.values.count("gpu__time_duration.sum")
                                                                                ? json(l.values.at("gpu__time_duration.sum"))
                                                                                : json()}});
      profiled.push_back({{"index", i},
                          {"record", records::identity(t.record)},
                          {"layout", t.record.value("layout", "nn")},
                          {"epilogue", t.record.value("epilogue", "none")},
                          {"kernel", t.kernel},
                          {"candidate", t.candidate},
                          {"label", t.label},
                          {"ncu_kernel", main.kernel},
                          {"csv_kernel", name},
                          {"kernels_in_range", in_range},
                          {"metrics", values},
                          {"units", units},
                          {"metrics_missing", missing},
                          {"dram_bytes", have_bytes ? json(bytes) : json()},
                          {"intensity_flop_per_byte", intensity},
                          {"intensity_source", intensity_source},
                          {"achieved_tflops", t.achieved_tflops},
                          {"replay", p.replay}});
    }
    throughput = throughput.substr(0, throughput.find('\n')) + "\n" + units_row +
                 throughput.substr(throughput.find('\n')) + "\n";

    // Each target's binding resource, by the roofline node's own rule on these very files.
    std::vector<roofline::KernelBinding> bound;
    try {
      bound = roofline::bind_kernels(roofline::read_kernel_rows(kernels_csv, "kernels.csv"),
                                     roofline::read_throughput(throughput, "ncu_throughput.csv"), "kernels.csv");
    } catch (const std::exception& e) {
      throw NodeError(std::string("reading back the CSVs written: ") + e.what());
    }
    std::string table = "record,label,ncu_kernel,kernels_in_range";
    for (const auto& m : metrics) table += "," + m;
    table += ",intensity_flop_per_byte,achieved_tflops,binding_resource\n";
    for (std::size_t i = 0; i < targets.size(); ++i) {
      profiled[i]["binding_resource"] = bound[i].resource;
      profiled[i]["binding"] = bound[i].describe();
      table += std::to_string(i) + "," + csv_field(targets[i].label) + "," + csv_field(profiled[i]["ncu_kernel"]) + "," +
               std::to_string(profiles[i].launches.size());
      for (const auto& m : metrics)
        table += "," + (profiled[i]["metrics"].contains(m) ? number_text(profiled[i]["metrics"][m].get<double>()) : "");
      table += "," + number_text(profiled[i]["intensity_flop_per_byte"].get<double>()) + "," +
               number_text(targets[i].achieved_tflops) + "," + bound[i].resource + "\n";
      ctx.info(targets[i].label + ": " + bound[i].describe());
    }
    write_output_file(ctx, "kernels.csv", kernels_csv);
    write_output_file(ctx, "ncu_throughput.csv", throughput);
    write_output_file(ctx, "ncu_metrics.csv", table);
    for (const auto& w : warnings) ctx.info("warning: " + w);

    const auto& set = ncu::roofline_metric_set();
    json set_json = {{"name", set.name}, {"version", set.version}, {"id", set.id()}, {"metrics", json::array()}};
    for (const auto& m : set.metrics)
      set_json["metrics"].push_back({{"role", m.role}, {"name", m.name}, {"what", m.what},
                                     {"requested", std::find(metrics.begin(), metrics.end(), m.name) != metrics.end()}});
    NodeOutput out;
    out.data = {{"metric_set", set_json},
                {"metrics_requested", metrics},
                {"metrics_unavailable", unavailable},
                {"ncu", {{"path", ncu_path.string()}, {"version", ncu_version(ncu_path)}, {"command", command}}},
                {"profiled", profiled},
                {"warnings", warnings},
                // What a downstream `roofline` reads (nodes/roofline.cpp), as its kernels_csv / ncu_throughput_csv.
                {"roofline_inputs", {{"kernels_csv", kernels_csv}, {"ncu_throughput_csv", throughput}}}};
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_ncu_node() { return std::make_unique<NcuNode>(); }

}  // namespace aispflow
