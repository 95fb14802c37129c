// Workflow parser: syntax, matrix expansion, ${refs}, --set, param checking and the exact place every
// error names. The YAML is written inline so each expected line:column can be checked by eye.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/dag.hpp"
#include "pipeline/workflow.hpp"
#include "pipeline/workflow_codec.hpp"

namespace aispflow {
namespace {

// A node type that only declares params: the parser never runs nodes.
class FakeType : public NodeType {
 public:
  FakeType(std::string name, std::vector<ParamSpec> params, NodeTraits traits = {},
           std::function<std::string(const json&)> check = {})
      : name_(std::move(name)), params_(std::move(params)), traits_(traits), check_(std::move(check)) {}
  std::string name() const override { return name_; }
  std::string doc() const override { return "fake " + name_; }
  std::vector<ParamSpec> params() const override { return params_; }
  NodeTraits traits() const override { return traits_; }
  Requirements requirements(const json& params) const override {
    Requirements r;
    if (params.contains("gpus")) r.gpus = params.at("gpus").get<int>();
    return r;
  }
  std::string check_params(const json& params) const override { return check_ ? check_(params) : ""; }
  NodeOutput run(NodeContext&) const override { return {}; }

 private:
  std::string name_;
  std::vector<ParamSpec> params_;
  NodeTraits traits_;
  std::function<std::string(const json&)> check_;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    reg.add(std::make_unique<FakeType>(
        "command", std::vector<ParamSpec>{{"run", ParamKind::string, nullptr, true, "shell command"},
                                          {"files", ParamKind::path_list, json::array(), false, ""},
                                          {"timeout_s", ParamKind::number, 0, false, ""}}));
    reg.add(std::make_unique<FakeType>(
        "sweep",
        std::vector<ParamSpec>{{"repeats", ParamKind::integer, 10, false, ""},
                               {"providers", ParamKind::list, json::array({"a"}), false, ""},
                               {"size", ParamKind::integer, nullptr, false, ""},
                               {"dtype", ParamKind::string, "fp16", false, ""},
                               {"verbose", ParamKind::boolean, false, false, ""},
                               {"options", ParamKind::map, json::object(), false, ""},
                               {"gpus", ParamKind::integer, 0, false, ""}},
        NodeTraits{true, true, 1}, [](const json& p) -> std::string {
          std::string dtype = p.at("dtype");
          return dtype == "fp16" || dtype == "bf16" ? "" : "field 'dtype': expected fp16 or bf16";
        }));
    return reg;
  }();
  return r;
}

Workflow parse(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return parse_workflow(yaml, "wf.yaml", registry(), overrides);
}

// The InputError message `yaml` gives, or a marker that makes the comparison fail visibly.
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse(yaml, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

const NodeDecl& by_name(const Workflow& wf, const std::string& name) {
  for (const auto& n : wf.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

// ---------------------------------------------------------------------------------------------------
// The basics

TEST(Workflow, LoadsNodesInFileOrderWithParamsAsWritten) {
  Workflow wf = parse_workflow(R"(nodes:
  make_b:
    type: command
    params: {run: "echo b", files: [data/input.csv]}
  make_a:
    type: command
    doc: free text is allowed
    params:
      run: echo a
)",
                               "flows/my_flow.yaml", registry());
  EXPECT_EQ(wf.name, "my_flow");  // the file stem when there is no `name:`
  EXPECT_TRUE(wf.file.is_absolute());
  ASSERT_EQ(wf.nodes.size(), 2u);
  EXPECT_EQ(wf.nodes[0].name, "make_b");
  EXPECT_EQ(wf.nodes[0].declared_name, "make_b");
  EXPECT_EQ(wf.nodes[0].type, "command");
  EXPECT_EQ(wf.nodes[0].params, (json{{"run", "echo b"}, {"files", {"data/input.csv"}}}));
  EXPECT_EQ(wf.nodes[1].params, (json{{"run", "echo a"}}));  // defaults are not filled here
  EXPECT_EQ(wf.nodes[1].loc.str(), "flows/my_flow.yaml:5:3");
  EXPECT_EQ(wf.nodes[1].param_locs.at("run").str(), "flows/my_flow.yaml:9:12");
}

TEST(Workflow, NameKeyOverridesTheFileStem) {
  EXPECT_EQ(parse("name: demo\nnodes:\n  a: {type: command, params: {run: x}}\n").name, "demo");
}

TEST(Workflow, ScalarsFollowTheYamlCoreSchemaAndQuotedValuesStayStrings) {
  Workflow wf = parse(R"(nodes:
  s:
    type: sweep
    params:
      options: {i: 12, neg: -3, f: 1.5, e: 2e3, t: true, q: "12", no: no, n: ~, hex: 0x1F, big: 99999999999999999999}
)");
  const json& o = wf.nodes[0].params["options"];
  EXPECT_TRUE(o["i"].is_number_integer());
  EXPECT_EQ(o["i"], 12);
  EXPECT_EQ(o["neg"], -3);
  EXPECT_DOUBLE_EQ(o["f"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(o["e"].get<double>(), 2000.0);
  EXPECT_EQ(o["t"], true);
  EXPECT_EQ(o["q"], "12");
  EXPECT_EQ(o["no"], "no");  // YAML 1.1's "no means false" surprise does not apply
  EXPECT_TRUE(o["n"].is_null());
  EXPECT_EQ(o["hex"], 31);
  EXPECT_TRUE(o["big"].is_number_float());
}

// ---------------------------------------------------------------------------------------------------
// Errors, each with its exact place

TEST(WorkflowErrors, YamlSyntaxErrorIsOneBased) {
  // The flow sequence opened on line 4 is never closed; yaml-cpp notices at the ':' on line 5.
  EXPECT_EQ(error_of(R"(nodes:
  a:
    type: command
    params: {run: [1, 2
  b: 3
)"),
            "wf.yaml:5:4: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error_of("nodes:\n  a: *nope\n"), "wf.yaml:2:6: YAML syntax error: the referenced anchor is not defined");

  // "illegal map value": the second ':' on line 2, at column 7.
  EXPECT_EQ(error_of("nodes:\n  a: b: c\n"), "wf.yaml:2:7: YAML syntax error: illegal map value");
}

TEST(WorkflowErrors, UnknownNodeTypeSuggestsTheNearest) {
  EXPECT_EQ(error_of(R"(nodes:
  a:
    type: comand
)"),
            "wf.yaml:3:11: node 'a': field 'type': unknown node type 'comand' (did you mean 'command'?); "
            "registered types: command, sweep");
}

TEST(WorkflowErrors, MissingType) {
  EXPECT_EQ(error_of("nodes:\n  a:\n    params: {run: x}\n"),
            "wf.yaml:2:3: node 'a': field 'type': missing: every node needs a 'type' (see `aispflow nodes`)");
}

TEST(WorkflowErrors, MistypedParamNamesPlaceNodeFieldAndExpectation) {
  EXPECT_EQ(error_of(R"(name: demo
nodes:
  sweep:
    type: sweep
    params:
      repeats: ten
)"),
            "wf.yaml:6:16: node 'sweep': field 'repeats': expected int, got string \"ten\"");
  // Quoted numbers are strings: the user asked for a string.
  EXPECT_EQ(error_of("nodes:\n  s:\n    type: sweep\n    params: {repeats: \"10\"}\n"),
            "wf.yaml:4:23: node 's': field 'repeats': expected int, got string \"10\"");
  EXPECT_EQ(error_of("nodes:\n  s:\n    type: sweep\n    params: {verbose: 1}\n"),
            "wf.yaml:4:23: node 's': field 'verbose': expected bool (true or false), got int 1");
  EXPECT_EQ(error_of("nodes:\n  c:\n    type: command\n    params: {run: x, files: [a.csv, 3]}\n"),
            "wf.yaml:4:29: node 'c': field 'files': expected list of paths, but item 1 is int 3");
}

TEST(WorkflowErrors, UnknownParamListsTheTypesParamsAndTheNearest) {
  EXPECT_EQ(error_of("nodes:\n  s:\n    type: sweep\n    params:\n      repeat: 3\n"),
            "wf.yaml:5:15: node 's': field 'repeat': unknown param for type 'sweep' (did you mean 'repeats'?); "
            "its params: repeats, providers, size, dtype, verbose, options, gpus");
}

TEST(WorkflowErrors, MissingRequiredParamPointsAtTheNode) {
  EXPECT_EQ(error_of("nodes:\n  c:\n    type: command\n"),
            "wf.yaml:2:3: node 'c': field 'run': missing required param (expected string: shell command)");
  // An explicit null is "not given".
  EXPECT_EQ(error_of("nodes:\n  c:\n    type: command\n    params: {run: ~}\n"),
            "wf.yaml:2:3: node 'c': field 'run': missing required param (expected string: shell command)");
}

TEST(WorkflowErrors, TypeCheckMessageIsReportedAtTheParamItNames) {
  EXPECT_EQ(error_of("nodes:\n  s:\n    type: sweep\n    params:\n      dtype: fp64\n"),
            "wf.yaml:5:14: node 's': field 'dtype': expected fp16 or bf16");
}

TEST(WorkflowErrors, UnknownKeys) {
  EXPECT_EQ(error_of("node:\n  a: {type: command}\n"),
            "wf.yaml:1:1: field 'node': unknown top-level key (did you mean 'nodes'?); allowed: name, nodes, plugins, "
            "doc, description, executor");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    input: [b]\n"),
            "wf.yaml:4:5: node 'a': field 'input': unknown key (did you mean 'inputs'?); allowed keys: type, params, "
            "inputs, matrix, resources, exclusive, doc, description");
}

TEST(WorkflowErrors, EmptyWorkflows) {
  EXPECT_EQ(error_of(""), "wf.yaml: the workflow is empty: expected a map with 'nodes'");
  EXPECT_EQ(error_of("# only a comment\n"), "wf.yaml: the workflow is empty: expected a map with 'nodes'");
  EXPECT_EQ(error_of("name: x\n"), "wf.yaml: the workflow has no 'nodes': nothing to run");
  EXPECT_EQ(error_of("name: x\nnodes:\n"),
            "wf.yaml:2:1: field 'nodes': the workflow is empty: 'nodes' declares no node");
  EXPECT_EQ(error_of("nodes: {}\n"), "wf.yaml:1:1: field 'nodes': the workflow is empty: 'nodes' declares no node");
  EXPECT_EQ(error_of("nodes: [a, b]\n"), "wf.yaml:1:8: field 'nodes': expected a map of node name -> node");
  EXPECT_EQ(error_of("- a\n"), "wf.yaml:1:1: expected a map with 'nodes' (and optionally 'name') at the top level");
}

TEST(WorkflowErrors, DuplicateNodeNamesNameBothLines) {
  EXPECT_EQ(error_of(R"(nodes:
  a:
    type: command
    params: {run: x}
  a:
    type: command
    params: {run: y}
)"),
            "wf.yaml:5:3: node 'a': duplicate node name: declared at wf.yaml:2:3 and again at wf.yaml:5:3");
}

TEST(WorkflowErrors, DuplicateKeysInsideANodeNameBothPlaces) {
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    params:\n      run: x\n      run: y\n"),
            "wf.yaml:6:7: field 'run': duplicate key 'run' (first defined at wf.yaml:5:7)");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    type: sweep\n"),
            "wf.yaml:4:5: node 'a': field 'type': duplicate key 'type' (first defined at wf.yaml:3:5)");
}

TEST(WorkflowErrors, InputsAndRefsNamingUnknownNodes) {
  EXPECT_EQ(error_of(R"(nodes:
  make_a: {type: command, params: {run: x}}
  join:
    type: command
    inputs: [make_a, mke_a]
    params: {run: x}
)"),
            "wf.yaml:5:22: node 'join': field 'inputs': unknown node 'mke_a' (did you mean 'make_a'?); nodes in "
            "this workflow: join, make_a");
  EXPECT_EQ(error_of(R"(nodes:
  peak: {type: command, params: {run: x}}
  use:
    type: command
    params: {run: "echo ${paek.gbps}"}
)"),
            "wf.yaml:5:19: node 'use': field 'params': ${paek.gbps}: unknown node 'paek' (did you mean 'peak'?); "
            "nodes in this workflow: peak, use");
}

TEST(WorkflowErrors, SelfDependency) {
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    inputs: [a]\n    params: {run: x}\n"),
            "wf.yaml:4:14: node 'a': field 'inputs': a node cannot be its own input");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    params: {run: \"${a.x}\"}\n"),
            "wf.yaml:4:19: node 'a': field 'params': ${a.x}: a node cannot read its own output");
}

TEST(WorkflowErrors, BadShapesOfNodeKeys) {
  EXPECT_EQ(error_of("nodes:\n  a: command\n"),
            "wf.yaml:2:6: node 'a': expected a map with at least 'type' (allowed keys: type, params, inputs, "
            "matrix, resources, exclusive, doc, description)");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    inputs: make_b\n"),
            "wf.yaml:4:13: node 'a': field 'inputs': expected a list of node names, e.g. [make_b], or a map "
            "{alias: node}");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    params: {run: x}\n    matrix: {size: 4}\n"),
            "wf.yaml:5:20: node 'a': field 'matrix.size': expected a non-empty list of values");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    params: {run: x}\n    exclusive: yes\n"),
            "wf.yaml:5:16: node 'a': field 'exclusive': expected bool (true or false), got string \"yes\"");
  EXPECT_EQ(error_of("nodes:\n  a:\n    type: command\n    params: {run: x}\n    resources: {gpu: -1}\n"),
            "wf.yaml:5:22: node 'a': field 'resources.gpu': expected a non-negative int");
  EXPECT_EQ(error_of("nodes:\n  a.b:\n    type: command\n"),
            "wf.yaml:2:3: node 'a.b': invalid node name: use letters, digits, '_' and '-', starting with a letter "
            "or '_'");
  EXPECT_EQ(error_of("nodes:\n  matrix:\n    type: command\n"),
            "wf.yaml:2:3: node 'matrix': 'matrix' is reserved (${matrix.x} means a matrix value)");
}

