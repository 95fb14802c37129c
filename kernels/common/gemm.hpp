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
  // A grouped (MoE-routed) shape: rows of each of the `batch` experts, from gemm_shapes' routing. Empty for a
  // plain shape. When set, batch == groups.size() and m == the largest group (what a padded batched GEMM runs).
  std::vector<std::int64_t> groups;
  // Rows that carry real work: sum(groups), or m * batch.
  std::int64_t real_rows() const;
  double flops() const { return 2.0 * double(real_rows()) * double(n) * double(k); }
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

// One point of a sweep: what a provider is asked to compute. The layout and epilogue axes (docs/records.md):
//   layout   "nn": B stored row-major K x N (the convention above);
//            "nt": B stored row-major N x K, as a framework's Linear weight is. C = A * B either way.
//   epilogue "none": C = A*B;  "bias": C = A*B + bias[n];  "bias_gelu": C = gelu(A*B + bias[n]), GELU in its
//            tanh form (what cuBLASLt's GELU epilogue and frameworks' fast GELU compute). fp8 scales apply
//            to A*B before the bias.
struct GemmCase {
  GemmShape shape;
  std::string dtype;
  std::string layout = "nn";
  std::string epilogue = "none";
  // Provider options (gemm_sweep's provider_options for this provider), e.g. {"autotune": true}. They travel
  // with each case because providers are shared objects.
  json options = json::object();
  bool plain() const { return layout == "nn" && epilogue == "none"; }
  // "bf16", or "bf16 nt bias_gelu" when an axis is not at its default: for logs and messages.
  std::string label() const;
};
const std::vector<std::string>& gemm_layouts();     // nn, nt
const std::vector<std::string>& gemm_epilogues();   // none, bias, bias_gelu
// For providers that offer only layout nn without an epilogue: why they cannot run `c`, or nullopt.
std::optional<std::string> unless_plain(const std::string& provider, const GemmCase& c);

// Builds a record in the documented schema. Fill the fields you know, then call finish_record().
struct GemmRecord {
  std::string provider;          // "cpu.blocked"
  std::string kernel;            // full identity: tile sizes, threads, algo ...
  GemmShape shape;
  std::string dtype;
  std::string layout = "nn";     // "nn" | "nt" (GemmCase)
  std::string epilogue = "none"; // "none" | "bias" | "bias_gelu"
  std::string status = "ok";     // "ok" | "failed" | "skipped"
  std::string reason;            // why failed/skipped; empty when ok
  bool verified = false;
  double max_rel_err = 0;
  double tolerance = 0;
  std::optional<TimingStats> time;
  json extra = json::object();   // provider-specific fields merged in (e.g. "candidates", "warnings")
  // A record of `provider` for case `c` (shape, dtype, layout, epilogue), `kernel` as given; status ok until the
  // provider says otherwise.
  static GemmRecord of(const std::string& provider, const std::string& kernel, const GemmCase& c);
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
  // "" when `options` (gemm_sweep's provider_options for this provider) are valid; otherwise what is wrong,
  // naming the key and the accepted values. Providers without options accept only an empty map.
  virtual std::string check_options(const json& options) const {
    return options.empty() ? std::string() : name() + " takes no options; got " + options.dump();
  }
  // nullopt when the case is supported; else why not ("fp8_e4m3 needs sm_89+", "above size limit",
  // "cpu.blocked offers layout nn only").
  virtual std::optional<std::string> unsupported(const GemmCase& c) const = 0;
  // Verify, then time. Returns one record, or several for providers that sweep candidates
  // (the winner first, tagged in extra). Never throws for a kernel failure: that is a "failed" record.
  virtual std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) = 0;
};

}  // namespace aispflow::kernels
