#pragma once
// Small readers for node params shared by the measurement and calculator nodes. Each throws
// std::invalid_argument with a message that starts with the field name, so check_params() can return it as
// is and run() can rethrow it as a NodeError. An absent or null field means "use the default".
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/timing.hpp"
#include "pipeline/artifact.hpp"
#include "pipeline/node_type.hpp"

namespace aispflow {

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

// true when any string inside `value` still holds a `${...}` reference (params at load time, before the
// upstream artifacts exist): semantic checks are skipped then and run again on the substituted params.
bool contains_unresolved_ref(const json& value);

bool has_value(const json& params, const std::string& field);
std::vector<std::string> string_list(const json& params, const std::string& field,
                                     const std::vector<std::string>& fallback);
std::vector<std::int64_t> positive_int_list(const json& params, const std::string& field,
                                            const std::vector<std::int64_t>& fallback);
std::int64_t positive_int(const json& params, const std::string& field, std::int64_t fallback);
// A number (int or float) that must be > 0, or >= 0 when allow_zero.
double number(const json& params, const std::string& field, double fallback, bool allow_zero = false);
// Required variants: the message says the field is missing.
std::int64_t required_positive_int(const json& params, const std::string& field);
double required_number(const json& params, const std::string& field);

// The fields of a measuring node's `timing:` map, as its ParamSpec and timing_policy()'s messages list them.
inline constexpr const char* kTimingFields =
    "warmup, min_samples, max_samples, target_stdrel, budget_s, flush_cache, rest, code";
// The `timing:` ParamSpec of a measuring node (a map of kTimingFields, read by timing_policy()).
ParamSpec timing_param();
// The `timing:` map of a measuring node (kTimingFields), checked field by field; unknown keys are errors so a typo
// does not silently time differently.
kernels::TimingPolicy timing_policy(const json& params, const std::string& field = "timing");

// A node type whose output is a pure function of its params (kv_cache, cost_per_token): the same
// calculation checks the params at load time and produces the artifact at run time.
class CalculatorNode : public NodeType {
 public:
  // Throws std::invalid_argument naming the field on bad params.
  virtual json calculate(const json& params) const = 0;

  std::string check_params(const json& params) const override;   // calculate()'s message, if it throws
  NodeOutput run(NodeContext& ctx) const override;                // calculate(), as a NodeError if it throws
};

}  // namespace aispflow
