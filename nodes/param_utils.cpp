#include "nodes/param_utils.hpp"

#include "pipeline/errors.hpp"

#include <cmath>
#include <stdexcept>

namespace aispflow {

namespace {

bool is_whole_number(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

std::int64_t as_int(const json& v) {
  return v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(v.get<double>());
}

}  // namespace

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? separator : "") + items[i];
  return s;
}

bool contains_unresolved_ref(const json& value) {
  if (value.is_string()) return value.get<std::string>().find("${") != std::string::npos;
  if (value.is_array() || value.is_object())
    for (const auto& item : value)
      if (contains_unresolved_ref(item)) return true;
  return false;
}

bool has_value(const json& params, const std::string& field) {
  return params.is_object() && params.contains(field) && !params[field].is_null();
}

std::vector<std::string> string_list(const json& params, const std::string& field,
                                     const std::vector<std::string>& fallback) {
  if (!has_value(params, field)) return fallback;
  const json& v = params[field];
  // A single string is accepted as a one-element list: `--set sweep.dtypes=fp32` reads naturally.
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) throw std::invalid_argument(field + ": expected a list of strings, got " + v.dump());
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string()) throw std::invalid_argument(field + ": expected a list of strings, found " + item.dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<std::int64_t> positive_int_list(const json& params, const std::string& field,
                                            const std::vector<std::int64_t>& fallback) {
  if (!has_value(params, field)) return fallback;
  json v = params[field];
  if (v.is_number()) v = json::array({v});
  if (!v.is_array()) throw std::invalid_argument(field + ": expected a list of positive integers, got " + v.dump());
  std::vector<std::int64_t> out;
  for (const auto& item : v) {
    if (!is_whole_number(item) || as_int(item) < 1)
      throw std::invalid_argument(field + ": expected a list of positive integers, found " + item.dump());
    out.push_back(as_int(item));
  }
  if (out.empty()) throw std::invalid_argument(field + ": the list is empty");
  return out;
}

std::int64_t positive_int(const json& params, const std::string& field, std::int64_t fallback) {
  if (!has_value(params, field)) return fallback;
  const json& v = params[field];
  if (!is_whole_number(v) || as_int(v) < 1)
    throw std::invalid_argument(field + ": expected a positive integer, got " + v.dump());
  return as_int(v);
}

double number(const json& params, const std::string& field, double fallback, bool allow_zero) {
  if (!has_value(params, field)) return fallback;
  const json& v = params[field];
  if (!v.is_number()) throw std::invalid_argument(field + ": expected a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || (x == 0 && !allow_zero))
    throw std::invalid_argument(field + ": expected a number " + (allow_zero ? ">= 0" : "> 0") + ", got " + v.dump());
  return x;
}

std::int64_t required_positive_int(const json& params, const std::string& field) {
  if (!has_value(params, field)) throw std::invalid_argument(field + ": required, expected a positive integer");
  return positive_int(params, field, 0);
}

double required_number(const json& params, const std::string& field) {
  if (!has_value(params, field)) throw std::invalid_argument(field + ": required, expected a number > 0");
  return number(params, field, 0);
}

ParamSpec timing_param() {
  return {"timing", ParamKind::map, json(), false, std::string(kTimingFields) + " (docs/nodes.md)"};
}

kernels::TimingPolicy timing_policy(const json& params, const std::string& field) {
  kernels::TimingPolicy policy;
  if (!has_value(params, field)) return policy;
  const json& t = params[field];
  if (!t.is_object())
    throw std::invalid_argument(field + ": expected a map (" + kTimingFields + "), got " + t.dump());
  for (auto it = t.begin(); it != t.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    const std::string where = field + "." + key;
    if (key == "warmup") {
      if (!is_whole_number(v) || as_int(v) < 0)
        throw std::invalid_argument(where + ": expected an integer >= 0, got " + v.dump());
    } else if (key == "min_samples" || key == "max_samples") {
      if (!is_whole_number(v) || as_int(v) < 1)
        throw std::invalid_argument(where + ": expected a positive integer, got " + v.dump());
    } else if (key == "target_stdrel" || key == "budget_s") {
      if (!v.is_number() || v.get<double>() <= 0)
        throw std::invalid_argument(where + ": expected a number > 0, got " + v.dump());
    } else if (key == "flush_cache") {
      if (!v.is_boolean()) throw std::invalid_argument(where + ": expected true or false, got " + v.dump());
    } else if (key == "rest") {
      (void)kernels::TimingPolicy::parse_rest(v);
    } else if (key == "code") {
      (void)kernels::TimingPolicy::parse_code(v);
    } else {
      throw std::invalid_argument(where + ": unknown timing field (expected " + kTimingFields + ")");
    }
  }
  if (t.contains("min_samples") && t.contains("max_samples") &&
      as_int(t["max_samples"]) < as_int(t["min_samples"]))
    throw std::invalid_argument(field + ": max_samples (" + t["max_samples"].dump() + ") is below min_samples (" +
                                t["min_samples"].dump() + ")");
  // from_json reads integers with json::value<int>; normalise whole floats ("5.0" from YAML) first.
  json normalised = t;
  for (const char* key : {"warmup", "min_samples", "max_samples"})
    if (normalised.contains(key)) normalised[key] = as_int(normalised[key]);
  return kernels::TimingPolicy::from_json(normalised);
}

std::string CalculatorNode::check_params(const json& params) const {
  if (contains_unresolved_ref(params)) return {};
  try {
    (void)calculate(params);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

NodeOutput CalculatorNode::run(NodeContext& ctx) const {
  NodeOutput out;
  try {
    out.data = calculate(ctx.params);
  } catch (const std::invalid_argument& e) {
    throw NodeError(e.what());
  }
  return out;
}

}  // namespace aispflow
