// The `aispflow` subcommands. Errors the user can fix are InputError (exit 2, message on stderr,
// handled in main.cpp); a node's failure is part of the run's report, never an exception here.
#include "pipeline/cli/commands.hpp"

#include "nodes/mpi_launch.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

#include "kernels/common/backend.hpp"
#include "nodes/register_all.hpp"
#include "pipeline/cache.hpp"
#include "pipeline/cli/workflow_cache.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/report.hpp"
#include "pipeline/cli/slurm_launch.hpp"
#include "pipeline/workflow.hpp"
#include "reports/html_page.hpp"

namespace aispflow::cli {

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_cancel{false};

extern "C" void on_stop_signal(int) {
  if (g_cancel.exchange(true)) _exit(kExitInterrupted);  // second Ctrl-C: quit now
  static const char message[] = "\naispflow: interrupted; stopping running nodes (Ctrl-C again quits at once)\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
}

const Registry& registry() {
  static const Registry* instance = [] {
    auto* r = new Registry;
    register_builtin_nodes(*r);
    return r;
  }();
  return *instance;
}

// The backend behind a lazily created environment. `auto` and `cpu` are probed only when a node needs
// them (a fully cached run never does); any other name is constructed now, so that `--backend cuda`
// on a machine without a GPU, or a misspelt name, is bad input (exit 2) before anything runs.
std::unique_ptr<EnvironmentSource> environment_for(const std::string& backend) {
  if (backend == "auto" || backend == "cpu")
    return std::make_unique<EnvironmentSource>(backend, [backend] {
      return std::unique_ptr<Environment>(kernels::make_backend(backend));
    });
  auto made = std::make_shared<std::unique_ptr<kernels::Backend>>(kernels::make_backend(backend));
  auto source = std::make_unique<EnvironmentSource>(backend, [made] { return std::unique_ptr<Environment>(std::move(*made)); });
  source->get();
  return source;
}

struct Loaded {
  Workflow workflow;         // its name and file; the nodes live in the Dag
  std::unique_ptr<Dag> dag;
};

// `cache_root`: where parsed workflows are kept (empty: parse the YAML every time).
Loaded load(const WorkflowArgs& args, const fs::path& cache_root = {}) {
  Workflow parsed = cache_root.empty() ? load_workflow(args.file, registry(), args.sets)
                                       : load_workflow_cached(args.file, registry(), args.sets, cache_root);
  Loaded l;
  l.workflow.name = parsed.name;
  l.workflow.file = parsed.file;
  l.dag = std::make_unique<Dag>(std::move(parsed));
  return l;
}

std::string plan_line(const PlannedNode& p, std::size_t width) {
  std::string name = p.name;
  name.resize(std::max(width, name.size()), ' ');
  if (p.action == PlannedNode::Action::cached) return name + "  " + p.reason;
  return name + "  " + to_string(p.action) + ": " + p.reason;
}

void print_plan(const std::vector<PlannedNode>& plan) {
  std::size_t width = 0;
  for (const auto& p : plan) width = std::max(width, p.name.size());
  for (const auto& p : plan) std::printf("%s\n", plan_line(p, width).c_str());
}

std::string human_bytes(std::uintmax_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buffer;
}

// Wraps `text` at `width` columns, each line starting with `indent`.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string first_sentence(const std::string& doc) {
  auto dot = doc.find(". ");
  return dot == std::string::npos ? doc : doc.substr(0, dot + 1);
}

std::string default_text(const ParamSpec& p) {
  if (p.required) return "required";
  if (p.default_value.is_null()) return "optional";
  return "default " + p.default_value.dump();
}

