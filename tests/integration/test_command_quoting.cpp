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

// The cases from issue 24, as a new user would write them: upstream `a; touch FILE` inside the user's own
// single quotes, and `$(touch FILE2)` inside double quotes. Both used to run; now each command prints the
// upstream text exactly.
TEST_F(CommandQuoting, ReferencesInsideTheUsersOwnQuotesNeverRun) {
  const fs::path file = dir_ / "FILE", file2 = dir_ / "FILE2";
  std::ofstream(dir_ / "p1.txt") << "a; touch " << file.string();
  std::ofstream(dir_ / "p2.txt") << "$(touch " << file2.string() << ")";
  const std::string yaml =
      "name: q\nnodes:\n"
      "  up:\n    type: command\n    params: {run: \"cat " + (dir_ / "p1.txt").string() + "\"}\n"
      "  up2:\n    type: command\n    params: {run: \"cat " + (dir_ / "p2.txt").string() + "\"}\n"
      "  single:\n    type: command\n    params: {run: \"echo '${up.stdout_tail}' > out\"}\n"
      "  double:\n    type: command\n    params: {run: \"echo \\\"${up2.stdout_tail}\\\" > out\"}\n";
  const auto r = run(yaml);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(file)) << "the single-quoted reference ran the upstream text";
  EXPECT_FALSE(fs::exists(file2)) << "the double-quoted reference ran the upstream text";
  EXPECT_EQ(read_file(dir_ / "out/nodes/single/out"), "a; touch " + file.string() + "\n");
  EXPECT_EQ(read_file(dir_ / "out/nodes/double/out"), "$(touch " + file2.string() + ")\n");
}

// A reference in a # comment is refused by `validate` (exit 2) with file, line and reference; nothing runs.
TEST_F(CommandQuoting, AReferenceInACommentIsRefusedBeforeAnythingRuns) {
  const fs::path ran = dir_ / "RAN";
  std::ofstream(dir_ / "wf.yaml") << "name: q\nnodes:\n"
                                     "  up:\n    type: command\n    params: {run: \"touch " + ran.string() + "\"}\n"
                                     "  use:\n    type: command\n    params:\n      run: |\n"
                                     "        echo hi\n        # was: ${up.stdout_tail}\n";
  for (const std::string verb : {"validate", "run"}) {
    const std::string extra = verb == "run" ? " --backend cpu --cache cache --out out" : "";
    const auto r = aispflow::test::run_in(dir_, quote(AISPFLOW_BIN) + " " + verb + " wf.yaml" + extra);
    EXPECT_EQ(r.code, 2) << verb << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("wf.yaml:9:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("${up.stdout_tail} (line 2 of the command) stands inside a # comment"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(ran)) << verb << " ran a node of a refused workflow";
  }
}

}  // namespace
