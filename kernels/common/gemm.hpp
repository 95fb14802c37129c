#pragma once
// GEMM shapes, dtypes, the result record schema (docs/records.md) and the provider interface.
// Convention everywhere: C[M x N] = A[M x K] * B[K x N], all row-major, whatever a provider does inside.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/timing.hpp"
#include "pipeline/environment.hpp"

namespace aispflow::kernels {

using json = nlohmann::json;

struct GemmShape {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;   // independent GEMMs of this shape (e.g. MoE experts); FLOPs scale with it
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
  json to_json() const;
  static GemmShape from_json(const json& j);   // throws std::invalid_argument naming the bad field
};

// Dtype names used in records and YAML: "fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3".
// Bytes per element of the A/B operands and of C, as stored in memory.
std::optional<int> operand_bytes(const std::string& dtype);
int output_bytes(const std::string& dtype);   // fp8 outputs bf16, tf32 outputs fp32
// Compulsory traffic: read A and B once, write C once.
double compulsory_bytes(const GemmShape& s, const std::string& dtype);
double intensity(const GemmShape& s, const std::string& dtype);   // FLOP per compulsory byte

// Builds a record in the documented schema. Fill the fields you know, then call finish_record().
struct GemmRecord {
  std::string provider;          // "cpu.blocked"
  std::string kernel;            // full identity: tile sizes, threads, algo ...
  GemmShape shape;
  std::string dtype;
  std::string status = "ok";     // "ok" | "failed" | "skipped"
  std::string reason;            // why failed/skipped; empty when ok
  bool verified = false;
  double max_rel_err = 0;
  double tolerance = 0;
  std::optional<TimingStats> time;
  json extra = json::object();   // provider-specific fields merged in (e.g. "candidates", "warnings")
  json to_json(const json& env) const;   // adds tflops, gbytes_per_s, intensity from shape and time
};

// Verification of C against a float64 reference. Large outputs are checked on a random sample of elements.
struct VerifyResult {
  bool ok = false;
  double max_rel_err = 0;      // max |c - ref| / max(|ref|, scale) over checked elements
  std::int64_t checked = 0;
  std::string detail;          // first bad element, NaN, unwritten element...
};

class GemmProvider {
 public:
  virtual ~GemmProvider() = default;
  virtual std::string name() const = 0;
  virtual Requirements requirements() const { return {}; }
  // nullopt when (shape, dtype) is supported; else why not ("fp8_e4m3 needs sm_89+", "above size limit").
  virtual std::optional<std::string> unsupported(const GemmShape& shape, const std::string& dtype) const = 0;
  // Verify, then time. Returns one record, or several for providers that sweep candidates
  // (the winner first, tagged in extra). Never throws for a kernel failure: that is a "failed" record.
  virtual std::vector<GemmRecord> run(const GemmShape& shape, const std::string& dtype,
                                      const TimingPolicy& timing) = 0;
};

}  // namespace aispflow::kernels