void print_json_human(const json& j, const std::string& indent) {
  for (const auto& [key, value] : j.items()) {
    if (value.is_object()) {
      std::printf("%s%s:\n", indent.c_str(), key.c_str());
      print_json_human(value, indent + "  ");
    } else if (value.is_array() && !value.empty() && value[0].is_object()) {
      std::printf("%s%s:\n", indent.c_str(), key.c_str());
      for (std::size_t i = 0; i < value.size(); ++i) {
        std::printf("%s  [%zu]\n", indent.c_str(), i);
        print_json_human(value[i], indent + "    ");
      }
    } else {
      std::printf("%s%s: %s\n", indent.c_str(), key.c_str(),
                  value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
    }
  }
}

}  // namespace

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::string default_cache_dir(const std::string& from_option) {
  if (!from_option.empty()) return from_option;
  if (const char* env = std::getenv("AISPFLOW_CACHE"); env && *env) return env;
  return ".aispflow/cache";
}

// ---------------------------------------------------------------------------------------------------

int run_command(const RunArgs& args) {
  const fs::path cache_dir = default_cache_dir(args.cache);
  Loaded l = load(args, args.no_cache ? fs::path() : cache_dir);
  auto env = environment_for(args.backend);
  Cache cache(cache_dir);
  Executor executor(l.workflow, *l.dag, registry(), *env, &cache);

  ExecOptions options;
  options.jobs = args.jobs;
  options.selection = args.selection;
  options.force = args.force;
  options.force_all = args.force_all;
  options.no_cache = args.no_cache;
  if (args.lock_timeout >= 0) options.lock_timeout_s = args.lock_timeout;
  // --executor slurm: nodes it takes start as Slurm jobs; checked (sbatch, controller) before anything runs.
  const char* term = std::getenv("TERM");
  const bool live = args.progress == "auto" && ::isatty(STDOUT_FILENO) && !(term && std::string(term) == "dumb");
  ConsoleReporter reporter(stdout, stderr, live);
  std::unique_ptr<RemoteLauncher> remote;   // after the reporter: its poller reports to it until destroyed
  if (args.executor != "local") {
    remote = make_remote_launcher(args, *l.dag, registry(), cache_dir, &g_cancel, &reporter);
    options.remote = remote.get();
  }
  if (args.dry_run) {
    print_plan(executor.plan(options));
    return kExitOk;
  }

  // What killed runs left in the cache once all their processes had ended (docs/cache.md).
  if (!args.no_cache)
    for (const auto& dead : cache.collect_dead_runs())
      std::fprintf(stderr, "aispflow: removed %s (%s), left by a run that is gone (%s)\n", dead.dir.string().c_str(),
                   human_bytes(dead.bytes).c_str(), dead.owner.c_str());
  const fs::path out = args.out.empty() ? fs::path("runs") / filesystem_name(l.workflow.name) : fs::path(args.out);
  options.out_dir = out;
  install_signal_handlers();
  options.cancel = &g_cancel;
  options.observer = &reporter;

  RunSummary summary = executor.run(options);
  fs::path report;
  try {
    report = write_run_report(out, summary);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aispflow: cannot write the run report: %s\n", e.what());
    return std::max<int>(summary.exit_code, kExitNodeFailed);
  }
  std::printf("%s; report: %s\n", format_summary(summary).c_str(), report.string().c_str());
  if (args.report) {   // a printer over what was just written: it runs and measures nothing
    try {
      std::printf("html report: %s\n", reports::write_run_report_html(out).string().c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "aispflow: cannot write the HTML report: %s\n", e.what());
      return std::max<int>(summary.exit_code, kExitNodeFailed);
    }
  }
  std::fflush(stdout);
  for (const auto& n : summary.nodes) {
    if (n.status == NodeStatus::failed)
      std::fprintf(stderr, "aispflow: node '%s' failed: %s\n", n.name.c_str(), n.error.c_str());
  }
  if (summary.exit_code == kExitExpectationsNotMet) {
    for (const auto& n : summary.nodes)
      if (n.verdict == Verdict::expectations_not_met)
        std::fprintf(stderr, "aispflow: node '%s': expectations not met (see %s)\n", n.name.c_str(),
                     (out / "nodes" / filesystem_name(n.name)).string().c_str());
  }
  return summary.exit_code;
}

