// `aispflow`: the command line. CLI11 maps arguments onto the plain functions in commands.hpp; this file
// also turns every error into a message and an exit code (never a stack trace).
#include <signal.h>

#include <cstdio>
#include <exception>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "pipeline/build_id.hpp"
#include "pipeline/cli/commands.hpp"
#include "pipeline/cli/replay_command.hpp"
#include "pipeline/errors.hpp"

namespace {

using namespace aispflow;

constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0    every selected node ran or was cached, and every expectation was met\n"
    "  1    a node failed (its descendants were skipped; see run.json)\n"
    "  2    bad input: workflow file, command line or backend; nothing ran\n"
    "  3    expectations not met (e.g. an `expect` node found regressions), cached results included\n"
    "  130  interrupted (Ctrl-C or SIGTERM); the report of what finished is still written\n";

// Repeatable options take exactly one value per occurrence, so `--only a file.yaml` does not swallow
// the workflow file.
CLI::Option* repeatable(CLI::App* app, const std::string& name, std::vector<std::string>& into,
                        const std::string& help) {
  return app->add_option(name, into, help)->allow_extra_args(false)->type_name("NODE");
}

void add_workflow_args(CLI::App* cmd, cli::WorkflowArgs& a, bool with_backend = true) {
  cmd->add_option("workflow", a.file, "workflow YAML file")->required()->type_name("WF");
  cmd->add_option("--set", a.sets, "override a param: node.param=value (value parsed as YAML); repeatable")
      ->allow_extra_args(false)
      ->type_name("NODE.PARAM=VALUE");
  if (with_backend)
    cmd->add_option("--backend", a.backend, "auto | cpu | cuda (auto: cuda when a GPU is usable, else cpu)")
        ->type_name("NAME")
        ->capture_default_str();
}

int run_cli(int argc, char** argv) {
  CLI::App app{"aispflow: declare a performance study as a DAG of nodes in YAML, run it, and re-run only what "
               "changed (saying why).",
               "aispflow"};
  app.set_version_flag("--version", std::string("aispflow ") + AISPFLOW_VERSION + " (" + aispflow::build_id() + ")");
  app.footer(kExitCodes);
  app.require_subcommand(1);

  cli::RunArgs run_args;
  auto* run = app.add_subcommand("run", "run a workflow: cached nodes are reused, the rest run in parallel");
  add_workflow_args(run, run_args);
  repeatable(run, "--only", run_args.selection.only, "run only these nodes (declared or instance names)");
  repeatable(run, "--from", run_args.selection.from, "run these nodes and everything downstream of them");
  repeatable(run, "--until", run_args.selection.until, "run these nodes and everything upstream of them");
  repeatable(run, "--force", run_args.force, "re-run these nodes even if cached");
  run->add_flag("--force-all", run_args.force_all, "re-run every selected node (results are stored)");
  run->add_flag("--no-cache", run_args.no_cache, "neither read nor write the cache; every node runs");
  run->add_flag("--dry-run", run_args.dry_run, "print what would run or be cached, and why; run nothing");
  run->add_option("-j,--jobs", run_args.jobs, "nodes running at once (default: hardware threads)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--out", run_args.out, "report directory (default runs/<workflow name>/)")->type_name("DIR");
  run->add_option("--cache", run_args.cache, "cache directory (default $AISPFLOW_CACHE or .aispflow/cache)")
      ->type_name("DIR");
  run->add_option("--lock-timeout", run_args.lock_timeout,
                  "seconds a measuring node waits for another process's measurement on the same device "
                  "(default: as long as it takes); then it fails, naming the holder")
      ->check(CLI::NonNegativeNumber)
      ->type_name("SECONDS");
  run->add_option("--progress", run_args.progress, "auto (live line on a terminal) | lines")
      ->check(CLI::IsMember({"auto", "lines"}));
  run->add_option("--executor", run_args.executor,
                  "local | slurm: with slurm, hardware-bound nodes (or those the executor settings name) run as "
                  "Slurm jobs (docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  run->add_option("--executor-profile", run_args.executor_profile,
                  "YAML file with the Slurm settings (`slurm:` map), instead of the workflow's `executor:` section")
      ->type_name("FILE");
  run->add_flag("--report", run_args.report, "also write the HTML report (report.html) next to run.json");
  run->footer(kExitCodes);

  // Hidden: what a Slurm job runs on the compute node (pipeline/slurm/job.hpp).
  std::string node_request, node_cache, node_backend = "auto";
  auto* run_node = app.add_subcommand("run-node", "run one node from a Slurm launcher's request file");
  run_node->group("");
  run_node->add_option("request", node_request, "request.json")->required();
  run_node->add_option("--cache", node_cache, "cache directory");
  run_node->add_option("--backend", node_backend, "auto | cpu | cuda");

  cli::WorkflowArgs validate_args;
  auto* validate = app.add_subcommand("validate", "check a workflow and say which nodes this machine can run");
  add_workflow_args(validate, validate_args);

  cli::WorkflowArgs graph_args;
  auto* graph = app.add_subcommand("graph", "print the expanded DAG as Graphviz DOT");
  add_workflow_args(graph, graph_args, false);

  cli::ExplainArgs explain_args;
  auto* explain = app.add_subcommand("explain", "say whether each node would run or be cached, and why");
  add_workflow_args(explain, explain_args);
  explain->add_option("nodes", explain_args.nodes, "nodes to explain (default: all)")->type_name("NODE");
  explain->add_option("--cache", explain_args.cache, "cache directory")->type_name("DIR");

  std::string node_type;
  bool nodes_json = false;
  auto* nodes = app.add_subcommand("nodes", "list node types, or show one type's params");
  nodes->add_option("type", node_type, "node type to describe")->type_name("TYPE");
  nodes->add_flag("--json", nodes_json, "machine-readable output");

  std::string cache_action, cache_dir;
  auto* cache = app.add_subcommand("cache", "inspect or clean the artifact cache");
  cache->add_option("action", cache_action, "ls | gc | clear")->required()->check(CLI::IsMember({"ls", "gc", "clear"}));
  cache->add_option("--cache", cache_dir, "cache directory (default $AISPFLOW_CACHE or .aispflow/cache)")
      ->type_name("DIR");

  std::string hw_backend = "auto";
  bool hw_json = false;
  auto* hw = app.add_subcommand("hw", "describe this machine as the backend sees it");
  hw->add_option("--backend", hw_backend, "auto | cpu | cuda")->capture_default_str();
  hw->add_flag("--json", hw_json, "machine-readable output");

  cli::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "one HTML page of a run, or compare two runs record by record "
                                              "(exit 3 on a regression)");
  report->add_option("runs", report_args.runs, "RUN_DIR (default: the latest under runs/), or RUN_A RUN_B to compare")
      ->expected(0, 2)
      ->type_name("RUN_DIR");
  report->add_option("-o,--out", report_args.out, "output file (default RUN_DIR/report.html; comparison: "
                                                  "RUN_B/diff.html; .md writes Markdown)")
      ->type_name("FILE");
  report->add_option("--tolerance", report_args.tolerance_pct, "comparison: percent a record may get worse")
      ->check(CLI::Range(0.0, 99.9))
      ->capture_default_str();
  report->add_option("--metric", report_args.metric, "comparison: record metric (tflops, time_ms.median, ...)")
      ->capture_default_str();
  report->add_flag("--all", report_args.all, "comparison: print every record, also those within tolerance");
  report->footer("Exit codes: 0 report written (comparison: no regression); 2 bad input (no run, unknown metric, "
                 "no record pairs); 3 comparison found a regression.");
  // Hidden (no group): run by the `ncu` node under Nsight Compute, not by people (pipeline/cli/replay_command.hpp).
  cli::ReplayArgs replay_args;
  auto* replay = app.add_subcommand("replay", "relaunch one verified GEMM record's kernel once, for a profiler");
  replay->group("");
  replay->add_option("--record", replay_args.record_file, "JSON file of records")->required()->type_name("FILE");
  replay->add_option("--index", replay_args.index, "which record")->required()->check(CLI::NonNegativeNumber);
  replay->add_option("--kernel", replay_args.kernel, "another candidate's kernel (default: the record's)");
  replay->add_option("--warmup", replay_args.warmup, "launches before the profiled one")->check(CLI::NonNegativeNumber);
  replay->add_option("--out", replay_args.out, "write the result JSON here (default: stdout)")->type_name("FILE");
  std::vector<std::string> provider_files;
  bool providers_json = false;
  auto* providers = app.add_subcommand("providers", "list GEMM providers, with those of plugins and workflows' plugins");
  providers->add_option("files", provider_files, "plugin files (.so) and workflows (.yaml) whose plugins to load")
      ->type_name("FILE");
  providers->add_flag("--json", providers_json, "machine-readable output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or the problem
    return code == 0 ? kExitOk : kExitBadInput;
  }

  if (*run) return cli::run_command(run_args);
  if (*validate) return cli::validate_command(validate_args);
  if (*graph) return cli::graph_command(graph_args);
  if (*explain) return cli::explain_command(explain_args);
  if (*nodes) return cli::nodes_command(node_type, nodes_json);
  if (*cache) return cli::cache_command(cache_action, cache_dir);
  if (*hw) return cli::hw_command(hw_backend, hw_json);
  if (*run_node) return cli::run_node_command(node_request, node_cache, node_backend);
  if (*report) return cli::report_command(report_args);
  if (*replay) return cli::replay_command(replay_args);
  if (*providers) return cli::providers_command(provider_files, providers_json);
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe (`aispflow nodes | head`) is an ordinary end, not a crash.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    return run_cli(argc, argv);
  } catch (const aispflow::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return aispflow::kExitBadInput;
  } catch (const std::invalid_argument& e) {  // e.g. an unknown or unavailable --backend
    std::fprintf(stderr, "error: %s\n", e.what());
    return aispflow::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aispflow: %s\n", e.what());
    return aispflow::kExitNodeFailed;
  } catch (...) {
    std::fprintf(stderr, "aispflow: unknown error\n");
    return aispflow::kExitNodeFailed;
  }
}
