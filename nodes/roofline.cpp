// Node type `roofline`: places every measured GEMM on the roofline of the machine it ran on.
//
// Inputs: `peak` artifacts ("ceilings") and `gemm_sweep` artifacts ("records"); optionally an Nsight Compute
// CSV export (per-kernel DRAM bytes) with a FLOPs metadata CSV, for points whose intensity comes from
// measured traffic instead of compulsory traffic.
//
// For each ok record: attainable = min(compute peak, intensity x bandwidth), where the bandwidth is the best
// measured ceiling of the slowest memory level (the one compulsory traffic has to cross: DRAM / HBM) and the
// compute peak is the best measured ceiling of the record's dtype (else the highest measured one, and the
// CSV says so). binding = the smaller term. With datasheet ceilings present, the same against the datasheet.
//
// Outputs: roofline.svg (drawn by nodes/roofline_plot.cpp), roofline.csv and {"points", "ceilings", "ridge_points", ...}.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "kernels/common/gemm.hpp"
#include "nodes/inputs.hpp"
#include "nodes/ncu_csv.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/record_match.hpp"
#include "nodes/roofline_kernels.hpp"
#include "nodes/roofline_plot.hpp"

namespace aispflow {
namespace {

using records::format_number;
using roofline::Ceiling;
using roofline::Point;

// ---- ceilings ------------------------------------------------------------------------------------------


const std::vector<std::string> kDtypes = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp8",
                                          "int8", "fp4"};
const std::vector<std::string> kLevelWords = {"hbm", "dram", "ddr", "gddr", "memory", "mem", "llc", "l3", "l2", "l1",
                                              "smem", "shared"};

std::vector<std::string> name_tokens(const std::string& name) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : name) {
    if (c == '.' || c == '_' || c == '-' || c == ' ' || c == '/') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += char(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The memory level of a ceiling: its "level" field, else a level word in its name ("hbm.copy" -> hbm,
// "datasheet.hbm" -> hbm), else the first word of the name.
std::string level_of(const json& c, const std::string& name) {
  if (c.contains("level") && c["level"].is_string()) return c["level"];
  const auto tokens = name_tokens(name);
  for (const auto& t : tokens)
    if (std::find(kLevelWords.begin(), kLevelWords.end(), t) != kLevelWords.end()) return t;
  return tokens.empty() ? std::string("memory") : tokens.front();
}

std::string dtype_of_ceiling(const json& c, const std::string& name) {
  if (c.contains("dtype") && c["dtype"].is_string()) return c["dtype"];
  std::string lowered;
  for (char ch : name) lowered += char(std::tolower(static_cast<unsigned char>(ch)));
  // "fp8_e4m3" spans two tokens: look for the longest dtype name in the whole name first.
  for (const auto& d : {"fp8_e4m3", "fp8_e5m2"})
    if (lowered.find(d) != std::string::npos) return d;
  for (const auto& t : name_tokens(name))
    if (std::find(kDtypes.begin(), kDtypes.end(), t) != kDtypes.end()) return t;
  return {};
}

// Values in GB/s or TFLOP/s whatever unit the producer chose.
std::optional<double> normalized(double v, const std::string& unit, bool memory) {
  static const std::map<std::string, double> mem = {{"GB/s", 1},        {"TB/s", 1e3},   {"MB/s", 1e-3},
                                                    {"GiB/s", 1.073741824}, {"TiB/s", 1099.511627776},
                                                    {"MiB/s", 0.001048576}, {"B/s", 1e-9}};
  static const std::map<std::string, double> flop = {{"TFLOP/s", 1}, {"GFLOP/s", 1e-3}, {"PFLOP/s", 1e3},
                                                     {"FLOP/s", 1e-12}, {"TFLOPS", 1}, {"GFLOPS", 1e-3}};
  const auto& table = memory ? mem : flop;
  auto it = table.find(unit);
  if (it == table.end()) return std::nullopt;
  return v * it->second;
}

std::vector<Ceiling> read_ceilings(const json& raw, std::vector<std::string>& warnings) {
  std::vector<Ceiling> out;
  for (const auto& c : raw) {
    if (!c.is_object()) continue;
    const std::string kind = c.value("kind", std::string());
    if (kind != "memory" && kind != "compute") continue;   // interconnect etc.: not a roofline
    const std::string name = c.value("name", std::string("unnamed"));
    if (!c.contains("value") || !c["value"].is_number() || !(c["value"].get<double>() > 0)) {
      warnings.push_back("ceiling " + name + " has no positive value: left out");
      continue;
    }
    Ceiling x;
    x.name = name;
    x.memory = kind == "memory";
    const std::string unit = c.value("unit", std::string(x.memory ? "GB/s" : "TFLOP/s"));
    const auto v = normalized(c["value"].get<double>(), unit, x.memory);
    if (!v) throw NodeError("ceiling " + name + ": unknown unit '" + unit + "' (expected " +
                            (x.memory ? "GB/s, TB/s, MB/s, GiB/s" : "TFLOP/s, GFLOP/s, PFLOP/s") + ")");
    x.value = *v;
    x.measured = c.value("source", std::string("measured")) != "datasheet";
    x.method = c.value("method", std::string());
    if (x.memory)
      x.level = level_of(c, name);
    else
      x.dtype = dtype_of_ceiling(c, name);
    // The same ceiling from two peak nodes (e.g. the same machine measured twice): keep the better one.
    auto same = std::find_if(out.begin(), out.end(), [&](const Ceiling& o) {
      return o.name == x.name && o.memory == x.memory && o.measured == x.measured;
    });
    if (same != out.end())
      same->value = std::max(same->value, x.value);
    else
      out.push_back(std::move(x));
  }
  return out;
}

// Keeps only the ceilings named in `wanted` (when given); unknown names are an error listing the known ones.
void filter_ceilings(std::vector<Ceiling>& all, const json& wanted, bool memory, const std::string& param) {
  if (!wanted.is_array() || wanted.empty()) return;
  std::set<std::string> names;
  for (const auto& w : wanted) names.insert(w.get<std::string>());
  std::string known;
  for (const auto& c : all)
    if (c.memory == memory) known += (known.empty() ? "" : ", ") + c.name;
  for (const auto& n : names) {
    const bool found = std::any_of(all.begin(), all.end(), [&](const Ceiling& c) { return c.memory == memory && c.name == n; });
    if (!found)
      throw NodeError("param '" + param + "': no " + (memory ? "memory" : "compute") + " ceiling named '" + n +
                      "'; the inputs have: " + (known.empty() ? std::string("none") : known));
  }
  std::erase_if(all, [&](const Ceiling& c) { return c.memory == memory && !names.count(c.name); });
}

// The roof that compulsory traffic meets: the best ceiling of the slowest memory level.
const Ceiling* main_memory(const std::vector<Ceiling>& cs, bool measured) {
  std::map<std::string, const Ceiling*> best_per_level;
  for (const auto& c : cs) {
    if (!c.memory || c.measured != measured) continue;
    auto& best = best_per_level[c.level];
    if (!best || c.value > best->value) best = &c;
  }
  const Ceiling* slowest = nullptr;
  for (const auto& [_, c] : best_per_level)
    if (!slowest || c->value < slowest->value) slowest = c;
  return slowest;
}

struct ComputeChoice {
  const Ceiling* ceiling = nullptr;
  bool dtype_match = false;
};

ComputeChoice compute_for(const std::vector<Ceiling>& cs, const std::string& dtype, bool measured) {
  ComputeChoice best, fallback;
  for (const auto& c : cs) {
    if (c.memory || c.measured != measured) continue;
    if (c.dtype == dtype && (!best.ceiling || c.value > best.ceiling->value)) best = {&c, true};
    if (!fallback.ceiling || c.value > fallback.ceiling->value) fallback = {&c, false};
  }
  return best.ceiling ? best : fallback;
}

// ---- points --------------------------------------------------------------------------------------------


struct Roof {
  const Ceiling* memory = nullptr;
  ComputeChoice compute;
  double attainable(double intensity) const {
    return std::min(compute.ceiling->value, intensity * memory->value / 1000.0);   // GB/s x FLOP/B -> TFLOP/s
  }
};

// ---- context: device and date for the title ------------------------------------------------------------

std::string device_name(const json& env) {
  if (!env.is_object()) return {};
  if (env.contains("devices") && env["devices"].is_array() && !env["devices"].empty() &&
      env["devices"][0].is_object() && env["devices"][0].contains("name")) {
    std::string n = env["devices"][0]["name"].get<std::string>();
    if (env["devices"].size() > 1) n += " (x" + std::to_string(env["devices"].size()) + ")";
    return n;
  }
  for (const char* key : {"device", "gpu", "device_name", "cpu_model"})
    if (env.contains(key) && env[key].is_string()) return env[key];
  if (env.contains("cpu") && env["cpu"].is_object() && env["cpu"].contains("cpu_model"))
    return env["cpu"]["cpu_model"].get<std::string>();
  return {};
}

// {"skipped": 12, "failed": 1} -> "12 skipped, 1 failed"
std::string counts_text(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [what, n] : counts)
    if (n > 0) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  return s;
}

std::string today_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// ---- CSV -----------------------------------------------------------------------------------------------

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string to_csv(const std::vector<Point>& points) {
  std::string s =
      "record,source,provider,shape,dtype,intensity_flop_per_byte,achieved_tflops,attainable_tflops,pct_of_roof,"
      "binding,memory_ceiling,compute_ceiling,compute_ceiling_choice,datasheet_attainable_tflops,"
      "pct_of_datasheet_roof,pct_of_compute_ceiling\n";
  for (const auto& p : points) {
    s += csv_field(p.id) + "," + p.source + "," + csv_field(p.provider) + "," + csv_field(p.shape) + "," +
         csv_field(p.dtype) + "," + csv_number(p.intensity) + "," + csv_number(p.achieved) + "," +
         csv_number(p.attainable) + "," + csv_number(100.0 * p.achieved / p.attainable) + "," + p.binding + "," +
         csv_field(p.memory_ceiling) + "," + csv_field(p.compute_ceiling) + "," + csv_field(p.compute_choice) + ",";
    if (p.ds_attainable)
      s += csv_number(*p.ds_attainable) + "," + csv_number(100.0 * p.achieved / *p.ds_attainable);
    else
      s += ",";
    s += "," + csv_number(100.0 * p.achieved / p.compute_ceiling_tflops) + "\n";
  }
  return s;
}

std::string read_text(const std::filesystem::path& p, const std::string& param) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw NodeError("param '" + param + "': cannot read " + p.string());
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// ---- the node type -------------------------------------------------------------------------------------

class RooflineNode : public NodeType {
 public:
  std::string name() const override { return "roofline"; }
  std::string doc() const override {
    return "Roofline of the measured machine: from peak ceilings and sweep records (and optionally an Nsight "
           "Compute CSV with a kernel-FLOPs CSV for measured-bytes points) computes each record's attainable "
           "TFLOP/s = min(compute peak, intensity x bandwidth), % of roof and binding resource, and draws "
           "roofline.svg (log-log, measured solid / datasheet dashed ceilings, ridge points, legend) plus "
           "roofline.csv.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"title", ParamKind::string, json(), false, "plot title (default: 'Roofline: <device>')"},
        {"ncu_csv", ParamKind::path, json(), false,
         "Nsight Compute CSV export with dram__bytes.sum and gpu__time_duration.sum per kernel launch"},
        {"ncu_flops_csv", ParamKind::path, json(), false,
         "CSV kernel,flops[,provider,shape,dtype]: FLOPs per launch of the kernels in ncu_csv"},
        {"kernels_csv", ParamKind::path, json(), false,
         "CSV kernel,intensity,achieved_tflops[,label]: kernels placed on the roofline (with ncu_throughput_csv)"},
        {"ncu_throughput_csv", ParamKind::path, json(), false,
         "Nsight Compute CSV of sm__throughput, tmem__throughput, l2__throughput, dram__throughput per kernel: "
         "each kernels_csv kernel's binding resource is its most utilised one. Without these two params, an input "
         "`ncu` node supplies both"},
        {"memory_ceilings", ParamKind::list, json::array(), false, "memory ceiling names to use (default: all)"},
        {"compute_ceilings", ParamKind::list, json::array(), false, "compute ceiling names to use (default: all)"},
        {"all_ceilings", ParamKind::boolean, false, false,
         "draw every ceiling (default: the compute ceilings of the points' dtypes and the best memory ceiling per "
         "level and source; equal values share one line and label either way)"},
        {"width", ParamKind::integer, 1100, false, "SVG width in pixels"},
        {"height", ParamKind::integer, 680, false, "SVG height in pixels (grows to fit the legend)"},
    };
  }
  std::string check_params(const json& params) const override {
    for (const char* list : {"memory_ceilings", "compute_ceilings"})
      if (params.contains(list) && params[list].is_array())
        for (const auto& v : params[list])
          if (!v.is_string()) return std::string("field '") + list + "': expected a list of ceiling names";
    for (const char* dim : {"width", "height"})
      if (params.contains(dim) && params[dim].is_number_integer() &&
          (params[dim].get<int>() < 300 || params[dim].get<int>() > 8000))
        return std::string("field '") + dim + "': expected 300..8000 pixels";
    const bool has_ncu = params.contains("ncu_csv") && !params["ncu_csv"].is_null();
    const bool has_flops = params.contains("ncu_flops_csv") && !params["ncu_flops_csv"].is_null();
    if (has_ncu != has_flops)
      return "fields 'ncu_csv' and 'ncu_flops_csv' go together: the export has bytes, the FLOPs come from the other";
    const bool has_kernels = params.contains("kernels_csv") && !params["kernels_csv"].is_null();
    const bool has_throughput = params.contains("ncu_throughput_csv") && !params["ncu_throughput_csv"].is_null();
    if (has_kernels != has_throughput)
      return "fields 'kernels_csv' and 'ncu_throughput_csv' go together: one places the kernels, the other says "
             "which resource binds each";
    return {};
  }

  NodeOutput run(NodeContext& ctx) const override {
    if (std::string err = check_params(ctx.params); !err.empty()) throw NodeError(err);
    std::vector<std::string> warnings;

    std::vector<Ceiling> ceilings = read_ceilings(collect_ceilings(ctx), warnings);
    filter_ceilings(ceilings, ctx.params.value("memory_ceilings", json::array()), true, "memory_ceilings");
    filter_ceilings(ceilings, ctx.params.value("compute_ceilings", json::array()), false, "compute_ceilings");
    // Measured first, then by value: the legend and the CSV read from the top roof down.
    std::stable_sort(ceilings.begin(), ceilings.end(), [](const Ceiling& a, const Ceiling& b) {
      if (a.memory != b.memory) return !a.memory;
      if (a.measured != b.measured) return a.measured;
      return a.value > b.value;
    });

    // The roof the numbers use: measured when there is a measurement, else the datasheet (and say so).
    const Ceiling* mem = main_memory(ceilings, true);
    bool mem_measured = true;
    if (!mem && (mem = main_memory(ceilings, false))) {
      mem_measured = false;
      warnings.push_back("no measured memory ceiling: attainable uses the datasheet " + mem->name);
    }
    const bool any_compute = std::any_of(ceilings.begin(), ceilings.end(), [](const Ceiling& c) { return !c.memory; });
    if (!mem || !any_compute)
      throw NodeError("roofline needs at least one memory and one compute ceiling: connect a `peak` node as an input "
                      "(found " + std::to_string(ceilings.size()) + " usable ceilings)");
    const Ceiling* ds_mem = main_memory(ceilings, false);
    const bool has_measured_compute =
        std::any_of(ceilings.begin(), ceilings.end(), [](const Ceiling& c) { return !c.memory && c.measured; });

    auto roof_for = [&](const std::string& dtype, bool measured) -> std::optional<Roof> {
      const Ceiling* m = measured ? mem : ds_mem;
      if (!measured && !m) return std::nullopt;
      ComputeChoice c = compute_for(ceilings, dtype, measured && has_measured_compute);
      if (!c.ceiling) return std::nullopt;
      return Roof{m, c};
    };

    // Points from records.
    std::vector<Point> points;
    std::vector<std::string> providers, dtypes;
    std::map<std::string, int> id_count;
    json env = json::object();
    int not_plotted = 0;
    std::map<std::string, int> not_plotted_by_status;   // "skipped": 12, "failed": 1 ...
    const json all_records = collect_records(ctx);
    // Which GPU rest policy the points were measured under (timing.rest); a mix is worth a warning.
    const std::vector<std::string> rest = records::rest_policies(all_records);
    if (const std::string w = records::mixed_rest_warning(rest); !w.empty()) warnings.push_back(w);
    for (const json& rec : all_records) {
      if (!records::is_ok(rec)) {
        ++not_plotted;
        ++not_plotted_by_status[records::status_of(rec).empty() ? "no status" : records::status_of(rec)];
        continue;
      }
      if (env.empty() && rec.contains("env") && rec["env"].is_object()) env = rec["env"];
      Point p;
      p.source = "record";
      p.provider = records::provider_of(rec);
      p.shape = records::shape_name_of(rec);
      p.dtype = records::dtype_of(rec);
      auto achieved = records::number_at(rec, "tflops");
      auto intensity = records::number_at(rec, "intensity");
      if (!intensity && rec.contains("shape") && rec["shape"].is_object()) {
        try {   // files from other tools may leave intensity out: it follows from the shape
          const double i = kernels::intensity(kernels::GemmShape::from_json(rec["shape"]), p.dtype);
          if (i > 0) intensity = i;
        } catch (const std::exception&) {
        }
      }
      if (!achieved || !intensity || !(*achieved > 0) || !(*intensity > 0)) {
        warnings.push_back(records::identity_text(rec) + ": ok record without tflops/intensity, not plotted");
        ++not_plotted;
        ++not_plotted_by_status["ok without numbers"];
        continue;
      }
      p.achieved = *achieved;
      p.intensity = *intensity;
      p.id = p.provider + "/" + p.shape + "/" + p.dtype;
      if (int n = ++id_count[p.id]; n > 1) p.id += "#" + std::to_string(n);
      points.push_back(std::move(p));
    }

    // Points from measured traffic (Nsight Compute).
    json ncu_unmatched = json::array();
    if (ctx.params.contains("ncu_csv") && ctx.params["ncu_csv"].is_string()) {
      const std::string ncu_param = ctx.params["ncu_csv"], flops_param = ctx.params["ncu_flops_csv"];
      std::vector<ncu::KernelTraffic> traffic;
      std::vector<ncu::KernelFlops> flops;
      try {
        traffic = ncu::read_traffic(read_text(ctx.resolve(ncu_param), "ncu_csv"), ncu_param);
        flops = ncu::read_flops(read_text(ctx.resolve(flops_param), "ncu_flops_csv"), flops_param);
      } catch (const NodeError&) {
        throw;
      } catch (const std::exception& e) {
        throw NodeError(e.what());
      }
      for (const auto& k : traffic) {
        const ncu::KernelFlops* meta = nullptr;
        for (const auto& f : flops)
          if (f.kernel == k.kernel) meta = &f;
        if (!meta)
          for (const auto& f : flops)
            if (f.kernel.find_first_of("*?[") != std::string::npos && records::glob_match(f.kernel, k.kernel)) {
              meta = &f;
              break;
            }
        if (!meta || !k.seconds || !(*k.seconds > 0) || !(k.dram_bytes > 0)) {
          ncu_unmatched.push_back({{"kernel", k.kernel},
                                   {"reason", !meta ? "no FLOPs row in ncu_flops_csv"
                                                    : "no duration (gpu__time_duration.sum) or no DRAM bytes"}});
          continue;
        }
        Point p;
        p.source = "ncu";
        p.provider = meta->provider.empty() ? "ncu" : meta->provider;
        p.shape = meta->shape.empty() ? k.kernel : meta->shape;
        p.dtype = meta->dtype;
        const double total_flops = meta->flops * k.launches;
        p.intensity = total_flops / k.dram_bytes;
        p.achieved = total_flops / *k.seconds / 1e12;
        p.id = "ncu:" + p.provider + "/" + p.shape + (p.dtype.empty() ? "" : "/" + p.dtype);
        if (int n = ++id_count[p.id]; n > 1) p.id += "#" + std::to_string(n);
        points.push_back(std::move(p));
      }
      if (!ncu_unmatched.empty())
        warnings.push_back(std::to_string(ncu_unmatched.size()) + " kernel(s) of " + ncu_param +
                           " not plotted (see ncu_unmatched)");
    }

    // The study's dual-roofline input: kernels placed by their metadata, bound by their most utilised resource.
    // From the params (files), or from an input `ncu` node's artifact (its roofline_inputs: the same two CSVs).
    std::vector<roofline::KernelBinding> kernels;
    std::vector<std::string> throughput_scales;
    std::optional<std::pair<std::string, std::string>> kernel_texts;   // kernels_csv, ncu_throughput_csv
    std::string rows_param, ncu_param;
    if (ctx.params.contains("kernels_csv") && ctx.params["kernels_csv"].is_string()) {
      rows_param = ctx.params["kernels_csv"];
      ncu_param = ctx.params["ncu_throughput_csv"];
      kernel_texts.emplace(read_text(ctx.resolve(rows_param), "kernels_csv"),
                           read_text(ctx.resolve(ncu_param), "ncu_throughput_csv"));
    } else {
      for (const auto& in : ctx.inputs) {
        if (!in.artifact || !in.artifact->data().is_object() || !in.artifact->data().contains("roofline_inputs")) continue;
        if (kernel_texts)
          throw NodeError("inputs '" + rows_param.substr(0, rows_param.rfind("/kernels.csv")) + "' and '" + in.node +
                          "' both bring kernels for the dual roofline (roofline_inputs); connect one of them");
        const json& given = in.artifact->data()["roofline_inputs"];
        rows_param = in.node + "/kernels.csv";
        ncu_param = in.node + "/ncu_throughput.csv";
        kernel_texts.emplace(given.value("kernels_csv", std::string()), given.value("ncu_throughput_csv", std::string()));
      }
    }
    if (kernel_texts) {
      try {
        const auto rows = roofline::read_kernel_rows(kernel_texts->first, rows_param);
        const auto throughput = roofline::read_throughput(kernel_texts->second, ncu_param, &throughput_scales);
        kernels = roofline::bind_kernels(rows, throughput, rows_param);
      } catch (const NodeError&) {
        throw;
      } catch (const std::exception& e) {
        throw NodeError(e.what());
      }
      int unknown = 0;
      for (const auto& k : kernels) {
        Point p;
        p.source = "kernels";
        p.provider = "bound: " + k.resource;   // coloured by binding resource
        p.shape = k.row.label.empty() ? k.row.kernel : k.row.label;
        p.intensity = k.row.intensity;
        p.achieved = k.row.achieved_tflops;
        p.note = k.describe();
        p.id = "kernel:" + p.shape;
        if (int n = ++id_count[p.id]; n > 1) p.id += "#" + std::to_string(n);
        unknown += k.ncu ? 0 : 1;
        points.push_back(std::move(p));
      }
      if (unknown > 0)
        warnings.push_back(std::to_string(unknown) + " kernel(s) of " + rows_param + " not found in " + ncu_param +
                           ": binding resource unknown");
      write_output_file(ctx, "roofline_kernels.csv", roofline::kernels_csv(kernels));
    }

    for (auto& p : points) {
      if (std::find(providers.begin(), providers.end(), p.provider) == providers.end()) providers.push_back(p.provider);
      if (std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end()) dtypes.push_back(p.dtype);
      const std::optional<Roof> roof = roof_for(p.dtype, true);
      p.attainable = roof->attainable(p.intensity);
      const double memory_term = p.intensity * roof->memory->value / 1000.0;
      p.binding = memory_term < roof->compute.ceiling->value ? "memory" : "compute";
      p.memory_ceiling = roof->memory->name;
      p.compute_ceiling = roof->compute.ceiling->name;
      p.compute_ceiling_tflops = roof->compute.ceiling->value;
      p.compute_choice = roof->compute.dtype_match
                             ? "dtype match"
                             : "fallback: no " + std::string(roof->compute.ceiling->measured ? "measured " : "") +
                                   "ceiling for " + (p.dtype.empty() ? "this dtype" : p.dtype) + ", highest used";
      if (ds_mem && mem_measured)
        if (const auto ds = roof_for(p.dtype, false); ds && !ds->compute.ceiling->measured)
          p.ds_attainable = ds->attainable(p.intensity);
    }

    // A point above its roof means a ceiling was under-measured (e.g. the machine was busy while `peak`
    // ran, or a kernel beats the probe): the plot is still drawn, but nobody should read it uncritically.
    int above_roof = 0;
    double worst_pct = 0;
    for (const auto& p : points)
      if (p.achieved > p.attainable * 1.02) {
        ++above_roof;
        worst_pct = std::max(worst_pct, 100.0 * p.achieved / p.attainable);
      }
    if (above_roof > 0)
      warnings.push_back(std::to_string(above_roof) + " point(s) above their roof (up to " + format_number(worst_pct) +
                         "% of it): the ceilings look under-measured; re-run `peak` on a quiet machine");

    // Ridge points: every compute roof against the best roof of each memory level, of the same source
    // (measured with measured, datasheet with datasheet). Lesser roofs of a level add clutter, not insight.
    json ridges = json::array();
    for (const auto& c : ceilings) {
      if (c.memory) continue;
      std::map<std::string, const Ceiling*> best_per_level;
      for (const auto& m : ceilings)
        if (m.memory && m.measured == c.measured) {
          auto& best = best_per_level[m.level];
          if (!best || m.value > best->value) best = &m;
        }
      for (const auto& [level, m] : best_per_level)
        ridges.push_back({{"compute", c.name}, {"memory", m->name}, {"level", level},
                          {"intensity", c.value * 1000.0 / m->value}, {"tflops", c.value},
                          {"source", c.measured ? "measured" : "datasheet"}});
    }

    // Title: device and date from the inputs (records' env, else the peak artifacts' env).
    if (env.empty())
      for (const auto& in : ctx.inputs)
        if (in.artifact && in.artifact->data().is_object() && in.artifact->data().contains("env") &&
            in.artifact->data()["env"].is_object()) {
          env = in.artifact->data()["env"];
          break;
        }
    std::string device = device_name(env);
    if (device.empty()) device = "unknown device";
    const std::string date = env.contains("date") && env["date"].is_string() ? env["date"].get<std::string>() : today_utc();
    std::set<std::string> levels;
    for (const auto& c : ceilings)
      if (c.memory && c.measured) levels.insert(c.level);
    const bool dual = levels.size() >= 2;
    std::string title = ctx.params.value("title", json()).is_string() ? ctx.params["title"].get<std::string>()
                                                                      : std::string();
    if (title.empty()) title = std::string(dual ? "Dual roofline: " : "Roofline: ") + device;
    const std::string subtitle = device + "  ·  " + date + "  ·  " + std::to_string(points.size()) + " points" +
                                 (not_plotted ? " (not plotted: " + counts_text(not_plotted_by_status) + ")"
                                              : std::string());

    const int width = ctx.params.value("width", 1100), height = ctx.params.value("height", 680);
    write_output_file(ctx, "roofline.svg",
                      roofline::draw_svg(title, subtitle,
                               above_roof ? "warning: " + std::to_string(above_roof) +
                                                " point(s) above their roof: the ceilings look under-measured"
                                          : std::string(),
                               ceilings, points, ridges, providers, dtypes, width, height,
                               ctx.params.value("all_ceilings", false)));
    write_output_file(ctx, "roofline.csv", to_csv(points));

    NodeOutput out;
    json jpoints = json::array();
    for (const auto& p : points) {
      json j = {{"record", p.id},
                {"source", p.source},
                {"provider", p.provider},
                {"shape", p.shape},
                {"dtype", p.dtype},
                {"intensity", p.intensity},
                {"achieved_tflops", p.achieved},
                {"attainable_tflops", p.attainable},
                {"pct_of_roof", 100.0 * p.achieved / p.attainable},
                {"binding", p.binding},
                {"memory_ceiling", p.memory_ceiling},
                {"compute_ceiling", p.compute_ceiling},
                {"compute_ceiling_choice", p.compute_choice},
                // Every kernel as a fraction of the compute limit, whatever binds it (on a GPU: the tensor pipe).
                {"pct_of_compute_ceiling", 100.0 * p.achieved / p.compute_ceiling_tflops}};
      if (p.ds_attainable) {
        j["datasheet_attainable_tflops"] = *p.ds_attainable;
        j["pct_of_datasheet_roof"] = 100.0 * p.achieved / *p.ds_attainable;
      }
      jpoints.push_back(std::move(j));
    }
    json jceilings = json::array();
    for (const auto& c : ceilings) jceilings.push_back(c.to_json());
    out.data = {{"points", jpoints},  {"ceilings", jceilings}, {"ridge_points", ridges}, {"device", device},
                {"date", date},       {"dual_roofline", dual}, {"memory_levels", levels},
                {"roof", {{"memory", mem->name}, {"memory_source", mem_measured ? "measured" : "datasheet"}}},
                {"records_not_plotted", not_plotted}, {"points_above_roof", above_roof}, {"warnings", warnings},
                {"rest_policies", rest}};
    if (!ncu_unmatched.empty()) out.data["ncu_unmatched"] = ncu_unmatched;
    if (!kernels.empty()) {
      json jk = json::array();
      for (const auto& k : kernels) jk.push_back(k.to_json());
      out.data["kernels"] = jk;
      out.data["ncu_throughput_scales"] = throughput_scales;
    }

    int memory_bound = 0;
    for (const auto& p : points) memory_bound += p.binding == "memory";
    ctx.info(std::to_string(points.size()) + " points (" + std::to_string(memory_bound) + " memory-bound), " +
             std::to_string(ceilings.size()) + " ceilings, roof " + mem->name + " " + format_number(mem->value) +
             " GB/s" + (dual ? ", dual roofline" : ""));
    for (const auto& w : warnings) ctx.info("warning: " + w);
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_roofline_node() { return std::make_unique<RooflineNode>(); }

}  // namespace aispflow
