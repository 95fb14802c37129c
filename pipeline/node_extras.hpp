#pragma once
// Optional capabilities of a node type beyond pipeline/node_type.hpp, for the few types that need them.
#include <stdexcept>
#include <string>

#include "pipeline/artifact.hpp"

namespace aispflow {

// Thrown by a node's run() when it finds, only once it runs, that this machine cannot do its work (an external
// tool is missing, or the user may not use it): the node is skipped with the message as its reason, as a node
// whose requirements are unmet is, and nothing is cached, so the next run tries again.
class NodeSkipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A node type that also implements this (besides NodeType) names facts outside its params and inputs that its
// output depends on, e.g. the version of an external tool it runs and the metric set it asks that tool for:
// {"ncu_version": "2025.2.1.0", "metric_set": "roofline/2"}. They join the cache key under environment.node, so a
// change re-runs the node and the reason names it ("environment changed: node.ncu_version 2025.1.0 → 2025.2.1").
// Asked only when the node is not skipped for unmet requirements; may throw (the node then fails with the message).
class EnvironmentFacts {
 public:
  virtual ~EnvironmentFacts() = default;
  virtual json environment_facts(const json& params) const = 0;
};

}  // namespace aispflow
