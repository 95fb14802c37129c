#include "pipeline/executor.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>

#include "pipeline/dispatcher.hpp"
#include "pipeline/hash.hpp"
#include "pipeline/measurement_lock.hpp"
#include "pipeline/node_extras.hpp"

namespace aispflow {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string to_string(NodeStatus status) {
  switch (status) {
    case NodeStatus::ran: return "ran";
    case NodeStatus::cached: return "cached";
    case NodeStatus::failed: return "failed";
    case NodeStatus::skipped: return "skipped";
  }
  return "skipped";
}

std::string to_string(PlannedNode::Action action) {
  switch (action) {
    case PlannedNode::Action::run: return "would run";
    case PlannedNode::Action::cached: return "cached";
    case PlannedNode::Action::skip: return "would be skipped";
    case PlannedNode::Action::fail: return "would fail";
  }
  return "would run";
}

int exit_code_for(const std::vector<NodeResult>& nodes, bool interrupted) {
  if (interrupted) return kExitInterrupted;
  bool any_failed = false, expectations_not_met = false;
  for (const auto& n : nodes) {
    if (n.status == NodeStatus::failed) any_failed = true;
    if (n.verdict == Verdict::expectations_not_met) expectations_not_met = true;
  }
  if (any_failed) return kExitNodeFailed;
  if (expectations_not_met) return kExitExpectationsNotMet;
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------------
// EnvironmentSource

EnvironmentSource::EnvironmentSource(std::string requested_name,
                                     std::function<std::unique_ptr<Environment>()> make)
    : requested_(std::move(requested_name)), make_(std::move(make)) {}

EnvironmentSource::EnvironmentSource(Environment& existing)
    : requested_(existing.backend_name()), env_(&existing) {
  std::call_once(once_, [] {});
  created_.store(true, std::memory_order_release);
}

Environment& EnvironmentSource::get() {
  std::call_once(once_, [this] {
    try {
      owned_ = make_();
      env_ = owned_.get();
      if (!env_) throw std::runtime_error("no backend was created");
    } catch (...) {
      failure_ = std::current_exception();
    }
    created_.store(true, std::memory_order_release);
  });
  if (failure_) std::rethrow_exception(failure_);
  return *env_;
}

std::string EnvironmentSource::name() const {
  if (created() && env_) return env_->backend_name();
  return requested_;
}

const json& EnvironmentSource::fingerprint() {
  Environment& env = get();
  std::call_once(fingerprint_once_, [&] { fingerprint_ = env.fingerprint(); });
  return fingerprint_;
}

// ---------------------------------------------------------------------------------------------------
// Artifact export

namespace {

void link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing);  // e.g. another filesystem
}

// Whether `dest` already holds this very artifact: its artifact.json is a hard link to the entry's.
// From the receipt when the artifact came from the cache (one stat(): a cached run exports every node).
bool already_exported(const Artifact& artifact, const fs::path& dest) {
  struct stat there {};
  if (::stat((dest / "artifact.json").c_str(), &there) != 0) return false;
  if (const auto& r = artifact.receipt)
    return static_cast<std::uint64_t>(there.st_ino) == r->record_inode &&
           static_cast<std::uint64_t>(there.st_dev) == r->record_device;
  struct stat source {};
  return ::stat((artifact.dir / "artifact.json").c_str(), &source) == 0 && source.st_ino == there.st_ino &&
         source.st_dev == there.st_dev;
}

}  // namespace

void export_artifact(const Artifact& artifact, const fs::path& dest) {
  if (already_exported(artifact, dest)) return;
  const fs::path source_doc = artifact.dir / "artifact.json";
  std::error_code ec;
  fs::remove_all(dest, ec);
  fs::create_directories(dest);
  link_or_copy(source_doc, dest / "artifact.json");
  for (const auto& name : artifact.files) {
    fs::path target = dest / name;
    if (target.has_parent_path()) fs::create_directories(target.parent_path());
    link_or_copy(artifact.dir / name, target);
  }
}

// ---------------------------------------------------------------------------------------------------
// Resources

namespace {

std::string random_suffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return std::to_string(::getpid()) + "-" + std::to_string(rd() % 1000000) + "-" + std::to_string(counter++);
}

bool requirements_empty(const Requirements& r) {
  return r.gpus == 0 && r.min_compute_capability == 0 && r.features.empty() && r.min_gpu_memory_gib == 0;
}

// Every file a node's path / path_list params name, as written in the params, then the type's own key files.
std::vector<std::string> declared_files(const NodeType& type, const json& params) {
  std::vector<std::string> files;
  for (const auto& spec : type.param_specs()) {
    if (spec.kind != ParamKind::path && spec.kind != ParamKind::path_list) continue;
    auto it = params.find(spec.name);
    if (it == params.end() || it->is_null()) continue;
    if (it->is_string()) files.push_back(it->get<std::string>());
    if (it->is_array())
      for (const auto& v : *it)
        if (v.is_string()) files.push_back(v.get<std::string>());
  }
  for (auto& f : type.key_files(params)) files.push_back(std::move(f));
  return files;
}

