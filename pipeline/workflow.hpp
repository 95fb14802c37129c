#pragma once
// YAML workflow file -> in-memory Workflow, with matrix expansion done and every value's location kept
// for error messages. See docs/workflow.md for the syntax (a user-facing contract).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "pipeline/artifact.hpp"
#include "pipeline/errors.hpp"
#include "pipeline/registry.hpp"

namespace aispflow {

// One edge into a node: `inputs: [a, b]` gives alias == node; `inputs: {x: a}` gives alias x.
// `node` is the *declared* name; a declared name that was matrix-expanded stands for all its instances.
struct InputDecl {
  std::string alias;
  std::string node;
  SourceLoc loc;
  bool operator==(const InputDecl&) const = default;
};

// A `${node.field.sub}` reference found inside params. It creates an edge from `node`.
struct RefDecl {
  std::string node;        // declared name of the upstream node
  std::string field_path;  // "field.sub" (dot path into the upstream artifact's data)
  SourceLoc loc;
  bool operator==(const RefDecl&) const = default;
};

struct NodeDecl {
  std::string name;                 // instance name: "per_size[size=1]" for matrix instances, else as declared
  std::string declared_name;        // "per_size"
  std::string type;
  json params;                      // matrix values substituted, --set applied, defaults NOT yet filled
  std::map<std::string, SourceLoc> param_locs;   // top-level param name -> location of its value
  SourceLoc loc;                    // location of the node's key
  std::vector<InputDecl> inputs;
  std::vector<RefDecl> refs;
  std::map<std::string, int> resources;          // e.g. {"gpu": 1}; node type requirements add to this
  bool exclusive = false;                        // from YAML `exclusive: true` or the type's traits
  json matrix = json::object();                  // this instance's matrix values, e.g. {"size": 1}
  bool operator==(const NodeDecl&) const = default;
};

struct Workflow {
  std::string name;                  // `name:` or the file stem
  std::filesystem::path file;        // absolute path of the workflow file
  std::vector<NodeDecl> nodes;       // expanded, in file order
  // `plugins:` (absolute paths), loaded through Registry::plugin_loader before any node's params were checked.
  std::vector<std::filesystem::path> plugins;
  bool operator==(const Workflow&) const = default;
};

// Parses, expands and validates (types, params, names, inputs; cycles are the Dag's job).
// `overrides` are `--set node.param=value` strings (value parsed as YAML; node may be a declared name,
// applying to all its instances). Throws InputError naming file:line:column, node, field, expectation.
Workflow load_workflow(const std::filesystem::path& file, const Registry& registry,
                       const std::vector<std::string>& overrides = {});
// Same from a string (tests); `file_label` is used in messages and to resolve relative paths.
Workflow parse_workflow(const std::string& yaml_text, const std::filesystem::path& file_label,
                        const Registry& registry, const std::vector<std::string>& overrides = {});

// Fill defaults and type-check `params` against the type's ParamSpecs; throws InputError with the
// node's locations. Used at load time and again after ${refs} are substituted at run time.
json complete_params(const NodeDecl& node, const NodeType& type, const json& params);

// Replace every `${node.field}` in `params` with the value from the upstream artifacts.
// `lookup(declared_node)` returns the artifacts of that node's instances (one unless matrix-expanded;
// several give a JSON list). A whole-string reference keeps the value's JSON type; one inside a longer
// string is spliced in as text. In a top-level param for which `shell_field` is true (ParamSpec::shell: a shell
// command), a reference is written for the shell context it stands in (pipeline/shell_quote.hpp), unless
// written ${raw:node.field}. `ref_values`, when given, receives every reference's value keyed "node.field".
// Throws InputError when the field does not exist or a value cannot be placed safely in a shell command.
json substitute_refs(const NodeDecl& node, const json& params,
                     const std::function<std::vector<const Artifact*>(const std::string&)>& lookup,
                     const std::function<bool(const std::string& field)>& shell_field = {},
                     json* ref_values = nullptr);

// The environment variable a command sees a reference's value in: AISPFLOW_REF_ + the node name + _ + the
// field path, each upper-cased with every run of other characters (".", "-", "_") turned into one "_":
// ${peak.ceilings.0.value} -> AISPFLOW_REF_PEAK_CEILINGS_0_VALUE.
std::string ref_env_var(const std::string& node, const std::string& field_path);

// "per_size[size=1]" -> a name safe for directories and environment variables: "per_size.size-1",
// and "AISPFLOW_IN_PER_SIZE_SIZE_1".
std::string filesystem_name(const std::string& instance_name);
std::string env_var_suffix(const std::string& name);

}  // namespace aispflow
