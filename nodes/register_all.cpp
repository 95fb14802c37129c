// The one place node types are registered. Adding a node type = one file in nodes/ + one line here.
#include "nodes/register_all.hpp"

#include "kernels/common/gemm_plugin.hpp"
#include "nodes/gemm_sweep.hpp"
#include "nodes/node_factories.hpp"

namespace aispflow {

void register_builtin_nodes(Registry& registry) {
  // (each helper adds its line here)
  registry.add(make_command_node());
  registry.add(make_hello_node());   // the example custom node (examples/custom_node/hello_node.cpp)
  registry.add(make_gemm_shapes_node());
  registry.add(make_peak_node());
  registry.add(make_gemm_sweep_node());
  registry.add(make_kv_cache_node());
  registry.add(make_cost_per_token_node());
  registry.add(make_expect_node());
  registry.add(make_roofline_node());
  registry.add(make_compare_node());
  registry.add(make_alltoall_node());
  registry.add(make_alltoall_compare_node());
  registry.add(make_p2p_node());
  registry.add(make_ncu_node());
  // A workflow's `plugins:` are GEMM provider plugins (docs/plugins.md).
  registry.set_plugin_loader([](const std::filesystem::path& file) {
    kernels::GemmPlugins::instance().add(file, builtin_provider_names());
  });
}

}  // namespace aispflow
