// GEMM shapes, dtype sizes and the result record (docs/records.md): the one schema every provider writes.
#include "kernels/common/gemm.hpp"
#include "kernels/common/backend.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace aispflow::kernels {

json GemmShape::to_json() const {
  json j = {{"name", name}, {"m", m}, {"n", n}, {"k", k}};
  if (batch != 1) j["batch"] = batch;   // the common case stays in the documented {name, m, n, k} form
  if (!groups.empty()) j["groups"] = groups;
  return j;
}

std::int64_t GemmShape::real_rows() const {
  if (groups.empty()) return m * batch;
  std::int64_t rows = 0;
  for (auto g : groups) rows += g;
  return rows;
}

namespace {

// A positive integer field of a shape object; the message names the field and what was found.
std::int64_t positive_dimension(const json& j, const char* field) {
  if (!j.contains(field)) throw std::invalid_argument(std::string("shape: missing field '") + field + "'");
  const json& v = j.at(field);
  // A YAML "2048.0" arrives as a float: accept it only when it is a whole number.
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::floor(d) != d)
      throw std::invalid_argument(std::string("shape: field '") + field + "' must be a positive integer, got " +
                                  v.dump());
    if (d < 1) throw std::invalid_argument(std::string("shape: field '") + field + "' must be >= 1, got " + v.dump());
    return static_cast<std::int64_t>(d);
  }
  if (!v.is_number_integer())
    throw std::invalid_argument(std::string("shape: field '") + field + "' must be a positive integer, got " +
                                v.dump());
  const auto x = v.get<std::int64_t>();
  if (x < 1) throw std::invalid_argument(std::string("shape: field '") + field + "' must be >= 1, got " + v.dump());
  return x;
}

}  // namespace

GemmShape GemmShape::from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("shape: expected an object {name, m, n, k}, got " + j.dump());
  GemmShape s;
  s.m = positive_dimension(j, "m");
  s.n = positive_dimension(j, "n");
  s.k = positive_dimension(j, "k");
  if (j.contains("batch")) s.batch = positive_dimension(j, "batch");
  if (j.contains("name")) {
    if (!j.at("name").is_string())
      throw std::invalid_argument("shape: field 'name' must be a string, got " + j.at("name").dump());
    s.name = j.at("name").get<std::string>();
  }
  if (j.contains("groups")) {
    const json& g = j.at("groups");
    if (!g.is_array() || g.empty())
      throw std::invalid_argument("shape: field 'groups' must be a non-empty list of row counts, got " + g.dump());
    std::int64_t largest = 0;
    for (const auto& v : g) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
        throw std::invalid_argument("shape: field 'groups' must hold integers >= 0, got " + v.dump());
      s.groups.push_back(v.get<std::int64_t>());
      largest = std::max(largest, s.groups.back());
    }
    if (j.contains("batch") && s.batch != std::int64_t(s.groups.size()))
      throw std::invalid_argument("shape: 'batch' (" + std::to_string(s.batch) + ") must equal the number of groups (" +
                                  std::to_string(s.groups.size()) + ")");
    s.batch = std::int64_t(s.groups.size());
    if (s.m != largest)
      throw std::invalid_argument("shape: 'm' (" + std::to_string(s.m) + ") must equal the largest group (" +
                                  std::to_string(largest) + ")");
  }
  if (s.name.empty()) s.name = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  return s;
}

std::optional<int> operand_bytes(const std::string& dtype) {
  if (dtype == "fp64") return 8;
  if (dtype == "fp32" || dtype == "tf32") return 4;   // tf32 is stored as fp32; only the math is narrower
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 1;
  return std::nullopt;
}

int output_bytes(const std::string& dtype) {
  if (dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 2;   // fp8 GEMMs write bf16
  if (dtype == "tf32") return 4;
  return operand_bytes(dtype).value_or(0);                     // 0: unknown dtype
}

double compulsory_bytes(const GemmShape& s, const std::string& dtype) {
  const auto in = operand_bytes(dtype);
  if (!in) return 0;
  const double rows = double(s.real_rows()), n = double(s.n), k = double(s.k);
  // A and C: the real rows only (a grouped shape's padding is not compulsory); one B per GEMM of the batch.
  return (rows * k + double(s.batch) * k * n) * double(*in) + rows * n * double(output_bytes(dtype));
}

double intensity(const GemmShape& s, const std::string& dtype) {
  const double bytes = compulsory_bytes(s, dtype);
  return bytes > 0 ? s.flops() / bytes : 0.0;
}

std::string GemmCase::label() const {
  std::string s = dtype;
  if (layout != "nn") s += " " + layout;
  if (epilogue != "none") s += " " + epilogue;
  return s;
}

const std::vector<std::string>& gemm_layouts() {
  static const std::vector<std::string> names = {"nn", "nt"};
  return names;
}

const std::vector<std::string>& gemm_epilogues() {
  static const std::vector<std::string> names = {"none", "bias", "bias_gelu"};
  return names;
}

std::optional<std::string> unless_plain(const std::string& provider, const GemmCase& c) {
  if (c.layout != "nn") return provider + " offers layout nn only; not '" + c.layout + "'";
  if (c.epilogue != "none") return provider + " offers no epilogue; not '" + c.epilogue + "'";
  return std::nullopt;
}

GemmRecord GemmRecord::of(const std::string& provider, const std::string& kernel, const GemmCase& c) {
  GemmRecord r;
  r.provider = provider;
  r.kernel = kernel;
  r.shape = c.shape;
  r.dtype = c.dtype;
  r.layout = c.layout;
  r.epilogue = c.epilogue;
  return r;
}

json GemmRecord::to_json(const json& env) const {
  json r = {{"provider", provider}, {"kernel", kernel},   {"shape", shape.to_json()},
            {"dtype", dtype},       {"layout", layout},   {"epilogue", epilogue},
            {"status", status},     {"verified", verified},
            {"max_rel_err", max_rel_err}, {"tolerance", tolerance}};
  if (!reason.empty()) r["reason"] = reason;
  if (operand_bytes(dtype)) r["intensity"] = intensity(shape, dtype);
  // Throughput only for a verified, timed result: a failed or skipped record carries no numbers to plot.
  if (time && status == "ok" && time->median_ms > 0) {
    const double seconds = time->median_ms * 1e-3;
    r["time_ms"] = time->to_json();
    r["samples"] = time->samples;
    r["converged"] = time->converged;
    r["tflops"] = shape.flops() / seconds / 1e12;
    if (operand_bytes(dtype)) r["gbytes_per_s"] = compulsory_bytes(shape, dtype) / seconds / 1e9;
  }
  r["env"] = env.is_null() ? json::object() : env;
  // Provider-specific fields join the record but never replace the documented ones.
  if (extra.is_object())
    for (auto it = extra.begin(); it != extra.end(); ++it)
      if (!r.contains(it.key())) r[it.key()] = it.value();
  return r;
}

const std::vector<std::string>& gpu_provider_names() {
  // Our own CUDA kernels (kernels/cuda/ours/), then the vendor library.
  static const std::vector<std::string> names = {"ours.naive", "ours.tiled",     "ours.wgmma",      "ours.cluster",
                                                 "cublaslt",   "cublaslt.sweep", "cublaslt.unfused", "cutlass",
                                                 "cutlass.select",
                                                 // grouped (MoE-routed) shapes: kernels/cuda/grouped_providers.hpp
                                                 "cutlass.grouped", "cublaslt.grouped", "cublas.per_expert", "padded"};
  return names;
}

}  // namespace aispflow::kernels