TEST(WorkflowErrors, UnreadableFileNamesPathAndReason) {
  std::filesystem::path missing = std::filesystem::temp_directory_path() / "aispflow_no_such_dir" / "wf.yaml";
  try {
    load_workflow(missing, registry());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot read workflow file '" + missing.string() + "': No such file or directory");
  }
  try {
    load_workflow(std::filesystem::temp_directory_path(), registry());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
}

TEST(Workflow, LoadsFromAFileAndNamesItInErrors) {
  auto dir = std::filesystem::temp_directory_path() / ("aispflow_wf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto file = dir / "study.yaml";
  std::ofstream(file) << "nodes:\n  a: {type: command, params: {run: x}}\n";
  Workflow wf = load_workflow(file, registry());
  EXPECT_EQ(wf.name, "study");
  EXPECT_EQ(wf.file, std::filesystem::absolute(file).lexically_normal());
  std::ofstream(file) << "nodes:\n  a: {type: command, params: {run: 5}}\n";
  try {
    load_workflow(file, registry());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file.string() + ":2:36: node 'a': field 'run': expected string, got int 5");
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------------
// Matrix expansion

TEST(Matrix, ExpandsIntoOneNodePerValueKeepingTypes) {
  Workflow wf = parse(R"(nodes:
  per_size:
    type: sweep
    matrix: {size: [1, 2, 4]}
    params: {size: "${matrix.size}", options: {label: "n${matrix.size}"}}
  gather:
    type: command
    inputs: [per_size]
    params: {run: ls}
)");
  ASSERT_EQ(wf.nodes.size(), 4u);
  EXPECT_EQ(wf.nodes[0].name, "per_size[size=1]");
  EXPECT_EQ(wf.nodes[1].name, "per_size[size=2]");
  EXPECT_EQ(wf.nodes[2].name, "per_size[size=4]");
  EXPECT_EQ(wf.nodes[3].name, "gather");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wf.nodes[i].declared_name, "per_size");
  // A whole-string ${matrix.x} keeps the YAML type, so the int param passes the type check.
  EXPECT_TRUE(wf.nodes[2].params["size"].is_number_integer());
  EXPECT_EQ(wf.nodes[2].params["size"], 4);
  EXPECT_EQ(wf.nodes[2].params["options"]["label"], "n4");  // spliced into text
  EXPECT_EQ(wf.nodes[2].matrix, (json{{"size", 4}}));
  EXPECT_TRUE(wf.nodes[2].refs.empty());  // ${matrix.*} is not a reference
}

TEST(Matrix, CartesianProductInDeclarationOrder) {
  Workflow wf = parse(R"(nodes:
  g:
    type: command
    matrix:
      m: [1, 2]
      dtype: [fp16, "bf16", 1.50]
    params: {run: "echo ${matrix.m} ${matrix.dtype}"}
)");
  std::vector<std::string> names;
  for (const auto& n : wf.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"g[m=1,dtype=fp16]", "g[m=1,dtype=bf16]", "g[m=1,dtype=1.50]",
                                             "g[m=2,dtype=fp16]", "g[m=2,dtype=bf16]", "g[m=2,dtype=1.50]"}));
  EXPECT_EQ(wf.nodes[5].params["run"], "echo 2 1.50");  // the value as written
}

