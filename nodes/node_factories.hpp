#pragma once
// Factory declarations for the built-in node types; each is defined in its own file in nodes/.
#include <memory>

#include "pipeline/node_type.hpp"

namespace aispflow {
std::unique_ptr<NodeType> make_command_node();          // nodes/command.cpp
std::unique_ptr<NodeType> make_hello_node();            // examples/custom_node/hello_node.cpp
std::unique_ptr<NodeType> make_gemm_shapes_node();      // nodes/gemm_shapes.cpp
std::unique_ptr<NodeType> make_peak_node();             // nodes/peak.cpp
std::unique_ptr<NodeType> make_gemm_sweep_node();       // nodes/gemm_sweep.cpp
std::unique_ptr<NodeType> make_kv_cache_node();         // nodes/kv_cache.cpp
std::unique_ptr<NodeType> make_cost_per_token_node();   // nodes/cost_per_token.cpp
std::unique_ptr<NodeType> make_expect_node();           // nodes/expect.cpp
std::unique_ptr<NodeType> make_roofline_node();         // nodes/roofline.cpp
std::unique_ptr<NodeType> make_compare_node();          // nodes/compare.cpp
std::unique_ptr<NodeType> make_alltoall_node();         // nodes/alltoall.cpp
std::unique_ptr<NodeType> make_alltoall_compare_node(); // nodes/alltoall_compare.cpp
std::unique_ptr<NodeType> make_p2p_node();              // nodes/p2p.cpp
std::unique_ptr<NodeType> make_ncu_node();              // nodes/ncu.cpp
}  // namespace aispflow
