// A ${node.field} inside a command node's `run` is data, never code: upstream output that looks like shell
// (`a; touch FILE; echo b`, quotes, $(...), backticks, newlines) reaches the downstream command as one literal word;
// a list becomes one word per element; ${raw:node.field} is the explicit way to splice text in as shell.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using aispflow::test::quote;
using aispflow::test::read_file;

class CommandQuoting : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-quoting-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  aispflow::test::CommandResult run(const std::string& yaml) {
    std::ofstream(dir_ / "wf.yaml") << yaml;
    return aispflow::test::run_in(dir_, "timeout 120 " + quote(AISPFLOW_BIN) +
                                            " run wf.yaml --backend cpu --cache cache --out out");
  }
  fs::path dir_;
};

TEST_F(CommandQuoting, UpstreamTextNeverRunsAsCommands) {
  const fs::path victim = dir_ / "injected";
  // The producer prints text full of shell syntax; printf %s keeps it byte for byte.
  const std::string payload = "a; touch " + victim.string() + "; echo b $(touch " + victim.string() + ".2) `id` 'q' \"dq\"";
  std::ofstream(dir_ / "payload.txt") << payload;
  const std::string yaml =
      "name: q\nnodes:\n"
      "  up:\n    type: command\n    params: {run: \"cat " + (dir_ / "payload.txt").string() + "\"}\n"
      "  down:\n    type: command\n    inputs: [up]\n"
      "    params: {run: \"printf '%s\\\\n' ${up.stdout_tail} > $AISPFLOW_OUT/got.txt\"}\n";
  const auto r = run(yaml);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(victim)) << "the upstream text ran as a command";
  EXPECT_FALSE(fs::exists(victim.string() + ".2"));
  EXPECT_EQ(read_file(dir_ / "out/nodes/down/got.txt"), payload + "\n") << "one word, printed literally";
}

TEST_F(CommandQuoting, ListsAreOneWordPerElementAndRawIsExplicit) {
  const std::string yaml =
      "name: q\nnodes:\n"
      "  up:\n    type: command\n"
      "    params: {run: \"printf 'echo raw ok'; touch $AISPFLOW_OUT/a.txt \\\"$AISPFLOW_OUT/b c.txt\\\"\"}\n"
      "  words:\n    type: command\n    inputs: [up]\n"
      "    params: {run: \"printf '[%s]' ${up.files} > $AISPFLOW_OUT/w.txt; ${raw:up.stdout_tail} > $AISPFLOW_OUT/r.txt\"}\n";
  const auto r = run(yaml);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // `files` lists the producer's files: one word each, the space inside "b c.txt" kept.
  EXPECT_EQ(read_file(dir_ / "out/nodes/words/w.txt"), "[a.txt][b c.txt]");
  EXPECT_EQ(read_file(dir_ / "out/nodes/words/r.txt"), "raw ok\n") << "${raw:...} splices the text in as shell";
}

}  // namespace