TEST(Matrix, InputsMayNameOneInstanceThroughTheMatrix) {
  Workflow wf = parse(R"(nodes:
  gen:
    type: command
    matrix: {size: [1, 2]}
    params: {run: x}
  use:
    type: command
    matrix: {size: [1, 2]}
    inputs: ["gen[size=${matrix.size}]"]
    params: {run: x}
)");
  EXPECT_EQ(by_name(wf, "use[size=2]").inputs.at(0).node, "gen[size=2]");
  EXPECT_EQ(by_name(wf, "use[size=2]").inputs.at(0).alias, "gen");
  Dag dag(wf);
  EXPECT_EQ(dag.predecessors(dag.index_of("use[size=2]")), std::vector<std::size_t>{dag.index_of("gen[size=2]")});
}

TEST(Matrix, Errors) {
  EXPECT_EQ(error_of(R"(nodes:
  g:
    type: command
    matrix: {size: [1, 2]}
    params: {run: "echo ${matrix.sise}"}
)"),
            "wf.yaml:5:19: node 'g': field 'run': ${matrix.sise}: no matrix key 'sise' (did you mean 'size'?); the "
            "matrix has: size");
  EXPECT_EQ(error_of("nodes:\n  g:\n    type: command\n    params: {run: \"${matrix.n}\"}\n"),
            "wf.yaml:4:19: node 'g': field 'run': ${matrix.n} used, but the node has no 'matrix' (add matrix: "
            "{n: [...]})");
  EXPECT_EQ(error_of("nodes:\n  g:\n    type: command\n    params: {run: x}\n    matrix: {n: [1, 2, 1]}\n"),
            "wf.yaml:5:24: node 'g': field 'matrix.n': value '1' is listed twice");
  // The matrix value's type still meets the param check.
  EXPECT_EQ(error_of("nodes:\n  g:\n    type: sweep\n    matrix: {n: [1, x]}\n    params: {size: \"${matrix.n}\"}\n"),
            "wf.yaml:5:20: node 'g[n=x]': field 'size': expected int, got string \"x\"");
}

