#pragma once
// The expanded workflow as a Boost.Graph DAG: edge u -> v when v reads u (inputs or ${refs}).
#include <string>
#include <vector>

#include "pipeline/workflow.hpp"

namespace aispflow {

struct Selection {
  std::vector<std::string> only;    // these nodes alone (declared or instance names)
  std::vector<std::string> from;    // these and everything downstream of them
  std::vector<std::string> until;   // these and everything upstream of them
  bool empty() const { return only.empty() && from.empty() && until.empty(); }
};

class Dag {
 public:
  // Throws InputError on a cycle, printed as the path "a -> b -> a" with the file:line of each node,
  // or on an input/ref naming an unknown node (with the nearest name as a hint).
  explicit Dag(const Workflow& workflow);
  // Takes the nodes instead of copying them (a thousand-node workflow's params are worth not copying).
  explicit Dag(Workflow&& workflow);

  std::size_t size() const;
  const NodeDecl& node(std::size_t i) const;
  std::size_t index_of(const std::string& instance_name) const;     // throws std::out_of_range
  // Instances a declared or instance name stands for ("per_size" -> its 3 instances).
  std::vector<std::size_t> resolve(const std::string& name) const;
  const std::vector<std::size_t>& topological_order() const;         // upstream first
  std::vector<std::size_t> predecessors(std::size_t i) const;
  std::vector<std::size_t> successors(std::size_t i) const;
  // Selected node indices, in topological order. Unknown names throw InputError. Intersection when
  // several kinds are given (--from a --until b = the nodes between).
  std::vector<std::size_t> select(const Selection& selection) const;
  std::string to_dot() const;    // Graphviz; node labels carry the type

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace aispflow