int explain_command(const ExplainArgs& args) {
  const fs::path cache_dir = default_cache_dir(args.cache);
  Loaded l = load(args, cache_dir);
  auto env = environment_for(args.backend);
  Cache cache(cache_dir);
  Executor executor(l.workflow, *l.dag, registry(), *env, &cache);

  ExecOptions options;
  std::set<std::string> wanted;
  for (const auto& name : args.nodes) {
    auto instances = l.dag->resolve(name);
    if (instances.empty()) {
      std::vector<std::string> names;
      for (std::size_t i = 0; i < l.dag->size(); ++i) names.push_back(l.dag->node(i).name);
      std::string hint = closest_match(name, names);
      throw InputError(SourceLoc{"<command line>", 0, 0}, "", "",
                       "unknown node '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    for (auto i : instances) wanted.insert(l.dag->node(i).name);
    options.selection.until.push_back(name);  // a node's reason depends on its upstream nodes only
  }
  auto plan = executor.plan(options);
  std::erase_if(plan, [&](const PlannedNode& p) { return !wanted.empty() && !wanted.count(p.name); });
  print_plan(plan);
  return kExitOk;
}

int validate_command(const WorkflowArgs& args) {
  Loaded l = load(args);
  auto env = environment_for(args.backend);
  const Dag& dag = *l.dag;
  std::size_t width = 0;
  for (std::size_t i = 0; i < dag.size(); ++i) width = std::max(width, dag.node(i).name.size());
  std::size_t cannot = 0;
  std::printf("%s: valid workflow '%s', %zu node%s\n", l.workflow.file.string().c_str(), l.workflow.name.c_str(),
              dag.size(), dag.size() == 1 ? "" : "s");
  for (auto i : dag.topological_order()) {
    const NodeDecl& decl = dag.node(i);
    const NodeType* type = registry().find(decl.type);
    std::string verdict = "can run here";
    try {
      json params = complete_params(decl, *type, decl.params);
      NodeNeeds needs = needs_of(decl, *type, params);
      if (needs.asks_machine()) {
        if (auto why = why_machine_cannot_run(needs, env->get())) {
          verdict = "cannot run on this machine (would be skipped): " + *why;
          ++cannot;
        }
      }
    } catch (const InputError&) {
      verdict = "can run here, unless requirements depend on ${refs} resolved at run time";
    } catch (const std::exception& e) {
      verdict = std::string("cannot probe the machine: ") + e.what();
      ++cannot;
    }
    std::string name = decl.name;
    name.resize(width, ' ');
    std::printf("  %s  %-14s %s\n", name.c_str(), decl.type.c_str(), verdict.c_str());
  }
  if (cannot)
    std::printf("%zu node%s cannot run on this machine (backend %s)\n", cannot, cannot == 1 ? "" : "s",
                env->name().c_str());
  return kExitOk;
}

int graph_command(const WorkflowArgs& args) {
  Loaded l = load(args);
  std::fputs(l.dag->to_dot().c_str(), stdout);
  return kExitOk;
}

int nodes_command(const std::string& type_name, bool as_json) {
  std::vector<const NodeType*> types;
  if (type_name.empty()) {
    types = registry().all();
  } else {
    const NodeType* t = registry().find(type_name);
    if (!t) {
      std::string hint = registry().nearest(type_name);
      throw InputError(SourceLoc{"<command line>", 0, 0}, "", "",
                       "unknown node type '" + type_name + "'" +
                           (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                           "; `aispflow nodes` lists them");
    }
    types.push_back(t);
  }
  if (as_json) {
    json out = json::array();
    for (const auto* t : types) {
      json params = json::array();
      for (const auto& p : t->params())
        params.push_back({{"name", p.name}, {"kind", to_string(p.kind)}, {"required", p.required},
                          {"default", p.default_value}, {"doc", p.doc}});
      NodeTraits tr = t->traits();
      out.push_back({{"name", t->name()}, {"doc", t->doc()}, {"version", tr.version},
                     {"hardware_bound", tr.hardware_bound}, {"exclusive", tr.exclusive}, {"params", params}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  if (type_name.empty()) {
    std::size_t width = 0;
    for (const auto* t : types) width = std::max(width, t->name().size());
    for (const auto* t : types) {
      std::string name = t->name();
      name.resize(width, ' ');
      std::printf("%s  %s\n", name.c_str(), first_sentence(t->doc()).c_str());
    }
    std::printf("\n`aispflow nodes TYPE` shows a type's params.\n");
    return kExitOk;
  }
  const NodeType* t = types.front();
  NodeTraits tr = t->traits();
  std::printf("%s (version %d)%s%s\n", t->name().c_str(), tr.version, tr.hardware_bound ? ", hardware-bound" : "",
              tr.exclusive ? ", exclusive" : "");
  std::fputs(wrap(t->doc(), 100, "  ").c_str(), stdout);
  std::printf("params:\n");
  std::size_t width = 0;
  for (const auto& p : t->params()) width = std::max(width, p.name.size());
  for (const auto& p : t->params()) {
    std::string name = p.name;
    name.resize(width, ' ');
    std::printf("  %s  %s, %s\n", name.c_str(), to_string(p.kind).c_str(), default_text(p).c_str());
    if (!p.doc.empty()) std::fputs(wrap(p.doc, 100, std::string(width + 6, ' ')).c_str(), stdout);
  }
  return kExitOk;
}

int cache_command(const std::string& action, const std::string& cache_dir) {
  Cache cache(default_cache_dir(cache_dir));
  if (action == "ls") {
    auto entries = cache.list();
    std::uintmax_t total = 0;
    for (const auto& e : entries) {
      total += e.bytes;
      // file_time_type -> system time (std::chrono::clock_cast is missing from GCC 12's library).
      const auto written = std::chrono::system_clock::now() +
                           std::chrono::duration_cast<std::chrono::system_clock::duration>(
                               e.written - fs::file_time_type::clock::now());
      std::string used = e.used_by.empty() ? "(unreferenced)" : "";
      for (const auto& u : e.used_by) used += (used.empty() ? "" : ", ") + u;
      std::printf("%s  %-14s %10s  %s  %s\n", e.key.c_str(), e.type.c_str(), human_bytes(e.bytes).c_str(),
                  iso8601_utc(written).c_str(), used.c_str());
    }
    std::printf("%zu entr%s, %s in %s\n", entries.size(), entries.size() == 1 ? "y" : "ies",
                human_bytes(total).c_str(), cache.root().string().c_str());
  } else if (action == "gc") {
    const auto gc = cache.gc();
    for (const auto& dead : gc.dead_runs)
      std::printf("removed %s (%s), left by a run that is gone (%s)\n", dead.dir.string().c_str(),
                  human_bytes(dead.bytes).c_str(), dead.owner.c_str());
    std::printf("removed %zu unreferenced entr%s and %zu leftover%s (scratch, temporary, parsed workflows), freed %s\n",
                gc.entries, gc.entries == 1 ? "y" : "ies", gc.leftovers, gc.leftovers == 1 ? "" : "s",
                human_bytes(gc.bytes).c_str());
  } else if (action == "clear") {
    cache.clear();
    std::printf("cleared %s\n", cache.root().string().c_str());
  } else {
    throw InputError("unknown cache action '" + action + "' (expected ls, gc or clear)");
  }
  return kExitOk;
}

int run_node_command(const std::string& request, const std::string& cache_dir, const std::string& backend) {
  auto env = environment_for(backend);
  return run_node_job(request, default_cache_dir(cache_dir), registry(), *env);
}

int hw_command(const std::string& backend, bool as_json) {
  auto b = kernels::make_backend(backend);
  json info = b->hardware_info();
  info["mpi"] = mpi_launcher_info();   // the alltoall node's mpi transport; NCCL is under the cuda backend
  // What hardware-bound nodes put into their cache keys, on every backend (docs/cli.md promises it).
  info["fingerprint"] = b->fingerprint();
  if (as_json) {
    std::printf("%s\n", info.dump(2).c_str());
  } else {
    std::printf("backend: %s\n", b->backend_name().c_str());
    print_json_human(info, "");
  }
  return kExitOk;
}

}  // namespace aispflow::cli