// ---------------------------------------------------------------------------------------------------
// ${node.field} references

TEST(Refs, BecomeRefDeclsWithTheirPlace) {
  Workflow wf = parse(R"(nodes:
  peak: {type: command, params: {run: x}}
  shapes: {type: command, params: {run: x}}
  use:
    type: sweep
    params:
      size: ${peak.ceilings.0.gbps}
      options: {list: [a, "${shapes.count} of $HOME ${HOME} ${matrix}"]}
)");
  const NodeDecl& use = by_name(wf, "use");
  ASSERT_EQ(use.refs.size(), 2u);
  EXPECT_EQ(use.refs[0].node, "shapes");  // params are walked in key order (options < size)
  EXPECT_EQ(use.refs[0].field_path, "count");
  EXPECT_EQ(use.refs[0].loc.str(), "wf.yaml:8:27");  // the opening quote of the string
  EXPECT_EQ(use.refs[1].node, "peak");
  EXPECT_EQ(use.refs[1].field_path, "ceilings.0.gbps");
  EXPECT_EQ(use.refs[1].loc.str(), "wf.yaml:7:13");
  // A param holding a ref is checked at run time, when its value is known: no "expected int" now.
  EXPECT_EQ(use.params["size"], "${peak.ceilings.0.gbps}");

  Dag dag(wf);
  EXPECT_EQ(dag.predecessors(dag.index_of("use")),
            (std::vector<std::size_t>{dag.index_of("peak"), dag.index_of("shapes")}));
}

