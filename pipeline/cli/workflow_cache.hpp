#pragma once
// Parsed workflows, cached. yaml-cpp needs ~80 ms for a 1,000-node workflow, longer than everything else
// a fully cached `aispflow run` does, so `run` and `explain` keep the parsed (valid) Workflow, encoded by
// pipeline/workflow_codec.hpp, in <cache>/workflows/, keyed by the file's bytes, its path, the --set
// overrides, the registered node types' schemas and this build. Any change to one of those parses the
// YAML again, with full validation.
#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/registry.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow::cli {

Workflow load_workflow_cached(const std::filesystem::path& file, const Registry& registry,
                              const std::vector<std::string>& overrides, const std::filesystem::path& cache_root);

}  // namespace aispflow::cli
