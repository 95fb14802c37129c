#pragma once
// The compute-node side of the Slurm launcher: `aispflow run-node REQUEST` runs one node from its
// request file (pipeline/slurm/job_record.hpp). It computes the node's cache key itself -- with this
// machine's environment fingerprint for hardware-bound types, never the driver's -- takes a cache hit
// if there is one, otherwise runs the node (under the measurement lock when it is exclusive), stores the
// artifact in the shared cache atomically, and writes result.json beside the request.
#include <filesystem>

#include "pipeline/executor.hpp"
#include "pipeline/registry.hpp"

namespace aispflow::slurm {

// Returns the process's exit code: 0 when the node ran, was cached or was skipped; 1 when it failed
// (Slurm then shows the job FAILED); 2 when the request cannot be read (no result is written).
int run_node_job(const std::filesystem::path& request_file, const std::filesystem::path& cache_root,
                 const Registry& registry, EnvironmentSource& env);

}  // namespace aispflow::slurm
