#pragma once
// `--executor slurm` for `aispflow run`: the Slurm launcher built from the workflow's `executor:` section
// or a profile file, its node and type names checked against the workflow and the registry.
#include <atomic>
#include <memory>

#include "pipeline/cli/commands.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/slurm/job.hpp"

namespace aispflow::cli {

// Throws InputError for an unknown executor, a bad profile, or a cluster that cannot be used.
std::unique_ptr<RemoteLauncher> make_remote_launcher(const RunArgs& args, const Dag& dag, const Registry& registry,
                                                     const std::filesystem::path& cache_dir,
                                                     const std::atomic<bool>* cancel, RunObserver* observer);

using slurm::run_node_job;

}  // namespace aispflow::cli
