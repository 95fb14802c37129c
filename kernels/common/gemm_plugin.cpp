#include "kernels/common/gemm_plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kernels/common/sha256.hpp"

namespace aispflow::kernels {

namespace fs = std::filesystem;

namespace {

struct Named {
  std::uint32_t bit;
  const char* name;
};
constexpr Named kDtypes[] = {{AISPFLOW_DTYPE_FP32, "fp32"},
                             {AISPFLOW_DTYPE_TF32, "tf32"},
                             {AISPFLOW_DTYPE_FP16, "fp16"},
                             {AISPFLOW_DTYPE_BF16, "bf16"},
                             {AISPFLOW_DTYPE_FP8_E4M3, "fp8_e4m3"}};
constexpr Named kLayouts[] = {{AISPFLOW_LAYOUT_NN, "nn"}, {AISPFLOW_LAYOUT_NT, "nt"}};
constexpr Named kEpilogues[] = {
    {AISPFLOW_EPILOGUE_NONE, "none"}, {AISPFLOW_EPILOGUE_BIAS, "bias"}, {AISPFLOW_EPILOGUE_BIAS_GELU, "bias_gelu"}};

template <std::size_t N>
std::vector<std::string> names_of(const Named (&table)[N], std::uint32_t bits) {
  std::vector<std::string> out;
  for (const auto& t : table)
    if (bits & t.bit) out.emplace_back(t.name);
  return out;
}

template <std::size_t N>
std::uint32_t bit_of(const Named (&table)[N], const std::string& name) {
  for (const auto& t : table)
    if (name == t.name) return t.bit;
  return 0;
}

template <std::size_t N>
std::uint32_t all_bits(const Named (&table)[N]) {
  std::uint32_t bits = 0;
  for (const auto& t : table) bits |= t.bit;
  return bits;
}

bool valid_name(const char* name) {
  if (!name || !*name) return false;
  for (const char* p = name; *p; ++p) {
    const char c = *p;
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

// What is wrong with one provider table, or "".
std::string table_problem(const aispflow_gemm_provider_v1_t& p) {
  if (!valid_name(p.name)) return "a provider name must be letters, digits, '.', '_' or '-'";
  const std::string who = "provider '" + std::string(p.name) + "': ";
  if (!p.run) return who + "run is NULL";
  if (p.dtypes == 0 || (p.dtypes & ~all_bits(kDtypes))) return who + "dtypes must be AISPFLOW_DTYPE_* bits, at least one";
  if (p.layouts == 0 || (p.layouts & ~all_bits(kLayouts))) return who + "layouts must be AISPFLOW_LAYOUT_* bits, at least one";
  if (p.epilogues == 0 || (p.epilogues & ~all_bits(kEpilogues)))
    return who + "epilogues must be AISPFLOW_EPILOGUE_* bits, at least one";
  if (p.config_count < 1 || !p.config_names) return who + "needs at least one named configuration";
  for (int i = 0; i < p.config_count; ++i)
    if (!p.config_names[i] || !*p.config_names[i]) return who + "configuration " + std::to_string(i) + " has no name";
  return {};
}

}  // namespace

std::vector<std::string> plugin_dtype_names(std::uint32_t bits) { return names_of(kDtypes, bits); }
std::vector<std::string> plugin_layout_names(std::uint32_t bits) { return names_of(kLayouts, bits); }
std::vector<std::string> plugin_epilogue_names(std::uint32_t bits) { return names_of(kEpilogues, bits); }
std::uint32_t plugin_dtype_bit(const std::string& dtype) { return bit_of(kDtypes, dtype); }
std::uint32_t plugin_layout_bit(const std::string& layout) { return bit_of(kLayouts, layout); }
std::uint32_t plugin_epilogue_bit(const std::string& epilogue) { return bit_of(kEpilogues, epilogue); }

std::vector<std::string> GemmPluginProvider::config_names() const {
  std::vector<std::string> out;
  for (int i = 0; i < table->config_count; ++i) out.emplace_back(table->config_names[i]);
  return out;
}

nlohmann::json GemmPluginProvider::plugin_json() const {
  return {{"path", plugin_path.string()}, {"sha256", plugin_sha256}, {"name", plugin_name}};
}

nlohmann::json GemmPluginProvider::to_json() const {
  return {{"name", name},
          {"description", table->description ? table->description : ""},
          {"dtypes", plugin_dtype_names(table->dtypes)},
          {"layouts", plugin_layout_names(table->layouts)},
          {"epilogues", plugin_epilogue_names(table->epilogues)},
          {"configs", config_names()},
          {"plugin", plugin_json()}};
}

std::vector<GemmPluginProvider> load_gemm_plugin(const fs::path& file) {
  const std::string where = "plugin '" + file.string() + "'";
  std::error_code ec;
  if (!fs::exists(file, ec)) throw std::runtime_error(where + ": no such file");
  if (!fs::is_regular_file(file, ec)) throw std::runtime_error(where + ": not a regular file");
  // Hash first: the digest names exactly the bytes that were loaded (a rebuild between the two would be caught
  // by the next run, whose digest differs).
  const std::string sha = sha256_file(file);
  // RTLD_LOCAL: the plugin's symbols never satisfy another module's. The path must contain a '/', or dlopen
  // would search the library path instead of opening this file.
  const fs::path absolute = fs::absolute(file, ec).lexically_normal();
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    throw std::runtime_error(where + " cannot be loaded: " + (error ? error : "dlopen failed"));
  }
  auto entry = reinterpret_cast<aispflow_gemm_plugin_v1_fn_t>(dlsym(handle, AISPFLOW_GEMM_PLUGIN_SYMBOL_V1));
  if (!entry) {
    // A plugin for a newer ABI exports aispflow_gemm_plugin_vN with N > 1: say so rather than "missing".
    for (int v = 9; v >= 2; --v) {
      const std::string symbol = "aispflow_gemm_plugin_v" + std::to_string(v);
      if (dlsym(handle, symbol.c_str()))
        throw std::runtime_error(where + " implements plugin ABI v" + std::to_string(v) + " (" + symbol +
                                 "); this aispflow loads ABI v" + std::to_string(AISPFLOW_GEMM_PLUGIN_ABI_VERSION) +
                                 " (" AISPFLOW_GEMM_PLUGIN_SYMBOL_V1 ")");
    }
    throw std::runtime_error(where + " exports no entry point " AISPFLOW_GEMM_PLUGIN_SYMBOL_V1
                             " (see include/aispflow/provider.h)");
  }
  const aispflow_gemm_plugin_v1_t* plugin = entry();
  if (!plugin) throw std::runtime_error(where + ": " AISPFLOW_GEMM_PLUGIN_SYMBOL_V1 "() returned NULL");
  if (plugin->abi_version != AISPFLOW_GEMM_PLUGIN_ABI_VERSION)
    throw std::runtime_error(where + " says abi_version " + std::to_string(plugin->abi_version) + " from its " +
                             AISPFLOW_GEMM_PLUGIN_SYMBOL_V1 " entry point; expected " +
                             std::to_string(AISPFLOW_GEMM_PLUGIN_ABI_VERSION) +
                             " (built against another include/aispflow/provider.h?)");
  if (plugin->provider_count < 1 || !plugin->providers)
    throw std::runtime_error(where + " offers no provider (provider_count " + std::to_string(plugin->provider_count) +
                             ")");
  std::vector<GemmPluginProvider> out;
  for (int i = 0; i < plugin->provider_count; ++i) {
    const aispflow_gemm_provider_v1_t& p = plugin->providers[i];
    if (const std::string problem = table_problem(p); !problem.empty())
      throw std::runtime_error(where + ", provider #" + std::to_string(i) + ": " + problem);
    for (const auto& seen : out)
      if (seen.name == p.name) throw std::runtime_error(where + " offers provider '" + seen.name + "' twice");
    out.push_back({p.name, absolute, sha, plugin->name ? plugin->name : absolute.filename().string(), &p});
  }
  return out;
}

struct GemmPlugins::State {
  mutable std::mutex mutex;
  std::map<std::string, GemmPluginProvider> by_name;
  std::map<fs::path, std::string> loaded;   // path -> sha256
};

GemmPlugins::State& GemmPlugins::state() const {
  static State s;
  return s;
}

GemmPlugins& GemmPlugins::instance() {
  static GemmPlugins plugins;
  return plugins;
}

void GemmPlugins::add(const fs::path& file, const std::vector<std::string>& taken) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec).lexically_normal();
  if (s.loaded.count(absolute)) return;
  auto providers = load_gemm_plugin(absolute);
  for (const auto& p : providers) {
    if (std::find(taken.begin(), taken.end(), p.name) != taken.end())
      throw std::runtime_error("plugin '" + absolute.string() + "' offers provider '" + p.name +
                               "', a name aispflow's own providers use; rename it");
    if (auto it = s.by_name.find(p.name); it != s.by_name.end())
      throw std::runtime_error("plugin '" + absolute.string() + "' offers provider '" + p.name + "', which plugin '" +
                               it->second.plugin_path.string() + "' already offers");
  }
  s.loaded[absolute] = providers.empty() ? std::string() : providers.front().plugin_sha256;
  for (auto& p : providers) s.by_name.emplace(p.name, std::move(p));
}

const GemmPluginProvider* GemmPlugins::find(const std::string& name) const {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.by_name.find(name);
  return it == s.by_name.end() ? nullptr : &it->second;
}

std::vector<GemmPluginProvider> GemmPlugins::all() const {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::vector<GemmPluginProvider> out;
  for (const auto& [_, p] : s.by_name) out.push_back(p);
  return out;
}

std::vector<std::string> GemmPlugins::names() const {
  std::vector<std::string> out;
  for (const auto& p : all()) out.push_back(p.name);
  return out;
}

}  // namespace aispflow::kernels
