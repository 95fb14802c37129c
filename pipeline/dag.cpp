// The expanded workflow as a Boost.Graph DAG. Vertex i is workflow.nodes[i]; edge u -> v means v reads
// u's artifact (through `inputs` or a ${u.field} reference).
#include "pipeline/dag.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace aispflow {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

struct Dag::Impl {
  std::string workflow_name;
  std::vector<NodeDecl> nodes;
  Graph graph;
  std::unordered_map<std::string, std::size_t> by_instance;
  std::map<std::string, std::vector<std::size_t>> by_declared;  // declared name -> its instances
  std::vector<std::size_t> topo;

  std::vector<std::size_t> resolve(const std::string& name) const {
    if (auto it = by_instance.find(name); it != by_instance.end()) {
      // A node without a matrix has one name for both; an expanded one's declared name lists them all.
      if (auto d = by_declared.find(name); d != by_declared.end()) return d->second;
      return {it->second};
    }
    if (auto d = by_declared.find(name); d != by_declared.end()) return d->second;
    return {};
  }

  const std::string& declared_of(std::size_t i) const {
    return nodes[i].declared_name.empty() ? nodes[i].name : nodes[i].declared_name;
  }

  std::vector<std::string> declared_names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : by_declared) out.push_back(name);
    return out;
  }

  std::string unknown_hint(const std::string& name) const {
    std::vector<std::string> candidates = declared_names();
    for (const auto& n : nodes) candidates.push_back(n.name);
    std::string best = closest_match(name, candidates);
    return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
  }
};

namespace {

// Records the DFS tree and stops at the first back edge, which closes a cycle.
struct CycleFinder : boost::default_dfs_visitor {
  std::vector<Vertex>* parent;
  std::vector<Vertex>* cycle;
  struct Found {};

  void tree_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    // The back edge u -> v closes the tree path v -> ... -> u.
    Vertex u = boost::source(e, g), v = boost::target(e, g);
    for (Vertex x = u; x != v; x = (*parent)[x]) cycle->push_back(x);
    cycle->push_back(v);
    std::reverse(cycle->begin(), cycle->end());
    throw Found{};
  }
};

std::vector<std::size_t> find_cycle(const Graph& g) {
  std::vector<Vertex> parent(boost::num_vertices(g));
  std::vector<Vertex> cycle;
  CycleFinder finder;
  finder.parent = &parent;
  finder.cycle = &cycle;
  try {
    boost::depth_first_search(g, boost::visitor(finder));
  } catch (const CycleFinder::Found&) {
  }
  // Start the printed cycle at the node that comes first in the file, so the message is stable.
  auto first = std::min_element(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), first, cycle.end());
  return {cycle.begin(), cycle.end()};
}

// Kahn's algorithm, always taking the ready node that comes first in the file: independent nodes keep
// their file order, which makes plans, logs and reports stable from run to run.
std::vector<std::size_t> stable_topological_order(const Graph& g) {
  const std::size_t n = boost::num_vertices(g);
  std::vector<std::size_t> waiting(n);
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = boost::in_degree(v, g);
    if (waiting[v] == 0) ready.push(v);
  }
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    std::size_t u = ready.top();
    ready.pop();
    order.push_back(u);
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      std::size_t v = boost::target(*e, g);
      if (--waiting[v] == 0) ready.push(v);
    }
  }
  return order;
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

}  // namespace

Dag::Dag(const Workflow& workflow) : Dag(Workflow(workflow)) {}

Dag::Dag(Workflow&& workflow) {
  auto impl = std::make_shared<Impl>();
  impl->workflow_name = workflow.name;
  impl->nodes = std::move(workflow.nodes);
  const auto& nodes = impl->nodes;
  impl->graph = Graph(nodes.size());

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!impl->by_instance.emplace(nodes[i].name, i).second)
      throw InputError(nodes[i].loc, nodes[i].name, "", "duplicate node name");
    impl->by_declared[impl->declared_of(i)].push_back(i);
  }

  // Edges, once per pair however many inputs and references connect it.
  std::set<std::pair<std::size_t, std::size_t>> edges;
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    const NodeDecl& n = nodes[v];
    auto connect = [&](const std::string& upstream, const SourceLoc& where, const std::string& field,
                       const std::string& what) {
      std::vector<std::size_t> sources = impl->resolve(upstream);
      if (sources.empty())
        throw InputError(where, n.name, field,
                         what + "unknown node '" + upstream + "'" + impl->unknown_hint(upstream));
      for (std::size_t u : sources) {
        if (u == v) throw InputError(where, n.name, field, what + "a node cannot depend on itself");
        if (edges.emplace(u, v).second) boost::add_edge(u, v, impl->graph);
      }
    };
    for (const auto& in : n.inputs) connect(in.node, in.loc, "inputs", "");
    for (const auto& ref : n.refs)
      connect(ref.node, ref.loc, "params", "${" + ref.node + "." + ref.field_path + "}: ");
  }

  std::vector<std::size_t> cycle = find_cycle(impl->graph);
  if (!cycle.empty()) {
    std::string path, places;
    for (std::size_t i : cycle) {
      path += nodes[i].name + " → ";
      places += (places.empty() ? "" : ", ") + nodes[i].name + " at " + nodes[i].loc.str();
    }
    path += nodes[cycle.front()].name;
    throw InputError(nodes[cycle.front()].loc, "", "",
                     "the workflow has a cycle: " + path + " (" + places + ")");
  }
  impl->topo = stable_topological_order(impl->graph);
  impl_ = std::move(impl);
}

