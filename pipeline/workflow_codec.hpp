#pragma once
// A parsed Workflow as compact bytes, for the parsed-workflow cache (pipeline/cli/workflow_cache.hpp).
// A fully cached `aispflow run` of a thousand nodes reads this on every start, so it is a flat
// length-prefixed record stream rather than JSON: no tree of a few thousand small objects is built
// just to be copied into NodeDecls. Only params and matrix values stay JSON (they are JSON in NodeDecl).
// The bytes are private to one build (native byte order, no compatibility promise): the cache keys
// them by build id.
#include <string>
#include <string_view>

#include "pipeline/workflow.hpp"

namespace aispflow {

std::string encode_workflow(const Workflow& workflow);
// Throws std::runtime_error on bytes that encode_workflow() of this build did not write.
Workflow decode_workflow(std::string_view bytes);

}  // namespace aispflow
