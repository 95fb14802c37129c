#pragma once
// GEMM provider plugins (include/aispflow/provider.h): a shared object a user built, loaded by a workflow's
// `plugins:` list. This header holds what both sides of aispflow need: the loaded provider's identity, which
// the executable hands to the CUDA backend (kernels/cuda/plugin_provider.hpp runs it), and the loader.
//
// A plugin is loaded once per process and never unloaded: its tables must stay valid for as long as any
// provider object may call into it.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "include/aispflow/provider.h"

namespace aispflow::kernels {

// One provider of a loaded plugin.
struct GemmPluginProvider {
  std::string name;                    // the provider's name in `providers:`
  std::filesystem::path plugin_path;   // absolute
  std::string plugin_sha256;           // of the file as it was loaded
  std::string plugin_name;             // the plugin's own name (aispflow_gemm_plugin_v1::name)
  const aispflow_gemm_provider_v1_t* table = nullptr;
  std::vector<std::string> config_names() const;
  // {"path", "sha256", "name"}: the `plugin` field of its records.
  nlohmann::json plugin_json() const;
  // For listings: {"name", "description", "dtypes", "layouts", "epilogues", "configs", "plugin"}.
  nlohmann::json to_json() const;
};

// The dtype / layout / epilogue names of the bits in a provider's masks, in aispflow's spelling.
std::vector<std::string> plugin_dtype_names(std::uint32_t bits);
std::vector<std::string> plugin_layout_names(std::uint32_t bits);
std::vector<std::string> plugin_epilogue_names(std::uint32_t bits);
// The bit of an aispflow name (0 for a name no plugin can declare).
std::uint32_t plugin_dtype_bit(const std::string& dtype);
std::uint32_t plugin_layout_bit(const std::string& layout);
std::uint32_t plugin_epilogue_bit(const std::string& epilogue);

// Opens `file`, finds its entry point, checks the ABI version and every table. Throws std::runtime_error
// naming the file and what is wrong (not loadable, no entry point, another ABI version, a malformed table).
std::vector<GemmPluginProvider> load_gemm_plugin(const std::filesystem::path& file);

// The providers of every plugin this process loaded (through workflows' `plugins:`).
class GemmPlugins {
 public:
  static GemmPlugins& instance();
  // Loads `file` (absolute) unless already loaded; `taken` are names built-in providers use. Throws
  // std::runtime_error (naming the file) on a load error or a provider name that is already taken.
  void add(const std::filesystem::path& file, const std::vector<std::string>& taken);
  // nullptr for a name no loaded plugin provides.
  const GemmPluginProvider* find(const std::string& name) const;
  std::vector<GemmPluginProvider> all() const;
  std::vector<std::string> names() const;

 private:
  GemmPlugins() = default;
  struct State;
  State& state() const;
};

}  // namespace aispflow::kernels
