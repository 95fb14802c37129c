#pragma once
// `aispflow report RUN_A RUN_B`: two runs compared record by record, as nvbench's compare script does, with an
// exit code a CI gate can use. Records pair on their identity (provider, shape with its dimensions, dtype,
// layout, epilogue; a repeat of one identity within a run pairs by order); each pair gets the ratio of the
// metric, and a change worse than the tolerance is a regression. A printer: it reads two run directories.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::reports {

struct DiffOptions {
  std::string metric = "tflops";   // any metric nodes/record_match knows (its direction decides "better")
  double tolerance = 0.05;         // a fraction: 0.05 flags changes worse than 5 %
};

struct DiffRow {
  // regression | improvement | same | missing (in B) | new (in B) | fixed | failed (in both) | not compared
  std::string verdict;
  std::string identity;            // "cpu.blocked decode_b8_qkv_proj 8x5120x2880 fp32 nt"
  std::string provider, shape, dtype;   // dtype with its variant: "bf16 nt bias_gelu"
  std::optional<double> a, b;      // the metric in each run (ok records only)
  std::string a_status, b_status;  // "ok", "failed", "skipped", or "" where the run has no such record
  // b / a for a higher-is-better metric, a / b for a lower-is-better one: above 1 is always better.
  std::optional<double> speedup;
  std::string note;                // why it is not compared, a failure's reason, a kernel that changed
};

struct RunDiff {
  nlohmann::json a_run, b_run;     // run.json of each, without nodes
  std::string a_dir, b_dir;
  DiffOptions options;
  std::string unit;                // the metric's unit
  std::vector<DiffRow> rows;       // regressions first, then missing, new, improvements, the rest
  std::size_t count(const std::string& verdict) const;
  int exit_code() const;           // 3 when any regression, else 0
};

// Throws InputError when a directory holds no run, a metric is unknown, or no record of A pairs with one of B
// (a gate that compares nothing must not pass).
RunDiff diff_runs(const std::filesystem::path& a_dir, const std::filesystem::path& b_dir, const DiffOptions& options);

// Markdown: a summary line and a table (`all`: every row; otherwise the rows that are not "same").
std::string diff_markdown(const RunDiff& diff, bool all);
// The page's document for a diff: {"kind": "diff", "a", "b", "metric", "unit", "tolerance", "summary", "rows"}.
nlohmann::json diff_document(const RunDiff& diff);

}  // namespace aispflow::reports