TEST(Refs, SubstituteKeepsTypesSplicesTextAndListsInstances) {
  Workflow wf = parse(R"(nodes:
  peak: {type: command, params: {run: x}}
  sizes: {type: command, matrix: {n: [1, 2]}, params: {run: x}}
  use:
    type: sweep
    params:
      size: ${peak.best.value}
      dtype: "bf${peak.bits}"
      providers: ${sizes.n}
      options: {nested: ["${peak.name}"]}
)");
  Artifact peak;
  peak.set_data({{"best", {{"value", 42}}}, {"bits", 16}, {"name", "p"}});
  Artifact s1, s2;
  s1.set_data({{"n", 1}});
  s2.set_data({{"n", 2}});
  auto lookup = [&](const std::string& node) -> std::vector<const Artifact*> {
    if (node == "peak") return {&peak};
    if (node == "sizes") return {&s1, &s2};
    return {};
  };
  const NodeDecl& use = by_name(wf, "use");
  json p = substitute_refs(use, use.params, lookup);
  EXPECT_EQ(p["size"], 42);
  EXPECT_TRUE(p["size"].is_number_integer());
  EXPECT_EQ(p["dtype"], "bf16");
  EXPECT_EQ(p["providers"], json::array({1, 2}));
  EXPECT_EQ(p["options"]["nested"][0], "p");
  // After substitution the params are checked for real.
  EXPECT_EQ(complete_params(use, *registry().find("sweep"), p)["size"], 42);

  peak.set_data({{"best", {{"other", 1}}}, {"bits", 16}, {"name", "p"}});
  try {
    substitute_refs(use, use.params, lookup);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "wf.yaml:7:13: node 'use': field 'size': ${peak.best.value}: the output of 'peak' has no field "
              "'best.value' (it has: other)");
  }
}

