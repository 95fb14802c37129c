#pragma once
// Reading result records (docs/records.md) the same way in every analysis node: who a record is
// (provider, shape, dtype), whether it is usable, the value of a metric, and which direction of a
// metric is "better". expect, roofline and compare all go through here so they never disagree.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/artifact.hpp"

namespace aispflow::records {

// Shell-style pattern: `*` any run of characters, `?` one character, `[abc]` / `[a-z]` a class.
// A pattern without wildcards is an exact match.
bool glob_match(std::string_view pattern, std::string_view text);

// The three fields that identify a record. A shape may be an object {name, m, n, k} (the schema) or,
// in files written by other tools, just its name.
std::string provider_of(const json& record);
std::string shape_name_of(const json& record);
std::string dtype_of(const json& record);
std::string status_of(const json& record);        // "ok" | "failed" | "skipped" ("" when absent)
// The layout / epilogue axes of gemm_sweep when not at their defaults: "" (nn, none), "nt", "nt bias_gelu"...
// Records without these fields (older artifacts, other tools) are nn / none.
std::string variant_of(const json& record);
// dtype_of plus the variant: "bf16", "bf16 nt bias_gelu". Analysis nodes pair records on this, so an nt record
// is never compared with an nn one.
std::string dtype_variant_of(const json& record);
inline bool is_ok(const json& record) { return status_of(record) == "ok"; }
// {"provider", "shape", "dtype"}: what results tables print to name a record.
json identity(const json& record);
// "cpu.blocked decode_b8_qkv_proj fp32" (plus the variant, if any): the same, as text for messages.
std::string identity_text(const json& record);

// Which way a metric should move. The one table every node consults.
enum class Better { higher, lower, equal };   // equal: a status or flag that must have a given value

struct MetricInfo {
  std::string name;    // path in the record, dots for nesting: "time_ms.median"
  Better better;
  std::string unit;    // for tables and docs
};
const std::vector<MetricInfo>& known_metrics();
const MetricInfo* find_metric(const std::string& name);   // nullptr for an unknown metric
std::string known_metric_names();                        // "tflops, gbytes_per_s, ..." for error messages

// The value at a dotted path ("time_ms.median") of a record; nullopt when a step is missing.
std::optional<json> value_at(const json& record, const std::string& dotted_path);
// A numeric metric as a double; nullopt when missing or not a number.
std::optional<double> number_at(const json& record, const std::string& dotted_path);

// The GPU rest policies (timing.rest, docs/nodes.md) the ok records were measured under, e.g. ["2x"] or
// ["0 (back to back)", "2x"]; records without one (CPU providers, other tools) are not counted. More than one
// means the comparison mixes power states: analysis nodes say so as a warning.
std::vector<std::string> rest_policies(const json& records);
std::string mixed_rest_warning(const std::vector<std::string>& policies);   // "" for at most one policy

// Compact number formatting for tables and labels: 4 significant digits, no exponent for ordinary magnitudes.
std::string format_number(double value);

}  // namespace aispflow::records
