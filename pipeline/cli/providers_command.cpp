// `aispflow providers [FILE...]`: the GEMM providers a sweep can name. Built-in ones, then those of the plugins
// given (a .so) or of the workflows given (their `plugins:` list), with what each plugin provider offers.
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/common/gemm_plugin.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "nodes/register_all.hpp"
#include "pipeline/cli/commands.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow::cli {

namespace {

bool is_workflow(const std::string& file) {
  auto ends = [&](const std::string& s) { return file.size() >= s.size() && file.compare(file.size() - s.size(), s.size(), s) == 0; };
  return ends(".yaml") || ends(".yml");
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

}  // namespace

int providers_command(const std::vector<std::string>& files, bool as_json) {
  Registry registry;
  register_builtin_nodes(registry);
  for (const auto& file : files) {
    if (is_workflow(file)) {
      (void)load_workflow(file, registry);   // loads its plugins (errors name the workflow's line and the plugin)
      continue;
    }
    try {
      registry.plugin_loader()(std::filesystem::absolute(file));
    } catch (const std::exception& e) {
      throw InputError(SourceLoc{"<command line>", 0, 0}, "", "plugin", e.what());
    }
  }
  const auto plugins = kernels::GemmPlugins::instance().all();
  const auto cpu = kernels::cpu_provider_names();
  const auto& gpu = kernels::gpu_provider_names();
  if (as_json) {
    json out = {{"cpu", cpu}, {"gpu", gpu}, {"plugins", json::array()}};
    for (const auto& p : plugins) out["plugins"].push_back(p.to_json());
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("built in, CPU: %s\nbuilt in, GPU: %s\n", joined(cpu).c_str(), joined(gpu).c_str());
  if (plugins.empty()) {
    std::printf("\nno plugin providers (give plugin files or workflows with `plugins:`)\n");
    return kExitOk;
  }
  for (const auto& p : plugins) {
    std::printf("\n%s  %s\n", p.name.c_str(), p.table->description ? p.table->description : "");
    std::printf("  dtypes: %s; layouts: %s; epilogues: %s\n", joined(kernels::plugin_dtype_names(p.table->dtypes)).c_str(),
                joined(kernels::plugin_layout_names(p.table->layouts)).c_str(),
                joined(kernels::plugin_epilogue_names(p.table->epilogues)).c_str());
    std::printf("  configurations (%zu): %s\n", p.config_names().size(), joined(p.config_names()).c_str());
    std::printf("  plugin: %s (%s), sha256 %s\n", p.plugin_path.c_str(), p.plugin_name.c_str(), p.plugin_sha256.c_str());
  }
  return kExitOk;
}

}  // namespace aispflow::cli
