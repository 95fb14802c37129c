#pragma once
// Where and how nodes run under `--executor slurm`: the workflow's `executor: {slurm: ...}` section or a
// profile file (`--executor-profile FILE`, the same map). Settings apply in layers -- the section's own
// fields, then `types: {TYPE: ...}`, then `nodes: {NAME: ...}` (declared or instance name) -- each field
// overriding the one before. docs/slurm.md describes every field.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::slurm {

// One layer; unset fields leave the layer below in place.
struct Settings {
  std::optional<std::string> where;        // "slurm" | "local"; default: hardware-bound nodes go to Slurm
  std::optional<std::string> partition, account, qos, time, mem;
  std::optional<int> cpus;                 // --cpus-per-task
  std::optional<int> ntasks, num_nodes;    // --ntasks, --nodes: an allocation for ranks (alltoall launch: srun)
  std::optional<bool> exclusive;           // --exclusive (the whole compute node)
  std::optional<std::vector<std::string>> sbatch_args;
  void overlay(const Settings& above);
};

struct Profile {
  Settings defaults;
  std::map<std::string, Settings> types, nodes;
  double poll_interval_s = 0.5;            // how often one squeue asks about every job in flight
  std::string source;                      // the file it came from (messages)

  // The settings for one node: defaults, then its type, then its declared name, then its instance name.
  Settings for_node(const std::string& instance, const std::string& declared, const std::string& type) const;
};

// Reads the `slurm:` map from `file`: under `executor:` in a workflow, or at the top (or under
// `executor:`) in a profile file. A file without one gives an empty profile. Throws InputError naming
// file:line:column and the field for anything malformed or unknown.
Profile load_profile(const std::filesystem::path& file);

}  // namespace aispflow::slurm
