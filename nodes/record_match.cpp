#include "nodes/record_match.hpp"

#include <algorithm>

#include "kernels/common/timing.hpp"

#include <cmath>
#include <cstdio>

namespace aispflow::records {

namespace {

// Matches one `[...]` class at pattern[p] against c. Returns the index after the class, or npos when the
// class is not closed (then the `[` is taken literally by the caller).
std::size_t match_class(std::string_view pattern, std::size_t p, char c, bool& matched) {
  std::size_t i = p + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool hit = false;
  bool first = true;
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == ']' && !first) {
      matched = hit != negate;
      return i + 1;
    }
    first = false;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      if (pattern[i] <= c && c <= pattern[i + 2]) hit = true;
      i += 2;
    } else if (pattern[i] == c) {
      hit = true;
    }
  }
  return std::string_view::npos;
}

std::string string_field(const json& record, const char* field) {
  if (!record.is_object() || !record.contains(field)) return {};
  const json& v = record.at(field);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point for the last `*`: linear in practice, no recursion.
  std::size_t p = 0, t = 0;
  std::size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        bool matched = false;
        const std::size_t next = match_class(pattern, p, text[t], matched);
        if (next != std::string_view::npos) {
          if (matched) {
            p = next;
            ++t;
            continue;
          }
        } else if (text[t] == '[') {   // unclosed class: a literal '['
          ++p;
          ++t;
          continue;
        }
      } else if (pc == text[t]) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;   // let the last `*` swallow one more character
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string provider_of(const json& record) { return string_field(record, "provider"); }
std::string dtype_of(const json& record) { return string_field(record, "dtype"); }
std::string status_of(const json& record) { return string_field(record, "status"); }

std::string variant_of(const json& record) {
  std::string v;
  const std::string layout = string_field(record, "layout"), epilogue = string_field(record, "epilogue");
  // Only the axes' own names count: older cuBLASLt records used `layout` for a free-text storage note.
  if (layout == "nt") v = layout;
  if (epilogue == "bias" || epilogue == "bias_gelu") v += (v.empty() ? "" : " ") + epilogue;
  return v;
}

std::string dtype_variant_of(const json& record) {
  const std::string v = variant_of(record);
  return v.empty() ? dtype_of(record) : dtype_of(record) + " " + v;
}

std::string shape_name_of(const json& record) {
  if (!record.is_object() || !record.contains("shape")) return {};
  const json& s = record.at("shape");
  if (s.is_string()) return s.get<std::string>();
  if (s.is_object() && s.contains("name") && s.at("name").is_string()) return s.at("name").get<std::string>();
  if (s.is_object() && s.contains("m") && s.contains("n") && s.contains("k"))
    return s.at("m").dump() + "x" + s.at("n").dump() + "x" + s.at("k").dump();
  return s.dump();
}

json identity(const json& record) {
  return {{"provider", provider_of(record)}, {"shape", shape_name_of(record)}, {"dtype", dtype_of(record)}};
}

std::string identity_text(const json& record) {
  return provider_of(record) + " " + shape_name_of(record) + " " + dtype_variant_of(record);
}

std::vector<std::string> rest_policies(const json& records) {
  std::vector<std::string> out;
  if (!records.is_array()) return out;
  for (const auto& r : records) {
    if (!is_ok(r) || !r.contains("timing") || !r["timing"].is_object() || !r["timing"].contains("rest_factor")) continue;
    kernels::TimingPolicy p;
    p.rest_factor = r["timing"]["rest_factor"].get<double>();
    const std::string label = p.rest_label();
    if (std::find(out.begin(), out.end(), label) == out.end()) out.push_back(label);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string mixed_rest_warning(const std::vector<std::string>& policies) {
  if (policies.size() < 2) return {};
  std::string list;
  for (const auto& p : policies) list += (list.empty() ? "" : ", ") + p;
  return "the records mix GPU rest policies (" + list + "): back-to-back samples run at the power-capped clock, "
         "rested ones at boost; numbers across them are not like for like";
}

const std::vector<MetricInfo>& known_metrics() {
  // The good direction of every metric a record carries. "improved" in expect and "speedup" in compare
  // both read it from here.
  static const std::vector<MetricInfo> table = {
      {"tflops", Better::higher, "TFLOP/s"},
      {"gbytes_per_s", Better::higher, "GB/s"},
      {"time_ms.median", Better::lower, "ms"},
      {"time_ms.min", Better::lower, "ms"},
      {"time_ms.max", Better::lower, "ms"},
      {"time_ms.stdrel", Better::lower, ""},
      {"max_rel_err", Better::lower, ""},
      {"status", Better::equal, ""},
      {"verified", Better::equal, ""},
      {"converged", Better::equal, ""},
  };
  return table;
}

const MetricInfo* find_metric(const std::string& name) {
  for (const auto& m : known_metrics())
    if (m.name == name) return &m;
  return nullptr;
}

std::string known_metric_names() {
  std::string s;
  for (const auto& m : known_metrics()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

std::optional<json> value_at(const json& record, const std::string& dotted_path) {
  const json* at = &record;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted_path.find('.', start);
    const std::string key = dotted_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &at->at(key);
    if (dot == std::string::npos) return *at;
    start = dot + 1;
  }
}

std::optional<double> number_at(const json& record, const std::string& dotted_path) {
  const auto v = value_at(record, dotted_path);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  char buf[64];
  const double mag = std::fabs(value);
  if (mag >= 1e4 && mag < 1e7)   // whole numbers, never 3.188e+04 in a label or table
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else if (value == 0 || (mag >= 1e-3 && mag < 1e7))
    std::snprintf(buf, sizeof buf, "%.4g", value);
  else
    std::snprintf(buf, sizeof buf, "%.3e", value);
  return buf;
}

}  // namespace aispflow::records