// Recursive list of regular files under `dir`, relative and sorted.
std::vector<std::string> list_files(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) out.push_back(fs::relative(it->path(), dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool NodeNeeds::asks_machine() const {
  for (const auto& [_, count] : resources)
    if (count > 0) return true;
  return !requirements_empty(requirements);
}

NodeNeeds needs_of(const NodeDecl& node, const NodeType& type, const json& complete_params) {
  NodeNeeds needs;
  needs.requirements = type.requirements(complete_params);
  needs.resources = node.resources;
  if (needs.requirements.gpus > 0) needs.resources["gpu"] = std::max(needs.resources["gpu"], needs.requirements.gpus);
  needs.exclusive = node.exclusive || type.traits().exclusive;
  return needs;
}

std::optional<std::string> why_machine_cannot_run(const NodeNeeds& needs, Environment& env) {
  for (const auto& [resource, count] : needs.resources) {
    if (count <= 0) continue;
    const int total = env.resource_total(resource);
    if (count > total)
      return "needs " + std::to_string(count) + " " + resource + (count == 1 ? "" : "s") + ", this machine has " +
             std::to_string(total);
  }
  if (!requirements_empty(needs.requirements)) return env.unmet(needs.requirements);
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------------
// One execution (or plan) of the workflow.

struct Executor::Run {
  enum class Mode { execute, plan };
  // What downstream nodes need to know about an upstream one.
  enum class Outcome { none, available, pending, failed, skipped };
  struct State {
    Outcome outcome = Outcome::none;
    std::optional<Artifact> artifact;
    std::string key;                     // the artifact's cache key (a remote job reads its inputs by key)
  };
  // The per-node decision, before anything runs.
  struct Decision {
    PlannedNode::Action action = PlannedNode::Action::run;
    std::string reason;
    KeyInputs key_inputs;
    json refs = json::object();          // the values of the node's ${node.field} references (NodeContext::refs)
    std::string key;
    std::map<std::string, int> needs;
    bool exclusive = false;
    std::vector<NodeInput> inputs;
    std::optional<Artifact> hit;
    bool forced = false;                 // --force / --force-all: run even on a hit, replace the entry
    std::vector<std::string> input_keys; // cache keys of `inputs`, in the same order
    // Set when opt.remote starts this node elsewhere: where (the launcher's description), and the
    // request key that identifies the job (pipeline/remote_launcher.hpp). For hardware-bound nodes
    // `key` stays empty until the job says which key its compute node's fingerprint gave.
    std::optional<RemoteTarget> remote_target;
    std::string request_key;
    json remote_info;                    // a cached remote node: the job that made the artifact
  };

  Executor& ex;
  const ExecOptions& opt;
  Mode mode;
  std::vector<std::size_t> selected;     // topological order
  std::vector<char> is_selected;
  mutable std::mutex warnings_mutex;
  mutable std::vector<std::string> warnings;   // every warn(), for RunSummary::warnings
  std::vector<char> forced;
  std::vector<State> state;
  std::vector<NodeResult> results;
  std::vector<char> kept_failed_output;  // a failed node's partial output was moved to --out
  std::unique_ptr<ResourceDispatcher> dispatcher;  // created by execute_graph()
  fs::path scratch_root;                 // where running nodes write before their output is stored
  std::once_flag scratch_once;
  std::string workflow_name;
  fs::path workflow_dir;                 // relative paths in params are relative to this
  std::vector<std::vector<std::size_t>> upstream;   // predecessors, computed once (decide() and the graph use them)
  std::vector<const NodeType*> types;
  std::mutex scratch_mutex;
  std::vector<fs::path> spare_scratch;   // empty scratch directories, ready for the next node
  std::atomic<unsigned> scratch_count{0};
  std::function<void(std::function<void()>)> enqueue;   // runs a task in the run's arena (execute_graph)

  Run(Executor& executor, const ExecOptions& options, Mode m) : ex(executor), opt(options), mode(m) {
    if (!ex.cache_ && !opt.in_memory)
      throw std::logic_error("Executor: a cache is required unless in_memory is set");
    if (opt.remote && (opt.no_cache || opt.in_memory))
      throw InputError(SourceLoc{"<command line>", 0, 0}, "", "--no-cache",
                       "the " + opt.remote->name() + " executor passes artifacts through the shared cache; "
                       "it cannot run without one");
    const Dag& dag = ex.dag_;
    const std::size_t n = dag.size();
    workflow_name = ex.workflow_.name;
    workflow_dir = ex.workflow_.file.parent_path();
    selected = dag.select(opt.selection);
    is_selected.assign(n, 0);
    for (auto i : selected) is_selected[i] = 1;
    forced.assign(n, opt.force_all || opt.no_cache || opt.in_memory ? 1 : 0);
    for (const auto& name : opt.force) {
      auto instances = dag.resolve(name);
      if (instances.empty()) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < n; ++i) names.push_back(dag.node(i).name);
        std::string hint = closest_match(name, names);
        throw InputError(SourceLoc{"<command line>", 0, 0}, "", "--force",
                         "unknown node '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      }
      for (auto i : instances) forced[i] = 1;
    }
    state.resize(n);
    results.resize(n);
    kept_failed_output.assign(n, 0);
    upstream.resize(n);
    types.assign(n, nullptr);
    for (auto i : selected) {
      upstream[i] = dag.predecessors(i);
      types[i] = ex.registry_.find(dag.node(i).type);
      if (!types[i]) throw InputError("unknown node type '" + dag.node(i).type + "'");  // load_workflow prevents this
    }
    load_unselected_upstreams();
  }

  void warn(const std::string& message) const {
    {
      std::lock_guard lock(warnings_mutex);
      warnings.push_back(message);
    }
    if (opt.observer) opt.observer->warning(message);
  }

  // NodeResult::inputs: declared inputs in the order the node reads them, then ${ref}-only upstreams.
  std::vector<std::string> input_names(std::size_t i) const {
    const Dag& dag = ex.dag_;
    std::vector<std::string> names;
    std::set<std::size_t> listed;
    for (const auto& in : dag.node(i).inputs)
      for (auto idx : dag.resolve(in.node))
        if (listed.insert(idx).second) names.push_back(dag.node(idx).name);
    for (auto p : upstream[i])
      if (listed.insert(p).second) names.push_back(dag.node(p).name);
    return names;
  }

  // Selected nodes may read nodes outside the selection (--only join): those come from the cache, as
  // the last run of that node left them.
  void load_unselected_upstreams() {
    if (opt.in_memory || opt.no_cache) return;
    std::set<std::size_t> needed;
    for (auto i : selected)
      for (auto p : upstream[i])
        if (!is_selected[p]) needed.insert(p);
    for (auto p : needed) {
      const std::string& name = ex.dag_.node(p).name;
      if (auto last = ex.cache_->last(workflow_name, name)) {
        if (auto art = ex.cache_->lookup_for(workflow_name, name, last->key, [&](const std::string& w) { warn(w); })) {
          state[p].outcome = Outcome::available;
          state[p].artifact = std::move(art);
          state[p].key = last->key;
        }
      }
    }
  }

  const NodeType& type_of(std::size_t i) const { return *types[i]; }

  // Decides what to do with node i, given the state of its upstream nodes. Nothing runs here.
  Decision decide(std::size_t i) {
    const Dag& dag = ex.dag_;
    const NodeDecl& decl = dag.node(i);
    const NodeType& type = type_of(i);
    const bool planning = mode == Mode::plan;
    Decision d;
    auto skip = [&](std::string reason) {
      d.action = PlannedNode::Action::skip;
      d.reason = std::move(reason);
      return d;
    };
    auto fail = [&](std::string reason) {
      d.action = PlannedNode::Action::fail;
      d.reason = std::move(reason);
      return d;
    };

    // 1. Upstream nodes: all must have an artifact.
    std::string pending_upstream;
    for (auto p : upstream[i]) {
      const std::string& up = dag.node(p).name;
      switch (state[p].outcome) {
        case Outcome::available: break;
        case Outcome::pending:
          if (pending_upstream.empty()) pending_upstream = up;
          break;
        case Outcome::failed: return skip("upstream " + up + (planning ? " would fail" : " failed"));
        case Outcome::skipped: return skip("upstream " + up + (planning ? " would be skipped" : " skipped"));
        case Outcome::none:
          return skip("upstream " + up + " is not selected and has no cached result");
      }
    }
    if (!pending_upstream.empty()) {
      // Its key cannot be known before the upstream node has produced its output.
      d.action = PlannedNode::Action::run;
      d.reason = "depends on " + pending_upstream + ", which will re-run";
      return d;
    }

    // 2. Params: ${refs} from upstream artifacts, then defaults and type checks.
    json params;
    try {
      if (decl.refs.empty()) {
        params = complete_params(decl, type, decl.params);
      } else {
        auto lookup = [&](const std::string& declared) {
          std::vector<const Artifact*> found;
          for (auto idx : dag.resolve(declared))
            if (state[idx].artifact) found.push_back(&*state[idx].artifact);
          return found;
        };
        auto is_shell = [&type](const std::string& field) {
          for (const auto& spec : type.param_specs())
            if (spec.name == field) return spec.shell;
          return false;
        };
        params = complete_params(decl, type, substitute_refs(decl, decl.params, lookup, is_shell, &d.refs));
      }
      std::string problem = type.check_params(params);
      if (!problem.empty()) return fail(problem);
    } catch (const std::exception& e) {
      return fail(e.what());
    }

    // 3. Resources and hardware requirements. The environment is only consulted when a node asks.
    NodeNeeds needs = needs_of(decl, type, params);
    if (opt.remote) d.remote_target = opt.remote->target(decl, type, needs.resources);
    // A remote node's machine is the compute node's, not this one: the job checks its requirements there.
    if (needs.asks_machine() && !d.remote_target) {
      try {
        Environment& env = ex.env_.get();
        if (auto why = why_machine_cannot_run(needs, env)) return skip(*why);
        for (const auto& [resource, count] : needs.resources)
          if (count > 0 && dispatcher) dispatcher->set_total_if_unknown(resource, env.resource_total(resource));
      } catch (const std::exception& e) {
        return fail(std::string("cannot probe the machine: ") + e.what());
      }
    }
    d.needs = needs.resources;
    d.exclusive = needs.exclusive;

    // 4. Inputs (declared edges; ${ref}-only upstreams reach the node through its params).
    for (const auto& in : decl.inputs)
      for (auto idx : dag.resolve(in.node)) {
        const Artifact* art = state[idx].artifact ? &*state[idx].artifact : nullptr;
        d.inputs.push_back(NodeInput{in.alias, dag.node(idx).name, art});
        d.input_keys.push_back(state[idx].key);
        if (art) d.key_inputs.input_digests[dag.node(idx).name] = art->digest;
      }

    d.key_inputs.type = type.name();
    d.key_inputs.type_version = type.traits().version;
    d.key_inputs.params = std::move(params);
    if (opt.in_memory) {
      d.reason = "in-memory run (no cache)";
      return d;
    }

    // 5. Files named by path params: their content is part of the key.
    for (const auto& file : declared_files(type, d.key_inputs.params)) {
      fs::path p(file);
      if (p.is_relative()) p = workflow_dir / p;
      try {
        d.key_inputs.file_digests[file] = digest_file(p);
      } catch (const std::exception&) {
        std::error_code ec;
        bool exists = fs::exists(p, ec);
        return fail("file '" + file + "' " + (exists ? "cannot be read" : "does not exist") + " (" +
                    p.string() + ")");
      }
    }
    if (type.traits().hardware_bound && d.remote_target) return decide_remote_hardware(i, std::move(d));
    if (type.traits().hardware_bound) {
      try {
        d.key_inputs.environment = ex.env_.fingerprint();
      } catch (const std::exception& e) {
        return fail(std::string("cannot probe the machine: ") + e.what());
      }
    }
    try {
      const auto* facts_of = dynamic_cast<const EnvironmentFacts*>(&type);
      if (json facts = facts_of ? facts_of->environment_facts(d.key_inputs.params) : json(); !facts.is_null()) {
        if (!d.key_inputs.environment.is_object()) d.key_inputs.environment = json::object();
        d.key_inputs.environment["node"] = std::move(facts);
      }
    } catch (const std::exception& e) {
      return fail(e.what());
    }
    d.key = cache_key(d.key_inputs);
    d.request_key = d.key;

    // 6. Cache decision, with the reason.
    if (forced[i]) {
      d.forced = true;
      d.reason = "forced";
      return d;
    }
    if (auto hit = ex.cache_->lookup_for(workflow_name, decl.name, d.key, [&](const std::string& w) { warn(w); })) {
      d.action = PlannedNode::Action::cached;
      d.reason = "cached (same inputs)";
      d.hit = std::move(hit);
      return d;
    }
    auto last = ex.cache_->last(workflow_name, decl.name);
    if (!last) {
      d.reason = "no cache entry";
    } else if (last->inputs.type.empty()) {
      d.reason = "cache entry of the last run is gone (removed or corrupt)";
    } else {
      d.reason = explain_change(last->inputs, d.key_inputs);
      if (d.reason.empty()) d.reason = "cache entry missing (removed or corrupt)";
    }
    return d;
  }

  // A hardware-bound node that runs elsewhere: its key needs the compute node's fingerprint, which only
  // the job can compute. What this process can know is whether a job already answered this very request
  // (same inputs, same target): the launcher's record names the key its result was stored under.
  Decision decide_remote_hardware(std::size_t i, Decision d) {
    const NodeDecl& decl = ex.dag_.node(i);
    KeyInputs request = d.key_inputs;
    request.environment = json{{"executor", opt.remote->name()}, {"target", d.remote_target->where}};
    d.request_key = cache_key(request);
    if (forced[i]) {
      d.forced = true;
      d.reason = "forced";
      return d;
    }
    if (auto rec = opt.remote->recorded(d.request_key)) {
      if (auto hit = ex.cache_->lookup_for(workflow_name, decl.name, rec->key, [&](const std::string& w) { warn(w); })) {
        d.action = PlannedNode::Action::cached;
        d.reason = "cached (same inputs; " + rec->reason + ")";
        d.key = rec->key;
        d.hit = std::move(hit);
        d.remote_info = rec->info;
        return d;
      }
    }
    auto last = ex.cache_->last(workflow_name, decl.name);
    if (last && !last->inputs.type.empty()) {
      KeyInputs before = last->inputs;
      before.environment = nullptr;       // the compute node's; compared by the job, not here
      d.reason = explain_change(before, d.key_inputs);
    }
    if (d.reason.empty()) d.reason = "no " + opt.remote->name() + " result for these inputs (" + d.remote_target->label + ")";
    return d;
  }

  // ------------------------------------------------------------------------------------------------
  // Execution of one node (called from a flow-graph task once its upstream nodes are done).

  bool cancelled() const { return opt.cancel && opt.cancel->load(); }

  fs::path node_out_dir(std::size_t i) const {
    return opt.out_dir / "nodes" / filesystem_name(ex.dag_.node(i).name);
  }

  void finish(std::size_t i, NodeResult&& r) {
    results[i] = std::move(r);
    const NodeResult& res = results[i];
    if (res.status == NodeStatus::failed || res.status == NodeStatus::skipped) {
      state[i].outcome = res.status == NodeStatus::failed ? Outcome::failed : Outcome::skipped;
    } else {
      state[i].outcome = Outcome::available;
    }
    if (!opt.out_dir.empty()) {
      try {
        if (state[i].artifact && !state[i].artifact->dir.empty()) {
          export_artifact(*state[i].artifact, node_out_dir(i));
        } else if (!kept_failed_output[i]) {
          std::error_code ec;
          fs::remove_all(node_out_dir(i), ec);  // no stale output from an earlier run
        }
      } catch (const std::exception& e) {
        warn("node '" + res.name + "': cannot copy its artifact to " + node_out_dir(i).string() + ": " + e.what());
      }
    }
    if (opt.observer) opt.observer->node_finished(res);
  }

  // A node that must run, between its decision and its start.
  struct Pending {
    Decision decision;
    NodeResult result;
  };

  // Decides what to do with node i. Cached, skipped and unstartable nodes are finished here; a node
  // that must run is returned, to be started by the dispatcher once its resources are free.
  std::optional<Pending> prepare(std::size_t i) {
    const NodeDecl& decl = ex.dag_.node(i);
    NodeResult r;
    r.name = decl.name;
    r.type = decl.type;
    r.inputs = input_names(i);
    try {
      if (cancelled()) {
        r.reason = "interrupted";
        finish(i, std::move(r));
        return std::nullopt;
      }
      Decision d = decide(i);
      r.key = d.key;
      r.reason = d.reason;
      switch (d.action) {
        case PlannedNode::Action::skip: break;
        case PlannedNode::Action::fail:
          r.status = NodeStatus::failed;
          r.error = d.reason;
          r.reason = "could not start";
          break;
        case PlannedNode::Action::cached:
          r.status = NodeStatus::cached;
          r.digest = d.hit->digest;
          r.verdict = d.hit->verdict;
          // Keep the index pointing at the entry this run used: gc must not take it, and the next
          // "why" compares against what was used last (record_last writes only when it changed).
          if (!opt.in_memory && !opt.no_cache) ex.cache_->record_last(workflow_name, decl.name, d.key, &*d.hit);
          state[i].artifact = std::move(d.hit);
          state[i].key = d.key;
          if (d.remote_target) {
            r.executor = opt.remote->name();
            r.remote = d.remote_info;
          }
          break;
        case PlannedNode::Action::run:
          r.exclusive = d.exclusive;
          return Pending{std::move(d), std::move(r)};
      }
    } catch (const std::exception& e) {  // an engine problem (disk full, ...): fail this node only
      r.status = NodeStatus::failed;
      r.error = e.what();
    } catch (...) {
      r.status = NodeStatus::failed;
      r.error = "unknown error";
    }
    finish(i, std::move(r));
    return std::nullopt;
  }

  // Runs a prepared node; its resources are held by `lease` (released as soon as run() returns).
  void execute(std::size_t i, Pending& pending, ResourceDispatcher::Lease& lease) {
    NodeResult& r = pending.result;
    try {
      run_node(i, pending.decision, r, lease);
    } catch (const std::exception& e) {
      r.status = NodeStatus::failed;
      r.error = e.what();
    } catch (...) {
      r.status = NodeStatus::failed;
      r.error = "unknown error";
    }
    lease.release();
    finish(i, std::move(r));
  }

  void run_node(std::size_t i, Decision& d, NodeResult& r, ResourceDispatcher::Lease& lease) {
    const NodeDecl& decl = ex.dag_.node(i);
    const NodeType& type = type_of(i);
    if (cancelled()) {
      r.reason = "interrupted";
      return;
    }
    if (opt.observer) opt.observer->node_started(decl.name);

    const fs::path out_dir = opt.in_memory ? fs::path() : take_scratch(decl);
    NodeContext ctx;
    ctx.node_name = decl.name;
    ctx.params = d.key_inputs.params;
    ctx.refs = d.refs;
    ctx.inputs = d.inputs;
    ctx.out_dir = out_dir;
    ctx.workflow_dir = workflow_dir;
    ctx.cancel = opt.cancel;
    if (opt.observer) {
      RunObserver* obs = opt.observer;
      std::string name = decl.name;
      ctx.log = [obs, name](const std::string& message) { obs->node_log(name, message); };
    }

    NodeOutput output;
    auto t0 = Clock::now();
    r.started_at = std::chrono::system_clock::now();
    bool ok = false;
    std::optional<std::string> skipped_reason;   // run() threw NodeSkipped
    std::optional<MeasurementLock> measuring;   // held from before run() until it returns
    try {
      ctx.env = &ex.env_.get();
      if (d.exclusive && !opt.in_memory) {
        MeasurementLockOptions lock;
        lock.dir = opt.lock_dir;
        lock.timeout_s = opt.lock_timeout_s;
        lock.workflow = workflow_name;
        lock.node = decl.name;
        lock.log = ctx.log;
        lock.cancel = opt.cancel;
        measuring.emplace(ctx.env->measured_devices(), lock);
        // The node's interval in run.json is its measurement: it starts once the devices are ours.
        t0 = Clock::now();
        r.started_at = std::chrono::system_clock::now();
      }
      // Isolated: while this node waits inside its own parallel loops, its thread must not pick up
      // another node's task (which could wait for this very node's resources).
      output = oneapi::tbb::this_task_arena::isolate([&] { return type.run(ctx); });
      ok = true;
    } catch (const NodeSkipped& e) {
      skipped_reason = e.what();
    } catch (const std::exception& e) {
      r.error = e.what();
    } catch (...) {
      r.error = "unknown error";
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.finished_at = std::chrono::system_clock::now();
    measuring.reset();
    lease.release();

    if (skipped_reason) {   // skipped once it ran: nothing stored, the next run tries again
      r.status = NodeStatus::skipped;
      r.reason = *skipped_reason;
      if (!out_dir.empty()) give_back_scratch(out_dir);
      return;
    }
    if (!ok) {
      r.status = NodeStatus::failed;
      keep_failed_output(i, out_dir);
      return;
    }
    r.status = NodeStatus::ran;
    Artifact art = store(decl, d, output, out_dir);
    r.digest = art.digest;
    r.verdict = art.verdict;
    state[i].artifact = std::move(art);
    state[i].key = d.key;
  }

  // A node the remote launcher takes: hand it over; `signal` tells the flow graph once it has ended.
  void start_remote(std::size_t i, const std::shared_ptr<Pending>& pending, std::function<void()> signal) {
    const NodeDecl& decl = ex.dag_.node(i);
    const Decision& d = pending->decision;
    if (cancelled()) {
      pending->result.reason = "interrupted";
      finish(i, std::move(pending->result));
      signal();
      return;
    }
    RemoteRequest request;
    request.workflow = workflow_name;
    request.node = decl.name;
    request.type = decl.type;
    request.request_key = d.request_key;
    request.key_inputs = d.key_inputs;
    request.hardware_bound = type_of(i).traits().hardware_bound;
    request.exclusive = d.exclusive;
    request.forced = d.forced;
    request.resources = d.needs;
    for (std::size_t k = 0; k < d.inputs.size(); ++k)
      request.inputs.push_back(RemoteInput{d.inputs[k].alias, d.inputs[k].node, d.input_keys[k]});
    request.workflow_dir = workflow_dir.string();
    request.target = *d.remote_target;
    if (opt.observer) opt.observer->node_started(decl.name);
    opt.remote->start(std::move(request), [this, i, pending, signal](RemoteOutcome outcome) {
      auto ended = std::make_shared<RemoteOutcome>(std::move(outcome));
      // Called from the launcher's thread: the bookkeeping (cache lookup, --out export) runs in the arena.
      enqueue([this, i, pending, signal, ended] {
        complete_remote(i, *pending, *ended);
        signal();
      });
    });
  }

  void complete_remote(std::size_t i, Pending& pending, const RemoteOutcome& outcome) {
    const NodeDecl& decl = ex.dag_.node(i);
    NodeResult& r = pending.result;
    r.executor = opt.remote->name();
    r.remote = outcome.info;
    r.started_at = outcome.started_at;
    r.finished_at = outcome.finished_at;
    if (outcome.started_at && outcome.finished_at)
      r.seconds = std::chrono::duration<double>(*outcome.finished_at - *outcome.started_at).count();
    try {
      switch (outcome.status) {
        case RemoteOutcome::Status::skipped:
          r.status = NodeStatus::skipped;
          r.reason = outcome.reason;
          break;
        case RemoteOutcome::Status::failed:
          r.status = NodeStatus::failed;
          r.error = outcome.error;
          break;
        case RemoteOutcome::Status::ran:
        case RemoteOutcome::Status::cached: {
          auto art = ex.cache_->lookup(outcome.key, [&](const std::string& w) { warn(w); });
          if (!art) {
            r.status = NodeStatus::failed;
            r.error = "the job reported cache entry " + outcome.key + ", which this process cannot read (is " +
                      ex.cache_->root().string() + " on a filesystem shared with the compute nodes?)";
            break;
          }
          r.status = outcome.status == RemoteOutcome::Status::ran ? NodeStatus::ran : NodeStatus::cached;
          if (r.status == NodeStatus::cached) r.reason = outcome.reason;
          r.key = outcome.key;
          r.digest = art->digest;
          r.verdict = art->verdict;
          ex.cache_->record_last(workflow_name, decl.name, outcome.key, &*art);
          state[i].artifact = std::move(art);
          state[i].key = outcome.key;
          break;
        }
      }
    } catch (const std::exception& e) {
      r.status = NodeStatus::failed;
      r.error = e.what();
    }
    finish(i, std::move(r));
  }

  Artifact store(const NodeDecl& decl, const Decision& d, const NodeOutput& output, const fs::path& out_dir) {
    Artifact art;
    if (opt.in_memory) {
      art.set_data(output.data);
      art.verdict = output.verdict;
      art.digest = artifact_digest(art.data(), art.verdict, {});
      return art;
    }
    if (opt.no_cache) {
      // The scratch directory is the artifact's home for the rest of this run.
      std::map<std::string, std::string> file_digests;
      art.files = list_files(out_dir);
      for (const auto& f : art.files) file_digests[f] = digest_file(out_dir / f);
      art.set_data(output.data);
      art.verdict = output.verdict;
      art.dir = out_dir;
      art.digest = artifact_digest(art.data(), art.verdict, file_digests);
      json doc = {{"type", decl.type}, {"data", art.data()}, {"verdict", to_string(art.verdict)},
                  {"files", art.files}, {"digest", art.digest}, {"cached", false}};
      std::ofstream(out_dir / "artifact.json") << doc.dump(2) << "\n";
      return art;
    }
    // A forced node replaces its entry: the user asked for fresh results, and --out must show them.
    art = ex.cache_->store(d.key, d.key_inputs, output.data, output.verdict, out_dir, d.forced);
    ex.cache_->record_last(workflow_name, decl.name, d.key, &art);
    give_back_scratch(out_dir);
    return art;
  }

  // Scratch directories for running nodes. store() moves a node's files out, leaving its directory
  // empty, and an empty directory is as good as a new one: reusing it saves creating and deleting a
  // directory per node, which on a busy ext4 disk costs more than the rest of a small node.
  fs::path take_scratch(const NodeDecl& decl) {
    if (opt.no_cache) {  // the scratch directory stays the artifact's home until the run ends
      fs::path dir = scratch_root_dir() / filesystem_name(decl.name);
      fs::create_directories(dir);
      return dir;
    }
    {
      std::lock_guard lock(scratch_mutex);
      if (!spare_scratch.empty()) {
        fs::path dir = std::move(spare_scratch.back());
        spare_scratch.pop_back();
        return dir;
      }
    }
    fs::path dir = scratch_root_dir() / std::to_string(scratch_count++);
    fs::create_directories(dir);
    return dir;
  }

  // Made on first use: a fully cached run creates (and deletes) no directory at all.
  const fs::path& scratch_root_dir() {
    std::call_once(scratch_once, [this] {
      if (opt.no_cache) {
        scratch_root = fs::temp_directory_path() / ("aispflow-run-" + random_suffix());
        fs::create_directories(scratch_root);
      } else {
        scratch_root = ex.cache_->make_scratch_dir();
      }
    });
    return scratch_root;
  }

  void give_back_scratch(const fs::path& dir) {
    std::error_code ec;
    if (fs::is_empty(dir, ec) && !ec) {
      std::lock_guard lock(scratch_mutex);
      spare_scratch.push_back(dir);
    } else {
      fs::remove_all(dir, ec);
    }
  }

  // A failed node's partial output (logs, stdout.txt) is worth looking at: keep it under --out.
  void keep_failed_output(std::size_t i, const fs::path& out_dir) {
    if (out_dir.empty()) return;
    std::error_code ec;
    if (opt.out_dir.empty()) {
      fs::remove_all(out_dir, ec);
      return;
    }
    fs::path dest = node_out_dir(i);
    fs::remove_all(dest, ec);
    fs::create_directories(dest.parent_path(), ec);
    fs::rename(out_dir, dest, ec);
    if (ec) {
      ec.clear();
      fs::copy(out_dir, dest, fs::copy_options::recursive, ec);
      std::error_code ignored;
      fs::remove_all(out_dir, ignored);
    }
    kept_failed_output[i] = !ec;
  }

  void remove_scratch_root() {
    if (scratch_root.empty()) return;
    std::error_code ec;
    fs::remove_all(scratch_root, ec);
  }

  // One flow-graph "ready" node per DAG node counts its finished predecessors; it feeds an async_node
  // that decides and hands a node that must run to the dispatcher. The async_node's gateway keeps the
  // graph waiting until the node has finished, then signals its successors.
  void execute_graph(int jobs) {
    namespace flow = oneapi::tbb::flow;
    // The arena has at least every hardware thread, so an exclusive node's own parallel loops get the
    // whole machine even at --jobs 1; more jobs than hardware threads is legitimate too (nodes that
    // wait on processes or sleep), so TBB's process-wide limit is raised for this run.
    const int hardware = oneapi::tbb::info::default_concurrency();
    const int threads = std::max(jobs, hardware);
    std::optional<oneapi::tbb::global_control> allow;
    if (threads > hardware)
      allow.emplace(oneapi::tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    oneapi::tbb::task_arena arena(threads);
    enqueue = [&arena](std::function<void()> task) { arena.enqueue(std::move(task)); };
    dispatcher = std::make_unique<ResourceDispatcher>(jobs, enqueue);
    arena.execute([&] {
      flow::graph graph;
      using Ready = flow::continue_node<flow::continue_msg>;
      using Work = flow::async_node<flow::continue_msg, flow::continue_msg>;
      std::vector<std::unique_ptr<Ready>> ready(ex.dag_.size());
      std::vector<std::unique_ptr<Work>> work(ex.dag_.size());
      for (auto i : selected) {
        ready[i] = std::make_unique<Ready>(graph, [](const flow::continue_msg& m) { return m; });
        work[i] = std::make_unique<Work>(
            graph, flow::unlimited, [this, i](const flow::continue_msg&, Work::gateway_type& gateway) {
              std::optional<Pending> pending = prepare(i);
              if (!pending) {
                gateway.try_put(flow::continue_msg());
                return;
              }
              gateway.reserve_wait();
              auto shared = std::make_shared<Pending>(std::move(*pending));
              if (shared->decision.remote_target) {   // another way to start the body; same bookkeeping
                start_remote(i, shared, [&gateway] {
                  gateway.try_put(flow::continue_msg());
                  gateway.release_wait();
                });
                return;
              }
              const auto needs = shared->decision.needs;
              const bool exclusive = shared->decision.exclusive;
              dispatcher->submit(needs, exclusive, [this, i, shared, &gateway](ResourceDispatcher::Lease& lease) {
                execute(i, *shared, lease);
                gateway.try_put(flow::continue_msg());
                gateway.release_wait();
              });
            });
        flow::make_edge(*ready[i], *work[i]);
      }
      std::vector<Ready*> roots;
      for (auto i : selected) {
        bool has_selected_upstream = false;
        for (auto p : upstream[i]) has_selected_upstream |= is_selected[p] != 0;
        if (!has_selected_upstream) roots.push_back(ready[i].get());
        for (auto s : ex.dag_.successors(i))
          if (is_selected[s]) flow::make_edge(*work[i], *ready[s]);
      }
      for (auto* root : roots) root->try_put(flow::continue_msg());
      graph.wait_for_all();
    });
    dispatcher.reset();
  }
};

// ---------------------------------------------------------------------------------------------------

Executor::Executor(const Workflow& workflow, const Dag& dag, const Registry& registry, EnvironmentSource& env,
                   Cache* cache)
    : workflow_(workflow), dag_(dag), registry_(registry), env_(env), cache_(cache) {}

RunSummary Executor::run(const ExecOptions& options) {
  RunSummary summary;
  summary.workflow = workflow_.name;
  summary.file = workflow_.file;
  summary.started = std::chrono::system_clock::now();
  auto t0 = Clock::now();

  Run run(*this, options, Run::Mode::execute);
  if (options.observer) options.observer->run_started(run.selected.size());
  int jobs = options.jobs > 0 ? options.jobs : oneapi::tbb::info::default_concurrency();
  if (!run.selected.empty()) {
    run.execute_graph(jobs);
    run.remove_scratch_root();
    if (cache_ && !options.in_memory && !options.no_cache) cache_->flush_index();
  }

  for (auto i : run.selected) summary.nodes.push_back(std::move(run.results[i]));
  summary.interrupted = options.cancel && options.cancel->load();
  summary.exit_code = exit_code_for(summary.nodes, summary.interrupted);
  summary.backend = env_.name();
  summary.warnings = std::move(run.warnings);
  if (env_.created()) {
    try {
      summary.fingerprint = env_.fingerprint();
    } catch (const std::exception&) {   // the run's nodes already reported a machine that cannot be probed
    }
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (options.observer) options.observer->run_finished(summary);
  return summary;
}

std::vector<PlannedNode> Executor::plan(const ExecOptions& options) {
  Run run(*this, options, Run::Mode::plan);
  std::vector<PlannedNode> out;
  for (auto i : run.selected) {
    Run::Decision d = run.decide(i);
    PlannedNode p{dag_.node(i).name, dag_.node(i).type, d.action, d.reason};
    switch (d.action) {
      case PlannedNode::Action::cached:
        run.state[i].outcome = Run::Outcome::available;
        run.state[i].artifact = std::move(d.hit);
        break;
      case PlannedNode::Action::run: run.state[i].outcome = Run::Outcome::pending; break;
      case PlannedNode::Action::skip: run.state[i].outcome = Run::Outcome::skipped; break;
      case PlannedNode::Action::fail: run.state[i].outcome = Run::Outcome::failed; break;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace aispflow
