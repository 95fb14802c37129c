#pragma once
// Factory declarations for the built-in node types; each is defined in its own file in nodes/.
#include <memory>

#include "pipeline/node_type.hpp"

namespace aispflow {
}  // namespace aispflow
