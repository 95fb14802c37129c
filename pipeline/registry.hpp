#pragma once
// Node type name -> implementation. Built-in types are added in nodes/register_all.cpp (one line each).
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/node_type.hpp"

namespace aispflow {

class Registry {
 public:
  void add(std::unique_ptr<NodeType> type);              // throws std::logic_error on a duplicate name
  const NodeType* find(const std::string& name) const;   // nullptr if unknown
  std::vector<const NodeType*> all() const;               // sorted by name
  // The registered name closest to `name` (edit distance), for "did you mean" hints; empty if none close.
  std::string nearest(const std::string& name) const;

  // Loads one entry of a workflow's `plugins:` list (an absolute path) into the process; throws std::exception
  // whose message names the file and the problem. nodes/register_all.cpp installs the GEMM provider plugin loader
  // (kernels/common/gemm_plugin.hpp); the engine itself knows nothing of what a plugin holds.
  using PluginLoader = std::function<void(const std::filesystem::path&)>;
  void set_plugin_loader(PluginLoader loader) { plugin_loader_ = std::move(loader); }
  const PluginLoader& plugin_loader() const { return plugin_loader_; }

 private:
  std::map<std::string, std::unique_ptr<NodeType>> types_;
  PluginLoader plugin_loader_;
};

// Edit distance, shared by every "did you mean" hint (node types, params, node names).
std::size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word`, if it is close enough to be a plausible typo; else empty.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace aispflow