// ---------------------------------------------------------------------------------------------------
// --set overrides

TEST(Overrides, ScalarListNestedAndYamlTyped) {
  const std::string yaml = R"(nodes:
  sweep:
    type: sweep
    params: {repeats: 3, options: {a: 1}}
)";
  Workflow wf = parse(yaml, {"sweep.repeats=20", "sweep.providers=[a, b]", "sweep.options.depth.x=on",
                             "sweep.options.quoted='16'", "sweep.dtype=bf16"});
  const json& p = wf.nodes[0].params;
  EXPECT_EQ(p["repeats"], 20);
  EXPECT_EQ(p["providers"], json::array({"a", "b"}));
  EXPECT_EQ(p["options"], (json{{"a", 1}, {"depth", {{"x", "on"}}}, {"quoted", "16"}}));
  EXPECT_EQ(p["dtype"], "bf16");
}

TEST(Overrides, DeclaredNameSetsEveryInstanceAndAnInstanceNameOnlyItself) {
  const std::string yaml = R"(nodes:
  g:
    type: sweep
    matrix: {size: [1, 2]}
    params: {size: "${matrix.size}"}
)";
  Workflow all = parse(yaml, {"g.repeats=5"});
  EXPECT_EQ(all.nodes[0].params["repeats"], 5);
  EXPECT_EQ(all.nodes[1].params["repeats"], 5);
  Workflow one = parse(yaml, {"g[size=2].repeats=7"});
  EXPECT_FALSE(one.nodes[0].params.contains("repeats"));
  EXPECT_EQ(one.nodes[1].params["repeats"], 7);
  // An override is applied as if written in the file, so ${matrix.x} works in it.
  Workflow labelled = parse(yaml, {"g.options.label=n${matrix.size}"});
  EXPECT_EQ(labelled.nodes[1].params["options"]["label"], "n2");
}

TEST(Overrides, SetValueMayHoldARefWhichBecomesAnEdge) {
  Workflow wf = parse("nodes:\n  a: {type: command, params: {run: x}}\n  b: {type: command, params: {run: y}}\n",
                      {"b.run=echo ${a.out}"});
  ASSERT_EQ(wf.nodes[1].refs.size(), 1u);
  EXPECT_EQ(wf.nodes[1].refs[0].node, "a");
}

TEST(Overrides, Errors) {
  const std::string yaml = "nodes:\n  sweep:\n    type: sweep\n    params: {repeats: 3}\n";
  EXPECT_EQ(error_of(yaml, {"swep.repeats=3"}),
            "<command line>: --set 'swep.repeats=3': unknown node 'swep' (did you mean 'sweep'?)");
  EXPECT_EQ(error_of(yaml, {"sweep.repeat=3"}),
            "<command line>: node 'sweep': field 'repeat': --set 'sweep.repeat=3': type 'sweep' has no param "
            "'repeat' (did you mean 'repeats'?); its params: repeats, providers, size, dtype, verbose, options, "
            "gpus");
  EXPECT_EQ(error_of(yaml, {"sweep.repeats=ten"}),
            "<command line> --set sweep.repeats=ten: node 'sweep': field 'repeats': expected int, got string "
            "\"ten\"");
  EXPECT_EQ(error_of(yaml, {"sweep"}), "<command line>: --set 'sweep': expected node.param=value");
  EXPECT_EQ(error_of(yaml, {"sweep.repeats"}),
            "<command line>: --set 'sweep.repeats': expected node.param=value (no '=')");
  EXPECT_EQ(error_of(yaml, {"sweep.repeats.x=1"}),
            "<command line>: node 'sweep': field 'repeats': --set 'sweep.repeats.x=1': 'repeats' is int 3, not a "
            "map, so it has no key 'x'");
  std::string msg = error_of(yaml, {"sweep.providers=[a, b"});
  EXPECT_EQ(msg.rfind("<command line>: --set 'sweep.providers=[a, b': the value is not valid YAML", 0), 0u) << msg;
}

