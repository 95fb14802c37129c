#include "pipeline/cli/slurm_launch.hpp"

#include <unistd.h>

#include "pipeline/slurm/launcher.hpp"

namespace aispflow::cli {

namespace fs = std::filesystem;

namespace {

// The jobs run this very binary: its absolute path (on the filesystem the compute nodes share).
fs::path this_executable() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this program's path (/proc/self/exe): " + ec.message());
  return self;
}

void check_names(const slurm::Profile& profile, const Dag& dag, const Registry& registry) {
  for (const auto& [type, _] : profile.types)
    if (!registry.find(type))
      throw InputError(SourceLoc{profile.source, 0, 0}, "", "executor.slurm.types." + type,
                       "unknown node type '" + type + "'" +
                           (registry.nearest(type).empty() ? "" : " (did you mean '" + registry.nearest(type) + "'?)"));
  for (const auto& [node, _] : profile.nodes)
    if (dag.resolve(node).empty())
      throw InputError(SourceLoc{profile.source, 0, 0}, "", "executor.slurm.nodes." + node,
                       "no node '" + node + "' in the workflow");
}

}  // namespace

std::unique_ptr<RemoteLauncher> make_remote_launcher(const RunArgs& args, const Dag& dag, const Registry& registry,
                                                     const fs::path& cache_dir, const std::atomic<bool>* cancel,
                                                     RunObserver* observer) {
  if (args.executor != "slurm")
    throw InputError(SourceLoc{"<command line>", 0, 0}, "", "--executor",
                     "unknown executor '" + args.executor + "' (expected local or slurm)");
  if (args.no_cache)
    throw InputError(SourceLoc{"<command line>", 0, 0}, "", "--no-cache",
                     "--executor slurm passes artifacts through the shared cache; it cannot run with --no-cache");
  slurm::LauncherOptions options;
  options.profile = slurm::load_profile(args.executor_profile.empty() ? fs::path(args.file) : fs::path(args.executor_profile));
  check_names(options.profile, dag, registry);
  options.cache_root = fs::absolute(cache_dir);
  options.executable = this_executable();
  options.backend = args.backend;
  options.cancel = cancel;
  options.observer = observer;
  return std::make_unique<slurm::Launcher>(std::move(options));
}

}  // namespace aispflow::cli
