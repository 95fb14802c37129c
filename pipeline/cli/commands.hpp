#pragma once
// The `aispflow` subcommands, as plain functions over plain option structs. main.cpp maps the command
// line onto them with CLI11 (kept in that one file: CLI11 is slow to compile). Each returns the exit code.
#include <string>
#include <vector>

#include "pipeline/dag.hpp"

namespace aispflow::cli {

struct WorkflowArgs {
  std::string file;
  std::vector<std::string> sets;     // --set node.param=value
  std::string backend = "auto";      // --backend auto|cpu|cuda
};

struct RunArgs : WorkflowArgs {
  Selection selection;
  std::vector<std::string> force;
  bool force_all = false;
  bool no_cache = false;
  bool dry_run = false;
  int jobs = 0;
  std::string out;                   // default runs/<workflow name>/
  std::string cache;                 // default $AISPFLOW_CACHE or .aispflow/cache
  std::string progress = "auto";     // auto (a live line on a terminal) | lines
  double lock_timeout = -1;          // --lock-timeout SECONDS; < 0: wait for the measurement lock as long as it takes
  std::string executor = "local";    // --executor local|slurm (docs/slurm.md)
  std::string executor_profile;      // --executor-profile FILE: Slurm settings instead of the workflow's `executor:`
  bool report = false;               // --report: also write report.html next to run.json
};

struct ReportArgs {
  std::vector<std::string> runs;     // none: the latest run under runs/; one: its report; two: A against B
  std::string out;                   // -o FILE (.html, or .md for a comparison)
  double tolerance_pct = 5;          // comparison: a change worse than this is a regression
  std::string metric = "tflops";     // comparison: the metric compared
  bool all = false;                  // comparison: print every row, also those within tolerance
};

struct ExplainArgs : WorkflowArgs {
  std::vector<std::string> nodes;    // empty: all
  std::string cache;
};

int run_command(const RunArgs& args);
int explain_command(const ExplainArgs& args);
int validate_command(const WorkflowArgs& args);
int graph_command(const WorkflowArgs& args);
int nodes_command(const std::string& type, bool as_json);
int cache_command(const std::string& action, const std::string& cache_dir);   // ls | gc | clear
int hw_command(const std::string& backend, bool as_json);
// `aispflow run-node REQUEST`: one node of a workflow inside a Slurm job (hidden; pipeline/slurm/job.hpp).
int run_node_command(const std::string& request, const std::string& cache_dir, const std::string& backend);
int report_command(const ReportArgs& args);   // pipeline/cli/report_command.cpp
// Built-in GEMM providers, then the providers of the plugins (.so) and workflows' plugins (.yaml) in `files`.
int providers_command(const std::vector<std::string>& files, bool as_json);

// The cache directory: --cache, else $AISPFLOW_CACHE, else .aispflow/cache in the working directory.
std::string default_cache_dir(const std::string& from_option);

// Ctrl-C / SIGTERM: the first one asks the run to stop (report written, exit 130), a second one quits at once.
void install_signal_handlers();

}  // namespace aispflow::cli
