#pragma once
// Helpers every analysis node shares: reaching the backend, and collecting the documents its inputs
// produced. Artifact data conventions (docs/records.md):
//   gemm_shapes -> {"shapes": [{name,m,n,k,batch?,...}]}
//   peak        -> {"ceilings": [Ceiling...], "env": {...}}
//   gemm_sweep  -> {"records": [record...], "env": {...}}
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"
#include "pipeline/node_type.hpp"

namespace aispflow {

kernels::Backend& backend_of(const NodeContext& ctx);   // throws NodeError if the env is not a Backend

// Concatenates the array `field` of every input artifact that has it, in input order.
// Each element gets "_from": the input node's name, unless it already has one.
json collect_array(const NodeContext& ctx, const std::string& field);
inline json collect_records(const NodeContext& ctx) { return collect_array(ctx, "records"); }
inline json collect_ceilings(const NodeContext& ctx) { return collect_array(ctx, "ceilings"); }
inline json collect_shapes(const NodeContext& ctx) { return collect_array(ctx, "shapes"); }

// Writes `text` to ctx.out_dir / name (for files that join the artifact).
void write_output_file(const NodeContext& ctx, const std::string& name, const std::string& text);

}  // namespace aispflow
