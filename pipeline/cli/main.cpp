// `aispflow`: the command line. CLI11 maps arguments onto the plain functions in commands.hpp; this file
// also turns every error into a message and an exit code (never a stack trace).
#include <signal.h>

#include <cstdio>
#include <exception>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "pipeline/build_id.hpp"
#include "pipeline/cli/commands.hpp"
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
  run->footer(kExitCodes);

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