std::size_t Dag::size() const { return impl_->nodes.size(); }

const NodeDecl& Dag::node(std::size_t i) const { return impl_->nodes.at(i); }

std::size_t Dag::index_of(const std::string& instance_name) const {
  auto it = impl_->by_instance.find(instance_name);
  if (it == impl_->by_instance.end()) throw std::out_of_range("no node named '" + instance_name + "'");
  return it->second;
}

std::vector<std::size_t> Dag::resolve(const std::string& name) const { return impl_->resolve(name); }

const std::vector<std::size_t>& Dag::topological_order() const { return impl_->topo; }

std::vector<std::size_t> Dag::predecessors(std::size_t i) const {
  std::vector<std::size_t> out;
  for (auto [e, end] = boost::in_edges(i, impl_->graph); e != end; ++e)
    out.push_back(boost::source(*e, impl_->graph));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> Dag::successors(std::size_t i) const {
  std::vector<std::size_t> out;
  for (auto [e, end] = boost::out_edges(i, impl_->graph); e != end; ++e)
    out.push_back(boost::target(*e, impl_->graph));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> Dag::select(const Selection& selection) const {
  const std::size_t n = size();
  std::vector<bool> chosen(n, true);

  // The nodes reachable from `names` (themselves included), following `next`.
  auto closure = [&](const std::vector<std::string>& names, const std::string& option,
                     const std::function<std::vector<std::size_t>(std::size_t)>& next) {
    std::vector<bool> reached(n, false);
    std::vector<std::size_t> stack;
    for (const auto& name : names) {
      std::vector<std::size_t> start = resolve(name);
      if (start.empty())
        throw InputError(SourceLoc{"<command line>", 0, 0}, "", "",
                         option + " '" + name + "': unknown node" + impl_->unknown_hint(name));
      stack.insert(stack.end(), start.begin(), start.end());
    }
    while (!stack.empty()) {
      std::size_t u = stack.back();
      stack.pop_back();
      if (reached[u]) continue;
      reached[u] = true;
      if (next)
        for (std::size_t v : next(u)) stack.push_back(v);
    }
    return reached;
  };
  auto intersect = [&](const std::vector<bool>& mask) {
    for (std::size_t i = 0; i < n; ++i) chosen[i] = chosen[i] && mask[i];
  };

  if (!selection.only.empty()) intersect(closure(selection.only, "--only", nullptr));
  if (!selection.from.empty())
    intersect(closure(selection.from, "--from", [&](std::size_t u) { return successors(u); }));
  if (!selection.until.empty())
    intersect(closure(selection.until, "--until", [&](std::size_t u) { return predecessors(u); }));

  std::vector<std::size_t> out;
  for (std::size_t i : impl_->topo)
    if (chosen[i]) out.push_back(i);
  return out;
}

std::string Dag::to_dot() const {
  const auto& nodes = impl_->nodes;
  std::ostringstream dot;
  dot << "digraph " << dot_quote(impl_->workflow_name) << " {\n";
  dot << "  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  auto vertex = [&](std::size_t i, const char* indent) {
    dot << indent << dot_quote(nodes[i].name) << " [label=" << dot_quote(nodes[i].name + "\n" + nodes[i].type)
        << "];\n";
  };
  // Instances of one matrix declaration are drawn together in a box labelled with the declared name.
  for (const auto& [declared, instances] : impl_->by_declared) {
    const bool expanded = instances.size() > 1 || nodes[instances.front()].name != declared;
    if (!expanded) continue;
    dot << "  subgraph " << dot_quote("cluster_" + declared) << " {\n    label=" << dot_quote(declared)
        << ";\n";
    for (std::size_t i : instances) vertex(i, "    ");
    dot << "  }\n";
  }
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (impl_->resolve(nodes[i].name).size() == 1 && nodes[i].name == impl_->declared_of(i)) vertex(i, "  ");
  for (auto [e, end] = boost::edges(impl_->graph); e != end; ++e)
    dot << "  " << dot_quote(nodes[boost::source(*e, impl_->graph)].name) << " -> "
        << dot_quote(nodes[boost::target(*e, impl_->graph)].name) << ";\n";
  dot << "}\n";
  return dot.str();
}

}  // namespace aispflow
