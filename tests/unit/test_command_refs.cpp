// Whole runs of the real `command` node, in process: upstream bytes reach a downstream command exactly, in
// every shell context a reference can stand in and through $AISPFLOW_REF_..., and never run; places that
// cannot be made safe refuse the workflow when it is loaded, naming file, line and reference.
// (tests/unit/test_shell_quote.cpp covers the lexer against /bin/sh and bash with thousands of payloads.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "nodes/node_factories.hpp"
#include "pipeline/cache.hpp"
#include "pipeline/dag.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/workflow.hpp"
#include "support/text_files.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;
using test::read_file;

// Emits the content of a file as {"text": ...}: upstream data of any size and content.
class EmitNode : public NodeType {
 public:
  std::string name() const override { return "emit"; }
  std::string doc() const override { return "test: a file's text as data"; }
  std::vector<ParamSpec> params() const override { return {{"file", ParamKind::path, nullptr, true, "file"}}; }
  NodeOutput run(NodeContext& ctx) const override {
    NodeOutput out;
    out.data = {{"text", read_file(ctx.resolve(ctx.params["file"].get<std::string>()))}};
    return out;
  }
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    reg.add(make_command_node());
    reg.add(std::make_unique<EmitNode>());
    return reg;
  }();
  return r;
}

class NoMachine : public Environment {
 public:
  std::string backend_name() const override { return "none"; }
  json fingerprint() const override { return json::object(); }
  int resource_total(const std::string&) const override { return 0; }
  std::optional<std::string> unmet(const Requirements&) const override { return std::nullopt; }
};

// "a\nb" -> "      a\n      b\n": a YAML block scalar's lines.
std::string indented(const std::string& text, const std::string& pad) {
  std::string out = pad;
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out + "\n";
}

// UTF-8 text holding every code point 1..255 (artifact data is JSON, so upstream text is UTF-8).
std::string every_byte_as_text() {
  std::string out;
  for (int c = 1; c < 256; ++c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

class CommandRefs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-command-refs-" + std::to_string(rd()));
    fs::create_directories(dir_);
    canary_ = dir_ / "CANARY";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Workflow load(const std::string& yaml) { return parse_workflow(yaml, dir_ / "wf.yaml", registry()); }
  RunSummary run(const Workflow& wf) {
    Dag dag(wf);
    Cache cache(dir_ / "cache");
    NoMachine machine;
    EnvironmentSource env(machine);
    Executor executor(wf, dag, registry(), env, &cache);
    ExecOptions options;
    options.jobs = 2;
    options.out_dir = dir_ / "out";
    return executor.run(options);
  }
  std::string hostile(const std::string& shape) const {  // "touch CANARY" wrapped in `shape`'s quoting
    std::string out = shape;
    const std::string cmd = "touch " + canary_.string();
    for (auto p = out.find("CMD"); p != std::string::npos; p = out.find("CMD", p + cmd.size())) out.replace(p, 3, cmd);
    return out;
  }
  fs::path dir_, canary_;
};

struct Case {
  std::string name;
  std::string run;  // ${REF} stands for the reference
  std::function<std::string(const std::string&)> expected;
  bool heredoc = false;
  bool env_only = false;  // reads $VAR, declares the reference in `refs`
};

TEST_F(CommandRefs, EveryContextTimesHostilePayloadsReachTheCommandExactly) {
  const std::vector<Case> cases = {
      {"word", "printf '%s' ${REF} > got", [](const std::string& v) { return v; }},
      {"single", "printf '%s' 'a${REF}b' > got", [](const std::string& v) { return "a" + v + "b"; }},
      {"double", "printf '%s' \"a${REF}b\" > got", [](const std::string& v) { return "a" + v + "b"; }},
      {"heredoc", "cat > got <<EOF\n${REF}\nEOF", [](const std::string& v) { return v + "\n"; }, true},
      {"heredoc_quoted", "cat > got <<'EOF'\n${REF}\nEOF", [](const std::string& v) { return v + "\n"; }, true},
      {"subst", "x=$(printf '%s' \"${REF}\"; printf .)\nprintf '%s' \"${x%.}\" > got", [](const std::string& v) { return v; }},
      {"env", "printf '%s' \"$VAR\" > got", [](const std::string& v) { return v; }, false, true},
  };
  std::string big;
  std::mt19937 rng(11);
  const std::string alphabet = "ab '\"\\$`;&|\n\t()#";
  while (big.size() < (1u << 20)) big += alphabet[rng() % alphabet.size()];
  const std::vector<std::string> payloads = {
      hostile("a; CMD"), hostile("'; CMD; '"), hostile("\"; CMD; \""), "'\\''", hostile("$(CMD)"), hostile("`CMD`"),
      hostile("&& CMD"), hostile("x\nCMD\n"), hostile("x\nEOF\nCMD"), hostile("\\'$(CMD)\\\""), every_byte_as_text(), big,
  };
  std::string yaml = "nodes:\n";
  for (std::size_t p = 0; p < payloads.size(); ++p) {
    std::ofstream(dir_ / ("p" + std::to_string(p) + ".txt"), std::ios::binary) << payloads[p];
    yaml += "  p" + std::to_string(p) + ": {type: emit, params: {file: p" + std::to_string(p) + ".txt}}\n";
  }
  for (const auto& c : cases)
    for (std::size_t p = 0; p < payloads.size(); ++p) {
      const std::string up = "p" + std::to_string(p);
      std::string run = c.run;
      if (c.env_only) run.replace(run.find("$VAR"), 4, "$AISPFLOW_REF_P" + std::to_string(p) + "_TEXT");
      else
        for (auto at = run.find("${REF}"); at != std::string::npos; at = run.find("${REF}")) run.replace(at, 6, "${" + up + ".text}");
      yaml += "  " + c.name + "_" + up + ":\n    type: command\n    params:\n";
      if (c.env_only) yaml += "      refs: [\"${" + up + ".text}\"]\n";
      yaml += "      run: |\n" + indented(run, "        ");
    }
  const RunSummary s = run(load(yaml));
  EXPECT_FALSE(fs::exists(canary_)) << "an upstream value ran as a command";
  int exact = 0;
  for (const auto& c : cases)
    for (std::size_t p = 0; p < payloads.size(); ++p) {
      const std::string name = c.name + "_p" + std::to_string(p);
      const NodeResult* r = nullptr;
      for (const auto& n : s.nodes) if (n.name == name) r = &n;
      ASSERT_NE(r, nullptr) << name;
      const bool delimiter_line = payloads[p].find("\nEOF\n") != std::string::npos;
      if (c.heredoc && delimiter_line) {  // the value would end the document: refused before running
        EXPECT_EQ(r->status, NodeStatus::failed) << name;
        EXPECT_NE(r->error.find("would end the here-document <<EOF"), std::string::npos) << name << ": " << r->error;
        continue;
      }
      if (c.env_only && payloads[p].size() > 100000) {  // too long for one environment variable
        EXPECT_EQ(r->status, NodeStatus::failed) << name;
        EXPECT_NE(r->error.find("more than one environment variable can"), std::string::npos) << name << ": " << r->error;
        continue;
      }
      ASSERT_EQ(r->status, NodeStatus::ran) << name << ": " << r->error;
      EXPECT_EQ(read_file(dir_ / "out" / "nodes" / name / "got"), c.expected(payloads[p])) << name;
      ++exact;
    }
  EXPECT_GE(exact, 70);
}

// A reference where no quoting can hold is refused at load time, naming the file, the line of the `run`
// value, the reference, its line within the command, the reason and the safe alternative.
TEST_F(CommandRefs, UnsafePlacesRefuseTheWorkflowAtLoadTime) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"echo start\n        # note: ${up.text}", "(line 2 of the command) stands inside a # comment"},
      {"x=`echo ${up.text}`", "stands inside `...`"},
      {"echo $(( ${up.text} + 1 ))", "inside $((...))"},
      {"cat <<${up.text}\n        x", "here-document delimiter"},
      {"echo \\${up.text}", "escaped by the \\"},
  };
  for (const auto& [run, reason] : cases) {
    const std::string yaml = "nodes:\n  up: {type: emit, params: {file: p.txt}}\n  use:\n    type: command\n"
                             "    params:\n      run: |\n        " + run + "\n";
    try {
      load(yaml);
      ADD_FAILURE() << "not refused: " << run;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("wf.yaml:6:"), std::string::npos) << msg;
      EXPECT_NE(msg.find("node 'use'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("${up.text}"), std::string::npos) << msg;
      EXPECT_NE(msg.find(reason), std::string::npos) << msg;
      EXPECT_NE(msg.find("\"$AISPFLOW_REF_UP_TEXT\""), std::string::npos) << msg;
    }
  }
  // ${raw:...} is the author's explicit choice: not refused.
  EXPECT_NO_THROW(load("nodes:\n  up: {type: emit, params: {file: p.txt}}\n"
                       "  use: {type: command, params: {run: \"true # ${raw:up.text}\"}}\n"));
}