// ---------------------------------------------------------------------------------------------------
// Params, resources, traits

TEST(Params, CompleteParamsFillsDefaultsAndNormalisesIntegralNumbers) {
  Workflow wf = parse("nodes:\n  s:\n    type: sweep\n    params: {repeats: 1e3, size: ~}\n");
  json p = complete_params(wf.nodes[0], *registry().find("sweep"), wf.nodes[0].params);
  EXPECT_EQ(p["repeats"], 1000);
  EXPECT_TRUE(p["repeats"].is_number_integer());
  EXPECT_EQ(p["dtype"], "fp16");
  EXPECT_FALSE(p.contains("size"));  // optional without default, and null means "not given"
  EXPECT_EQ(p["providers"], json::array({"a"}));
}

TEST(Params, ResourcesExclusiveTraitsAndRequirements) {
  Workflow wf = parse(R"(nodes:
  c:
    type: command
    params: {run: x}
    resources: {gpu: 1, nic: 2}
    exclusive: true
  plain: {type: command, params: {run: x}}
  timing: {type: sweep, params: {gpus: 2}}
)");
  EXPECT_EQ(wf.nodes[0].resources, (std::map<std::string, int>{{"gpu", 1}, {"nic", 2}}));
  EXPECT_TRUE(wf.nodes[0].exclusive);
  EXPECT_FALSE(wf.nodes[1].exclusive);
  EXPECT_TRUE(wf.nodes[1].resources.empty());
  EXPECT_TRUE(wf.nodes[2].exclusive);                  // from the type's traits
  EXPECT_EQ(wf.nodes[2].resources.at("gpu"), 2);       // from the type's requirements
}

TEST(Inputs, ListAndAliasMap) {
  Workflow wf = parse(R"(nodes:
  a: {type: command, params: {run: x}}
  b: {type: command, params: {run: x}}
  j1: {type: command, inputs: [a, b], params: {run: x}}
  j2: {type: command, inputs: {left: a, right: b}, params: {run: x}}
)");
  const NodeDecl& j1 = by_name(wf, "j1");
  ASSERT_EQ(j1.inputs.size(), 2u);
  EXPECT_EQ(j1.inputs[0].alias, "a");
  EXPECT_EQ(j1.inputs[1].node, "b");
  EXPECT_EQ(j1.inputs[1].loc.str(), "wf.yaml:4:35");
  const NodeDecl& j2 = by_name(wf, "j2");
  EXPECT_EQ(j2.inputs[0].alias, "left");
  EXPECT_EQ(j2.inputs[0].node, "a");
  EXPECT_EQ(j2.inputs[1].alias, "right");
  EXPECT_EQ(error_of("nodes:\n  a: {type: command, params: {run: x}}\n  j: {type: command, inputs: [a, a], params: {run: x}}\n"),
            "wf.yaml:3:34: node 'j': field 'inputs': input 'a' is listed twice (first at wf.yaml:3:31); to read "
            "several instances of one matrix, give each an alias: inputs: {small: \"gen[size=1]\", big: "
            "\"gen[size=2]\"}");
}

TEST(WorkflowErrors, AliasBombIsRefused) {
  // Aliases that expand exponentially are refused, not followed into memory exhaustion.
  std::string laughs = "doc:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    laughs += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) laughs += ", " + prev;
    laughs += "]\n";
  }
  std::string msg = error_of(laughs + "nodes:\n  s:\n    type: sweep\n    params: {options: {big: *a8}}\n");
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------------
// Names on disk and in the environment

