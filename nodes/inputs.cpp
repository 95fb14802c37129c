#include "nodes/inputs.hpp"

#include <fstream>

namespace aispflow {

kernels::Backend& backend_of(const NodeContext& ctx) {
  auto* backend = dynamic_cast<kernels::Backend*>(ctx.env);
  if (!backend) throw NodeError("this node needs a measurement backend (cpu or cuda), none is active");
  return *backend;
}

json collect_array(const NodeContext& ctx, const std::string& field) {
  json out = json::array();
  for (const auto& input : ctx.inputs) {
    if (!input.artifact) continue;
    const json& data = input.artifact->data();
    if (!data.is_object() || !data.contains(field) || !data[field].is_array()) continue;
    for (json item : data[field]) {
      if (item.is_object() && !item.contains("_from")) item["_from"] = input.node;
      out.push_back(std::move(item));
    }
  }
  return out;
}

void write_output_file(const NodeContext& ctx, const std::string& name, const std::string& text) {
  std::ofstream f(ctx.out_dir / name, std::ios::binary);
  f << text;
  if (!f) throw NodeError("cannot write " + (ctx.out_dir / name).string());
}

}  // namespace aispflow