TEST_F(CommandRefs, RefsMustBeReferences) {
  try {
    load("nodes:\n  up: {type: emit, params: {file: p.txt}}\n"
         "  use: {type: command, params: {run: \"true\", refs: [up.text]}}\n");
    ADD_FAILURE() << "refs: [up.text] accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected one reference such as \"${node.field}\""), std::string::npos) << e.what();
  }
}

// Every reference the params mention is in the environment, mangled as documented; a value that is not
// text is its JSON; two references that mangle to one name with different values fail the node.
TEST_F(CommandRefs, ReferencesAreEnvironmentVariables) {
  std::ofstream(dir_ / "a.txt") << "A 'x' \"y\"";
  std::ofstream(dir_ / "b.txt") << "B";
  const RunSummary s = run(load(R"(nodes:
  make-data: {type: emit, params: {file: a.txt}}
  use:
    type: command
    params:
      run: printf '%s|%s' "$AISPFLOW_REF_MAKE_DATA_TEXT" "$AISPFLOW_REF_MAKE_DATA_TEXT" > got
      env: {UNUSED: "${make-data.text}"}
  make_data: {type: emit, params: {file: b.txt}}
  clash:
    type: command
    params: {run: "true", refs: ["${make-data.text}", "${make_data.text}"]}
)"));
  for (const auto& n : s.nodes) {
    if (n.name == "use") {
      EXPECT_EQ(n.status, NodeStatus::ran) << n.error;
    }
    if (n.name == "clash") {
      EXPECT_EQ(n.status, NodeStatus::failed);
      EXPECT_NE(n.error.find("both become $AISPFLOW_REF_MAKE_DATA_TEXT"), std::string::npos) << n.error;
    }
  }
  EXPECT_EQ(read_file(dir_ / "out/nodes/use/got"), "A 'x' \"y\"|A 'x' \"y\"");
}

}  // namespace
}  // namespace aispflow