TEST(Names, FilesystemNameAndEnvVarSuffix) {
  EXPECT_EQ(filesystem_name("per_size[size=1]"), "per_size.size-1");
  EXPECT_EQ(filesystem_name("g[m=1,dtype=bf16]"), "g.m-1.dtype-bf16");
  EXPECT_EQ(filesystem_name("make_a"), "make_a");
  // Characters that cannot go into a file name are replaced, and a hash keeps such names apart.
  std::string a = filesystem_name("g[p=a/b]"), b = filesystem_name("g[p=a b]");
  EXPECT_EQ(a.find('/'), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_EQ(env_var_suffix("per_size[size=1]"), "PER_SIZE_SIZE_1");
  EXPECT_EQ(env_var_suffix("make_a"), "MAKE_A");
  EXPECT_EQ(env_var_suffix("g[m=1,dtype=bf16]"), "G_M_1_DTYPE_BF16");
}

// ---------------------------------------------------------------------------------------------------
// No input may crash the loader: random damage to a valid file gives a workflow or an InputError.

TEST(Fuzz, MutatedWorkflowsNeverCrash) {
  const std::string valid = R"(name: demo
nodes:
  make_a:
    type: command
    params: {run: "echo a > $AISPFLOW_OUT/a.txt"}
  make_b:
    type: command
    params: {run: "echo b", files: [data/input.csv]}
  join:
    type: command
    inputs: [make_a, make_b]
    params: {run: "cat ${make_a.path}"}
  per_size:
    type: sweep
    matrix: {size: [1, 2, 4]}
    params: {size: "${matrix.size}", options: {x: [1, {y: 2}]}}
  gather:
    type: command
    inputs: {all: per_size}
    resources: {gpu: 1}
    params:
      run: ls
)";
  ASSERT_NO_THROW(parse(valid));
  const std::string noise = ":[]{}-,#&*!|>'\"%@` \n\t${}.=~?0aZ";
  std::mt19937 rng(12345);  // fixed seed: a failure is reproducible
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  int accepted = 0, rejected = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text = valid;
    int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits && !text.empty(); ++e) {
      switch (pick(5)) {
        case 0: text.resize(pick(text.size())); break;                        // truncate
        case 1: text.erase(pick(text.size()), 1 + pick(3)); break;            // delete
        case 2: text.insert(pick(text.size() + 1), 1, noise[pick(noise.size())]); break;
        case 3: text[pick(text.size())] = noise[pick(noise.size())]; break;  // replace
        case 4: {                                                             // duplicate a slice
          std::size_t at = pick(text.size());
          text.insert(pick(text.size() + 1), text.substr(at, 1 + pick(40)));
          break;
        }
      }
    }
    try {
      Workflow wf = parse(text, round % 7 == 0 ? std::vector<std::string>{"join.run=echo hi"} : std::vector<std::string>{});
      Dag dag(wf);  // the DAG checks must not crash either
      ++accepted;
    } catch (const InputError& e) {
      ++rejected;
      EXPECT_FALSE(std::string(e.what()).empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": not an InputError: " << e.what() << "\n--- input ---\n" << text;
    }
  }
  EXPECT_GT(rejected, 50);  // the mutations really do break files
  EXPECT_GT(accepted, 10);   // and some leave them valid, so the success path is exercised too
  // Deep nesting must be refused cleanly, not overflow the stack.
  EXPECT_THROW(parse(std::string(20000, '[')), InputError);
  EXPECT_THROW(parse("nodes:\n  a: {type: command, params: {run: " + std::string(5000, '[') + "}}\n"), InputError);
}

}  // namespace
// ---------------------------------------------------------------------------------------------------
// The parsed-workflow cache's encoding

TEST(WorkflowCodec, RoundTripGivesBackAnEqualWorkflow) {
  Workflow wf = parse(R"(name: "codec \t test"
nodes:
  make_a:
    type: command
    params: {run: "echo 'é' > $AISPFLOW_OUT/a.txt", files: [data/in.csv], timeout_s: 2.5}
  per_size:
    type: sweep
    matrix: {size: [1, 2], dtype: [fp16, bf16]}
    resources: {gpu: 1, nic: 2}
    params: {size: "${matrix.size}", dtype: "${matrix.dtype}", options: {nested: [1, {x: null}]}}
  join:
    type: command
    inputs: {first: make_a, sizes: per_size}
    params: {run: "cat ${make_a.value} ${per_size.n}"}
)");
  // A location in another file (an include) keeps its file name.
  wf.nodes.back().refs.front().loc.file = "other.yaml";
  ASSERT_EQ(wf.nodes.size(), 6u);
  EXPECT_EQ(decode_workflow(encode_workflow(wf)), wf);
  const Workflow empty;
  EXPECT_EQ(decode_workflow(encode_workflow(empty)), empty);
}

TEST(WorkflowCodec, DamagedBytesAreRejectedNotMisread) {
  const std::string bytes = encode_workflow(parse("nodes:\n  a: {type: command, params: {run: x}}\n"));
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(decode_workflow(std::string_view(bytes).substr(0, cut)), std::runtime_error) << cut;
  EXPECT_THROW(decode_workflow(bytes + "x"), std::runtime_error);
  std::string wrong_count = bytes;
  wrong_count[wrong_count.find('\n') + 1] = '\x7f';  // the name's length: far beyond the end
  EXPECT_THROW(decode_workflow(wrong_count), std::runtime_error);
}

}  // namespace aispflow
