// The one place node types are registered. Adding a node type = one file in nodes/ + one line here.
#include "nodes/register_all.hpp"

#include "nodes/node_factories.hpp"

namespace aispflow {

void register_builtin_nodes(Registry& registry) {
  // (each helper adds its line here)
}

}  // namespace aispflow
