// Dag: edges from inputs and ${refs}, cycles named with their places, stable topological order,
// --only/--from/--until selection and DOT export.
#include <gtest/gtest.h>

#include "pipeline/dag.hpp"

namespace aispflow {
namespace {

class StepType : public NodeType {
 public:
  std::string name() const override { return "step"; }
  std::string doc() const override { return "a test step"; }
  std::vector<ParamSpec> params() const override { return {{"x", ParamKind::any, nullptr, false, ""}}; }
  NodeOutput run(NodeContext&) const override { return {}; }
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    reg.add(std::make_unique<StepType>());
    return reg;
  }();
  return r;
}

Dag dag_of(const std::string& yaml) { return Dag(parse_workflow(yaml, "wf.yaml", registry())); }

std::string dag_error(const std::string& yaml) {
  try {
    dag_of(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::string> names(const Dag& dag, const std::vector<std::size_t>& indices) {
  std::vector<std::string> out;
  for (std::size_t i : indices) out.push_back(dag.node(i).name);
  return out;
}
using Names = std::vector<std::string>;

// --only / --from / --until, as the command line would fill them.
Selection only(Names names) { Selection s; s.only = std::move(names); return s; }
Selection from(Names names) { Selection s; s.from = std::move(names); return s; }
Selection until(Names names) { Selection s; s.until = std::move(names); return s; }
Selection operator&(Selection a, const Selection& b) {  // several options on one command line
  a.only.insert(a.only.end(), b.only.begin(), b.only.end());
  a.from.insert(a.from.end(), b.from.begin(), b.from.end());
  a.until.insert(a.until.end(), b.until.begin(), b.until.end());
  return a;
}

// a -> b -> d, a -> c -> d, and e on its own; `gen` is a matrix read by `gather`.
const char* kDiamond = R"(nodes:
  e: {type: step}
  d: {type: step, inputs: [b, c]}
  b: {type: step, inputs: [a]}
  c: {type: step, params: {x: "${a.value}"}}
  a: {type: step}
  gen: {type: step, matrix: {n: [1, 2, 3]}}
  gather: {type: step, inputs: [gen]}
)";

TEST(Dag, EdgesComeFromInputsAndRefs) {
  Dag dag = dag_of(kDiamond);
  EXPECT_EQ(dag.size(), 9u);
  EXPECT_EQ(names(dag, dag.predecessors(dag.index_of("d"))), (Names{"b", "c"}));
  EXPECT_EQ(names(dag, dag.predecessors(dag.index_of("c"))), (Names{"a"}));  // through ${a.value}
  EXPECT_EQ(names(dag, dag.successors(dag.index_of("a"))), (Names{"b", "c"}));
  EXPECT_TRUE(dag.predecessors(dag.index_of("e")).empty());
  EXPECT_TRUE(dag.successors(dag.index_of("e")).empty());
  // An input naming a matrix-expanded node depends on every instance.
  EXPECT_EQ(names(dag, dag.predecessors(dag.index_of("gather"))), (Names{"gen[n=1]", "gen[n=2]", "gen[n=3]"}));
  EXPECT_EQ(names(dag, dag.resolve("gen")), (Names{"gen[n=1]", "gen[n=2]", "gen[n=3]"}));
  EXPECT_EQ(names(dag, dag.resolve("gen[n=2]")), (Names{"gen[n=2]"}));
  EXPECT_TRUE(dag.resolve("nope").empty());
  EXPECT_THROW(dag.index_of("gen"), std::out_of_range);  // index_of takes instance names only
}

TEST(Dag, TopologicalOrderKeepsFileOrderAmongIndependentNodes) {
  Dag dag = dag_of(kDiamond);
  // e is first in the file and free; d waits for b and c; b and c wait for a.
  EXPECT_EQ(names(dag, dag.topological_order()),
            (Names{"e", "a", "b", "c", "d", "gen[n=1]", "gen[n=2]", "gen[n=3]", "gather"}));
  // Same workflow, same order, every time.
  EXPECT_EQ(names(dag_of(kDiamond), dag_of(kDiamond).topological_order()), names(dag, dag.topological_order()));
}

TEST(Dag, TwoNodeCycleIsNamedWithPlaces) {
  EXPECT_EQ(dag_error(R"(nodes:
  start: {type: step}
  a:
    type: step
    inputs: [b]
  b:
    type: step
    inputs: [a, start]
)"),
            "wf.yaml:3:3: the workflow has a cycle: a → b → a (a at wf.yaml:3:3, b at wf.yaml:6:3)");
}

TEST(Dag, LongerCycleThroughARefStartsAtTheFirstNodeInTheFile) {
  EXPECT_EQ(dag_error(R"(nodes:
  x: {type: step, inputs: [z]}
  y: {type: step, inputs: [x]}
  z: {type: step, params: {x: "${y.out}"}}
)"),
            "wf.yaml:2:3: the workflow has a cycle: x → y → z → x (x at wf.yaml:2:3, y at wf.yaml:3:3, z at "
            "wf.yaml:4:3)");
}

TEST(Dag, RefusesUnknownTargetsAndSelfEdgesInAHandBuiltWorkflow) {
  // The loader already refuses these; the Dag checks them too for workflows built in code.
  Workflow wf;
  wf.name = "w";
  NodeDecl a;
  a.name = a.declared_name = "a";
  a.type = "step";
  a.loc = {"wf.yaml", 2, 3};
  a.inputs.push_back({"b", "bb", {"wf.yaml", 3, 14}});
  wf.nodes.push_back(a);
  NodeDecl b = a;
  b.name = b.declared_name = "bb";
  b.inputs = {{"bb", "bb", {"wf.yaml", 5, 14}}};
  wf.nodes.push_back(b);
  try {
    Dag dag(wf);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "wf.yaml:5:14: node 'bb': field 'inputs': a node cannot depend on itself");
  }
  wf.nodes[1].inputs.clear();
  wf.nodes[0].inputs[0].node = "bbx";
  try {
    Dag dag(wf);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "wf.yaml:3:14: node 'a': field 'inputs': unknown node 'bbx' (did you mean 'bb'?)");
  }
}

TEST(Select, EmptySelectionIsEverythingInTopologicalOrder) {
  Dag dag = dag_of(kDiamond);
  EXPECT_EQ(dag.select({}), dag.topological_order());
}

TEST(Select, OnlyFromUntil) {
  Dag dag = dag_of(kDiamond);
  EXPECT_EQ(names(dag, dag.select(only({"c", "a"}))), (Names{"a", "c"}));
  EXPECT_EQ(names(dag, dag.select(from({"b"}))), (Names{"b", "d"}));
  EXPECT_EQ(names(dag, dag.select(from({"a"}))), (Names{"a", "b", "c", "d"}));
  EXPECT_EQ(names(dag, dag.select(until({"d"}))), (Names{"a", "b", "c", "d"}));
  EXPECT_EQ(names(dag, dag.select(until({"c", "e"}))), (Names{"e", "a", "c"}));  // repeatable: union
}

TEST(Select, SeveralKindsIntersect) {
  Dag dag = dag_of(kDiamond);
  // --from a --until c: the nodes between a and c.
  EXPECT_EQ(names(dag, dag.select(from({"a"}) & until({"c"}))), (Names{"a", "c"}));
  EXPECT_EQ(names(dag, dag.select(only({"b", "e"}) & from({"a"}))), (Names{"b"}));
  EXPECT_TRUE(dag.select(from({"d"}) & until({"a"})).empty());
}

TEST(Select, DeclaredNamesSelectEveryInstance) {
  Dag dag = dag_of(kDiamond);
  EXPECT_EQ(names(dag, dag.select(only({"gen"}))), (Names{"gen[n=1]", "gen[n=2]", "gen[n=3]"}));
  EXPECT_EQ(names(dag, dag.select(from({"gen[n=2]"}))), (Names{"gen[n=2]", "gather"}));
  EXPECT_EQ(names(dag, dag.select(from({"gen[n=3]"}) & until({"gather"}))), (Names{"gen[n=3]", "gather"}));
}

TEST(Select, UnknownNameIsAnInputErrorWithAHint) {
  Dag dag = dag_of(kDiamond);
  try {
    dag.select(from({"gathr"}));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "<command line>: --from 'gathr': unknown node (did you mean 'gather'?)");
  }
  EXPECT_THROW(dag.select(only({"a", "zzz"})), InputError);
  EXPECT_THROW(dag.select(until({"gen[n=9]"})), InputError);
}

