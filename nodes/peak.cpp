// Node type `peak`: the measured ceilings of this machine (memory bandwidth, compute throughput), plus
// datasheet ceilings (the backend's table for the detected device, and any the workflow declares) so the
// roofline can show both. Hardware-bound and exclusive: it times.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "nodes/inputs.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/param_utils.hpp"

namespace aispflow {

namespace {

// A user-declared ceiling in canonical units (memory GB/s, compute TFLOP/s, as every measured ceiling is).
json datasheet_ceiling(const json& entry, std::size_t index) {
  const std::string where = "datasheet[" + std::to_string(index) + "]";
  if (!entry.is_object())
    throw std::invalid_argument(where + ": expected {name, kind: memory|compute, unit, value}, got " + entry.dump());
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    static const std::vector<std::string> allowed = {"name", "kind", "unit", "value", "dtype", "method", "level"};
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      throw std::invalid_argument(where + "." + it.key() + ": unknown field (expected " + join(allowed) + ")");
  }
  auto text = [&](const char* field) {
    if (!entry.contains(field) || !entry[field].is_string() || entry[field].get<std::string>().empty())
      throw std::invalid_argument(where + "." + field + ": required, expected a string");
    return entry[field].get<std::string>();
  };
  const std::string name = text("name");
  const std::string kind = text("kind");
  const std::string unit = text("unit");
  if (!entry.contains("value") || !entry["value"].is_number() || entry["value"].get<double>() <= 0)
    throw std::invalid_argument(where + ".value: required, expected a number > 0");
  const double value = entry["value"].get<double>();

  // Scale factor from the declared unit to the canonical one.
  double scale = 0;
  std::string canonical;
  if (kind == "memory") {
    canonical = "GB/s";
    if (unit == "GB/s") scale = 1;
    else if (unit == "TB/s") scale = 1e3;
    else if (unit == "MB/s") scale = 1e-3;
  } else if (kind == "compute") {
    canonical = "TFLOP/s";
    if (unit == "TFLOP/s") scale = 1;
    else if (unit == "PFLOP/s") scale = 1e3;
    else if (unit == "GFLOP/s") scale = 1e-3;
  } else {
    throw std::invalid_argument(where + ".kind: expected memory or compute, got \"" + kind + "\"");
  }
  if (scale == 0)
    throw std::invalid_argument(where + ".unit: for kind " + kind + " expected " +
                                (kind == "memory" ? "GB/s, TB/s or MB/s" : "TFLOP/s, PFLOP/s or GFLOP/s") +
                                ", got \"" + unit + "\"");
  json c = {{"name", name},          {"kind", kind},
            {"unit", canonical},     {"value", value * scale},
            {"source", "datasheet"}, {"method", entry.value("method", std::string("declared in the workflow"))}};
  if (entry.contains("dtype")) c["dtype"] = entry["dtype"];
  // The memory level the roofline draws it at (hbm, l2, smem, tmem...): how a TMEM figure a user trusts is
  // declared on sm_100, where the backend's table has none (no public NVIDIA figure; docs/nodes-analysis.md).
  if (entry.contains("level")) {
    if (kind != "memory" || !entry["level"].is_string() || entry["level"].get<std::string>().empty())
      throw std::invalid_argument(where + ".level: a memory level name (hbm, l2, smem, tmem) on a memory ceiling");
    c["level"] = entry["level"];
  }
  if (scale != 1) c["declared"] = {{"value", value}, {"unit", unit}};
  return c;
}

json declared_ceilings(const json& params) {
  json out = json::array();
  if (!has_value(params, "datasheet")) return out;
  if (!params["datasheet"].is_array())
    throw std::invalid_argument("datasheet: expected a list of {name, kind, unit, value}");
  for (std::size_t i = 0; i < params["datasheet"].size(); ++i)
    out.push_back(datasheet_ceiling(params["datasheet"][i], i));
  return out;
}

kernels::PeakOptions peak_options(const json& params) {
  kernels::PeakOptions o;
  if (has_value(params, "bandwidth_mib")) o.bandwidth_bytes = double(positive_int(params, "bandwidth_mib", 0)) * 1048576.0;
  o.timing = timing_policy(params);
  o.dtypes = string_list(params, "dtypes", {});
  return o;
}

class PeakNode final : public NodeType {
 public:
  std::string name() const override { return "peak"; }
  std::string doc() const override {
    return "Measured ceilings of this machine: memory bandwidth (copy, triad, read over arrays far larger than the "
           "last-level cache) in GB/s and compute throughput per dtype in TFLOP/s, each {name, kind, unit, value, "
           "method, source}; plus the backend's datasheet ceilings for the detected device and any declared in "
           "`datasheet`. Output {\"ceilings\": [...], \"env\": fingerprint, \"backend\": name}.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"bandwidth_mib", ParamKind::integer, json(), false,
         "array size per buffer for the bandwidth probes, MiB (default: the backend picks, >> last-level cache)"},
        {"dtypes", ParamKind::list, json(), false, "compute ceilings to measure (default: the backend's set)"},
        timing_param(),
        {"datasheet", ParamKind::list, json(), false,
         "declared ceilings [{name, kind: memory|compute, unit: GB/s|TB/s|TFLOP/s|PFLOP/s, value, dtype?, "
         "level? (memory: hbm, l2, smem, tmem)}]"},
        {"include_datasheet", ParamKind::boolean, true, false,
         "add the backend's datasheet ceilings for the detected device"},
    };
  }
  NodeTraits traits() const override { return {.hardware_bound = true, .exclusive = true, .version = 1}; }
  std::string check_params(const json& params) const override {
    if (contains_unresolved_ref(params)) return {};
    try {
      (void)peak_options(params);
      (void)declared_ceilings(params);
      if (has_value(params, "include_datasheet") && !params["include_datasheet"].is_boolean())
        return "include_datasheet: expected true or false";
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  NodeOutput run(NodeContext& ctx) const override {
    kernels::PeakOptions options;
    json declared;
    try {
      options = peak_options(ctx.params);
      declared = declared_ceilings(ctx.params);
    } catch (const std::invalid_argument& e) {
      throw NodeError(e.what());
    }
    kernels::Backend& backend = backend_of(ctx);
    json ceilings = json::array();
    for (auto c : backend.measure_peaks(options)) {
      if (!c.contains("source")) c["source"] = "measured";
      ctx.info(c.value("name", std::string("?")) + ": " + json(c.value("value", 0.0)).dump() + " " +
               c.value("unit", std::string()));
      ceilings.push_back(std::move(c));
    }
    if (ctx.params.value("include_datasheet", true))
      for (auto c : backend.datasheet_ceilings()) {
        if (!c.contains("source")) c["source"] = "datasheet";
        ceilings.push_back(std::move(c));
      }
    for (auto& c : declared) ceilings.push_back(std::move(c));
    NodeOutput out;
    out.data = {{"ceilings", std::move(ceilings)}, {"env", backend.fingerprint()}, {"backend", backend.backend_name()}};
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_peak_node() { return std::make_unique<PeakNode>(); }

}  // namespace aispflow
