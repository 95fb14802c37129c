// A custom node type in one file: the whole pattern for adding your own.
//
//   1. Implement aispflow::NodeType: a name, a paragraph of doc, the params (kind, default, doc) and run().
//   2. Register it with one line in nodes/register_all.cpp:   registry.add(make_hello_node());
//      (plus its factory declaration in nodes/node_factories.hpp).
//
// The engine does the rest: params are type-checked against params() before anything runs, the result
// is cached by content, and `aispflow nodes hello` documents it.
//
//   nodes:
//     greet:
//       type: hello
//       params: {name: GPU, must_contain: "GPU"}
#include <fstream>

#include "nodes/node_factories.hpp"

namespace aispflow {

namespace {

class HelloNode : public NodeType {
 public:
  std::string name() const override { return "hello"; }
  std::string doc() const override {
    return "Example custom node: writes '<greeting>, <name>!' to hello.txt and to its data as `message`. "
           "With `must_contain`, it checks that the message contains that text and, if not, reports "
           "'expectations not met' (the run then exits with code 3), the way a real check node would.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"name", ParamKind::string, "world", false, "who to greet"},
        {"greeting", ParamKind::string, "hello", false, "the greeting word"},
        {"must_contain", ParamKind::string, nullptr, false, "text the message is expected to contain"},
    };
  }

  NodeOutput run(NodeContext& ctx) const override {
    const std::string message =
        ctx.params.at("greeting").get<std::string>() + ", " + ctx.params.at("name").get<std::string>() + "!";
    std::ofstream(ctx.out_dir / "hello.txt") << message << "\n";

    NodeOutput out;
    out.data["message"] = message;
    const json& expected = ctx.params["must_contain"];
    if (expected.is_string()) {
      const bool met = message.find(expected.get<std::string>()) != std::string::npos;
      out.data["expectation"] = {{"must_contain", expected}, {"met", met}};
      if (!met) out.verdict = Verdict::expectations_not_met;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_hello_node() { return std::make_unique<HelloNode>(); }

}  // namespace aispflow