TEST(Dot, IsValidDotWithTypeLabelsEdgesAndMatrixClusters) {
  Dag dag(parse_workflow(R"(name: 'my "demo"'
nodes:
  a: {type: step}
  gen: {type: step, matrix: {n: [1, 2]}, inputs: [a]}
  b: {type: step, inputs: [gen]}
)",
                         "wf.yaml", registry()));
  std::string dot = dag.to_dot();
  EXPECT_EQ(dot.rfind("digraph \"my \\\"demo\\\"\" {\n", 0), 0u) << dot;
  EXPECT_NE(dot.find("  \"a\" [label=\"a\\nstep\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph \"cluster_gen\" {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("    \"gen[n=1]\" [label=\"gen[n=1]\\nstep\"];"), std::string::npos) << dot;
  for (const char* edge : {"\"a\" -> \"gen[n=1]\";", "\"a\" -> \"gen[n=2]\";", "\"gen[n=1]\" -> \"b\";",
                           "\"gen[n=2]\" -> \"b\";"})
    EXPECT_NE(dot.find(edge), std::string::npos) << edge << "\n" << dot;
  // Every node is declared once, braces balance, and the document ends the graph.
  EXPECT_EQ(std::count(dot.begin(), dot.end(), '{'), std::count(dot.begin(), dot.end(), '}'));
  std::size_t labels = 0;
  for (std::size_t p = dot.find("[label="); p != std::string::npos; p = dot.find("[label=", p + 1)) ++labels;
  EXPECT_EQ(labels, dag.size());
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

}  // namespace
}  // namespace aispflow
