#pragma once
#include "pipeline/registry.hpp"

namespace aispflow {
// Adds every built-in node type to `registry`. The list lives in register_all.cpp: one line per type.
void register_builtin_nodes(Registry& registry);
}  // namespace aispflow
