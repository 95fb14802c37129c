#pragma once
// The interface every node type implements. A node type declares its parameters (with types, defaults and
// docs), its traits and hardware requirements, and a run() that turns input artifacts into its own
// artifact. It never touches the cache or the scheduler.
#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/artifact.hpp"
#include "pipeline/environment.hpp"
#include "pipeline/errors.hpp"

namespace aispflow {

enum class ParamKind {
  integer,
  number,      // integer or floating point
  boolean,
  string,
  list,        // YAML sequence of anything
  map,         // YAML mapping
  any,
  path,        // string naming a file, relative to the workflow file; its content goes into the cache key
  path_list,   // list of such files
};
std::string to_string(ParamKind k);

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::any;
  json default_value;         // null and required=false: optional without default
  bool required = false;
  std::string doc;
  // A shell command (the command node's `run`): a ${node.field} inside it is written for the place it stands
  // in (unquoted: one single-quoted word, a list one word per element; inside '...', "..." or a here-document:
  // escaped for it), and a place that cannot be made safe (a # comment, `...`) is refused at load time
  // (pipeline/shell_quote.hpp). Upstream data never becomes code. ${raw:node.field} inserts the text as it is,
  // for the rare case that means to build a command from data.
  bool shell = false;
  // A list whose every element must be exactly one "${node.field}" reference (checked at load time): it
  // declares references the node reads through NodeContext::refs rather than through the param's value.
  bool references = false;
};

struct NodeTraits {
  // Measurements depend on the machine: the environment fingerprint goes into the cache key.
  bool hardware_bound = false;
  // Timing nodes: nothing else runs while this one does.
  bool exclusive = false;
  // Bumped when the type's output changes for the same inputs; part of the cache key.
  int version = 1;
};

struct NodeInput {
  std::string alias;        // name under which the node sees it (the input list entry or map key)
  std::string node;         // the upstream node's (expanded) name
  const Artifact* artifact = nullptr;
};

struct NodeContext {
  std::string node_name;                 // expanded instance name
  json params;                           // validated, defaults filled, ${refs} substituted
  json refs = json::object();            // every ${node.field} in the params -> its value: {"up.stdout_tail": ...}
  std::vector<NodeInput> inputs;         // in declaration order
  std::filesystem::path out_dir;         // empty directory; files written here join the artifact
  std::filesystem::path workflow_dir;    // relative paths in params are relative to this
  Environment* env = nullptr;            // the active backend (kernels::Backend), never null when run
  const std::atomic<bool>* cancel = nullptr;          // set on Ctrl-C; long loops should poll it
  std::function<void(const std::string&)> log;        // progress and warnings, prefixed with the node name

  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
  void info(const std::string& s) const { if (log) log(s); }
  std::filesystem::path resolve(const std::string& relative) const {  // a param path -> absolute
    std::filesystem::path p(relative);
    return p.is_absolute() ? p : workflow_dir / p;
  }
};

struct NodeOutput {
  json data = json::object();
  Verdict verdict = Verdict::ok;
};

class NodeType {
 public:
  virtual ~NodeType() = default;
  virtual std::string name() const = 0;
  virtual std::string doc() const = 0;                 // one paragraph for `aispflow nodes`
  virtual std::vector<ParamSpec> params() const = 0;
  // params(), built once: the engine consults the specs for every node of every run.
  const std::vector<ParamSpec>& param_specs() const {
    std::call_once(specs_once_, [this] { specs_ = params(); });
    return specs_;
  }
  virtual NodeTraits traits() const { return {}; }
  // May depend on params (e.g. a sweep asking for 2 GPUs). Unmet -> the node is skipped with the reason.
  virtual Requirements requirements(const json& /*params*/) const { return {}; }
  // Extra semantic checks after type checking (e.g. "dtype must be one of ..."). Return an error message
  // naming the field, or an empty string. Called by `validate` and before running.
  virtual std::string check_params(const json& /*params*/) const { return {}; }
  // Files this node's output depends on beyond its path params (absolute paths): their content enters the cache
  // key as a path param's does, and a change re-runs the node naming the file. gemm_sweep names the plugins whose
  // providers it sweeps (and no others).
  virtual std::vector<std::string> key_files(const json& /*params*/) const { return {}; }
  // Throws NodeError (or any std::exception) to fail.
  virtual NodeOutput run(NodeContext& ctx) const = 0;

 private:
  mutable std::once_flag specs_once_;
  mutable std::vector<ParamSpec> specs_;
};

}  // namespace aispflow
