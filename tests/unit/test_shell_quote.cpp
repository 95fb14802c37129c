// A value spliced into a shell command reaches the command byte for byte and never runs, whatever shell
// context the reference stands in; places that cannot be made safe are refused with the reason.
//
// Every case runs the real shells: /bin/sh (dash on Debian) and bash, when present. A command template
// writes what it received to a file with printf '%s' (or cat for here-documents), and the test compares the
// bytes; every hostile payload tries to create a canary file, which must never appear.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/shell_quote.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
namespace shell = aispflow::shell;
using aispflow::test::read_file;

const std::string kRef = "${up.text}";

// The spans of every kRef in `script`.
std::vector<shell::Span> spans_of(const std::string& script) {
  std::vector<shell::Span> spans;
  for (std::size_t p = script.find(kRef); p != std::string::npos; p = script.find(kRef, p + 1))
    spans.push_back({p, kRef.size()});
  return spans;
}

std::string splice_value(const std::string& script, const std::string& value) {
  return shell::splice(script, spans_of(script),
                       [&](std::size_t, const shell::Place& p) { return shell::escape(value, p.context); });
}

std::vector<std::string> shells() {
  std::vector<std::string> out = {"/bin/sh"};
  if (fs::exists("/bin/bash")) out.push_back("/bin/bash");
  return out;
}

// A scratch directory the shell runs in; CANARY appears there if a payload ever runs.
class ShellQuote : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-shell-quote-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `script` with `sh` in dir_ (through a file when it is too long for one argument).
  void run_script(const std::string& sh, const std::string& script) {
    std::vector<std::string> args = {sh, "-c", script};
    if (script.size() > 100000) {
      std::ofstream(dir_ / "script.sh", std::ios::binary) << script;
      args = {sh, (dir_ / "script.sh").string()};
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(dir_.c_str()) != 0) ::_exit(127);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(sh.c_str(), argv.data());
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  std::string got(const std::string& name = "got") const {
    return fs::exists(dir_ / name) ? read_file(dir_ / name) : std::string("<no output>");
  }
  std::string run_shell(const std::string& sh, const std::string& script) {
    fs::remove(dir_ / "got");
    run_script(sh, script);
    return got();
  }
  // Many cases in one shell (spawning a shell per case is the slow part): case i writes got_i. A broken case
  // can only spoil outputs, never hide itself; a batch with any mismatch is re-run case by case to name it.
  struct Job {
    std::string script;    // writes ./got
    std::string expected;
    std::string label;
  };
  void run_batch(const std::string& sh, const std::vector<Job>& jobs) {
    std::string all;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      names.push_back("got_" + std::to_string(i));
      std::string script = jobs[i].script;
      const auto at = script.rfind("> got");
      script.replace(at, 5, "> " + names.back());
      all += script + "\n";
      fs::remove(dir_ / names.back());
    }
    run_script(sh, all);
    ASSERT_FALSE(canary()) << sh << ": a value ran as a command in this batch: " << jobs.front().label << " ...";
    bool all_exact = true;
    for (std::size_t i = 0; i < jobs.size(); ++i) all_exact = all_exact && got(names[i]) == jobs[i].expected;
    if (all_exact) return;
    for (const auto& job : jobs)
      EXPECT_EQ(run_shell(sh, job.script), job.expected) << sh << ", " << job.label;
  }
  bool canary() const { return fs::exists(dir_ / "CANARY"); }

  fs::path dir_;
};

// Where a reference may stand, and what the command then writes for a value V.
struct Template {
  const char* name;
  std::string script;
  std::function<std::string(const std::string&)> expected;
};

std::vector<Template> templates() {
  auto same = [](const std::string& v) { return v; };
  return {
      {"unquoted word", "printf '%s' ${up.text} > got", same},
      {"inside '...'", "printf '%s' 'a${up.text}b' > got", [](const std::string& v) { return "a" + v + "b"; }},
      {"inside \"...\"", "printf '%s' \"a${up.text}b\" > got", [](const std::string& v) { return "a" + v + "b"; }},
      {"glued to other words", "printf '%s' x${up.text}'y'\"z\"${up.text} > got",
       [](const std::string& v) { return "x" + v + "yz" + v; }},
      {"assignment", "v=${up.text}; printf '%s' \"$v\" > got", same},
      {"in a pipe", "printf '%s' ${up.text} | cat > got", same},
      {"in a subshell", "(printf '%s' ${up.text}) > got", same},
      {"after a line continuation", "printf '%s' \\\n${up.text} > got", same},
      {"in a case branch", "case x in x) printf '%s' \"${up.text}\" > got;; esac", same},
      {"inside $(...)", "x=$(printf '%s' ${up.text}; printf .); printf '%s' \"${x%.}\" > got", same},
      {"\"...\" inside $(...) inside \"...\"", "x=\"$(printf '%s' \"${up.text}\"; printf .)\"; printf '%s' \"${x%.}\" > got",
       same},
      {"'...' inside $(...) inside \"...\"", "x=\"$(printf '%s' '${up.text}'; printf .)\"; printf '%s' \"${x%.}\" > got",
       same},
      {"unquoted here-document", "cat > got <<EOF\na${up.text}b\nEOF\n", [](const std::string& v) { return "a" + v + "b\n"; }},
      {"quoted here-document", "cat > got <<'EOF'\n${up.text}\nEOF\n", [](const std::string& v) { return v + "\n"; }},
      {"<<- here-document", "cat > got <<-EOF\n\t${up.text}\n\tEOF\n", [](const std::string& v) { return v + "\n"; }},
      {"here-document inside $(...)", "x=$(cat <<EOF\n${up.text}\nEOF\n); printf '%s' \"$x\" > got",
       [](const std::string& v) { return v.substr(0, v.find_last_not_of('\n') + 1); }},
      {"on the line that starts a here-document", "cat <<EOF >/dev/null; printf '%s' ${up.text} > got\nbody\nEOF\n", same},
  };
}

// Hostile payloads: quotes of both kinds, '\'' itself, substitutions, separators, newlines, here-document
// delimiters, tabs (for <<-), every byte 1..255 and 1 MiB.
std::vector<std::string> payloads() {
  std::vector<std::string> p = {
      "", "plain", "a'b", "a\"b", "'\\''", "'", "\"", "\\", "\\\\", "a\\", "$(touch CANARY)", "`touch CANARY`",
      "; touch CANARY", "&& touch CANARY", "| touch CANARY", "a\ntouch CANARY\n", "'; touch CANARY; '",
      "\"; touch CANARY; \"", "'\"$(touch CANARY)\"'", "\\'; touch CANARY; '", "$HOME ${HOME} $1 $$ $#", "\nEOF\ntouch CANARY\n",
      "EOF", "\tEOF\ntouch CANARY", "a\n\ttouch CANARY", "\\\nEOF\ntouch CANARY\n", "*", "~", "-n", "#; touch CANARY",
      "a b  c", "$((1+1)) $[1+1]", "${x:-$(touch CANARY)}", "\n\n", "\r\n", "!!", "}{)(",
  };
  std::string bytes;
  for (int b = 1; b < 256; ++b) bytes += static_cast<char>(b);
  p.push_back(bytes);
  std::string big;
  std::mt19937 rng(7);
  const std::string alphabet = "ab '\"\\$`;&|\n\t()#EOF";
  while (big.size() < (1u << 20)) big += alphabet[rng() % alphabet.size()];
  p.push_back(big);
  return p;
}

// A splice either succeeds and the shell reads back the exact bytes, or is refused; a refusal is only
// acceptable for the reasons this template can have (a delimiter line, a tab under <<-).
TEST_F(ShellQuote, EveryContextTimesEveryHostilePayloadIsExactOrRefused) {
  std::vector<Job> jobs;
  int refused = 0;
  for (const auto& t : templates())
    for (const auto& value : payloads()) {
      const std::string label = std::string(t.name) + ", value " + testing::PrintToString(value.substr(0, 80));
      try {
        jobs.push_back({splice_value(t.script, value), t.expected(value), label});
      } catch (const shell::SpliceError& e) {
        const std::string why = e.what();
        const bool heredoc = std::string(t.name).find("here-document") != std::string::npos;
        EXPECT_TRUE(heredoc && (why.find("would end the here-document") != std::string::npos ||
                                why.find("<<- here-document would remove") != std::string::npos))
            << "refused " << label << ": " << why;
        ++refused;
      }
    }
  EXPECT_GT(jobs.size(), 500u);
  EXPECT_GT(refused, 0) << "the delimiter payloads must be refused in here-documents";
  for (const auto& sh : shells())
    for (std::size_t b = 0; b < jobs.size(); b += 40)
      run_batch(sh, std::vector<Job>(jobs.begin() + static_cast<long>(b),
                                     jobs.begin() + static_cast<long>(std::min(jobs.size(), b + 40))));
}

// A seeded random mix of the dangerous characters, through every template, in /bin/sh and bash.
TEST_F(ShellQuote, RandomPayloadsAreExactOrRefused) {
  std::mt19937 rng(20241125);
  const std::string dangerous = "'\"\\$`;&|()<>{}#!*?[]~=\n\t EOFab";
  const auto all = templates();
  std::vector<Job> jobs;
  for (int i = 0; i < 4000; ++i) {
    std::string value;
    const int length = static_cast<int>(rng() % 24);
    for (int k = 0; k < length; ++k)
      value += rng() % 8 == 0 ? static_cast<char>(1 + rng() % 255) : dangerous[rng() % dangerous.size()];
    if (rng() % 4 == 0) value += "$(touch CANARY)";
    const Template& t = all[static_cast<std::size_t>(i) % all.size()];
    const std::string label =
        "seed 20241125, case " + std::to_string(i) + ", " + t.name + ", value " + testing::PrintToString(value);
    try {
      jobs.push_back({splice_value(t.script, value), t.expected(value), label});
    } catch (const shell::SpliceError& e) {
      ASSERT_NE(std::string(t.name).find("here-document"), std::string::npos) << label << " refused: " << e.what();
    }
  }
  EXPECT_GT(jobs.size(), 3000u);
  for (const auto& sh : shells())
    for (std::size_t b = 0; b < jobs.size(); b += 100)
      run_batch(sh, std::vector<Job>(jobs.begin() + static_cast<long>(b),
                                     jobs.begin() + static_cast<long>(std::min(jobs.size(), b + 100))));
}

// Random commands mixing every context (quotes, $(...), here-documents, comments, case, assignments, line
// continuations), checked against the shell's own reading: each runs once with a marker that needs no
// quoting anywhere and once with a hostile value; the second must write what the first wrote, with the
// marker replaced by the value. This tests the lexer's bookkeeping across constructs, not one at a time.
TEST_F(ShellQuote, RandomCommandsReadTheValueExactlyWhereTheyReadAMarker) {
  std::mt19937 rng(424242);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::string> segments = {
      kRef, "'lit'", "'a" + kRef + "b'", "\"d" + kRef + "q\"", "\"$(printf '%s.' " + kRef + ")\"",
      "x", "\\;", "\"${HOME+h}\"", "\"'\"", "'\"'", "\\\n",
  };
  auto word = [&] {
    std::string w;
    for (std::size_t k = 0, n = 1 + pick(3); k < n; ++k) w += segments[pick(segments.size())];
    return w;
  };
  auto statement = [&]() -> std::string {
    switch (pick(6)) {
      case 0: return "printf '%s|' " + word() + " " + word() + " >> got\n";
      case 1: return "cat >> got <<EOF\n[" + kRef + "] '" + kRef + "' \"$(printf '%s.' " + kRef + ")\"\nEOF\n";
      case 2: return "cat >> got <<'EOF'\n" + kRef + " $(not run) `nor this`\nEOF\n";
      case 3: return "# a comment with ' \" ( ` $( and no reference\n";
      case 4: return "case x in x) printf '%s|' " + word() + " >> got;; esac\n";
      default: return "v=" + word() + "; printf '%s|' \"$v\" >> got\n";
    }
  };
  const std::string marker = "QzMarker7";
  const std::string dangerous = "'\"\\$`;&|()<>{}#*?[]~=\n\t EOFab";
  std::vector<std::string> marked, hostile, values;
  for (int i = 0; i < 600; ++i) {
    std::string script;
    for (std::size_t k = 0, n = 1 + pick(5); k < n; ++k) script += statement();
    std::string value;
    for (std::size_t k = 0, n = pick(20); k < n; ++k) value += dangerous[pick(dangerous.size())];
    value += "$(touch " + (dir_ / "CANARY").string() + ")'\"";
    try {
      hostile.push_back(splice_value(script, value));
    } catch (const shell::SpliceError& e) {
      ASSERT_NE(std::string(e.what()).find("here-document"), std::string::npos) << script << ": " << e.what();
      continue;
    }
    marked.push_back(splice_value(script, marker));
    values.push_back(value);
  }
  ASSERT_GT(marked.size(), 400u);
  // Each command in its own directory, many per shell.
  auto run_all = [&](const std::string& sh, const std::vector<std::string>& scripts, const std::string& tag) {
    std::string all;
    for (std::size_t i = 0; i < scripts.size(); ++i) {
      const std::string sub = tag + std::to_string(i);
      fs::create_directories(dir_ / sub);
      all += "(cd " + sub + " || exit\n: > got\n" + scripts[i] + "\n)\n";
    }
    run_script(sh, all);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scripts.size(); ++i) out.push_back(got(tag + std::to_string(i) + "/got"));
    return out;
  };
  for (const auto& sh : shells()) {
    const auto by_marker = run_all(sh, marked, "m");
    const auto by_value = run_all(sh, hostile, "v");
    ASSERT_FALSE(canary()) << sh << ": a value ran as a command";
    for (std::size_t i = 0; i < marked.size(); ++i) {
      ASSERT_NE(by_marker[i], "<no output>") << marked[i];
      std::string expected = by_marker[i];
      for (auto p = expected.find(marker); p != std::string::npos; p = expected.find(marker, p + values[i].size()))
        expected.replace(p, marker.size(), values[i]);
      EXPECT_EQ(by_value[i], expected) << sh << ", seed 424242, command:\n" << marked[i];
    }
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_))
      if (entry.is_directory()) fs::remove_all(entry.path(), ec);
  }
}

// Places that cannot be made safe are refused with the reason, before any value is known.
TEST(ShellPlaces, UnsafePlacesAreRefusedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"true # ${up.text}", "# comment"},
      {"x=`echo ${up.text}`", "`...`"},
      {"echo \"`echo ${up.text}`\"", "`...`"},
      {"echo $(( ${up.text} + 1 ))", "$((...))"},
      {"echo $[ ${up.text} ]", "$[...]"},
      {"(( ${up.text} ))", "((...))"},
      {"[[ ${up.text} -eq 1 ]]", "[[ ... ]]"},
      {"echo ${HOME:-${up.text}}", "${...}"},
      {"echo \\${up.text}", "escaped"},
      {"echo \"\\${up.text}\"", "escaped"},
      {"echo $${up.text}", "right after a $"},
      {"echo \"$${up.text}\"", "right after a $"},
      {"cat <<${up.text}\nx\n", "delimiter"},
      {"cat <<'E'${up.text}\nx\n", "delimiter"},
      {"echo $'a' ${up.text}", "$'...'"},
      {"echo $\"${up.text}\"", "$\"...\""},
      {"x=$(case a in a) echo ${up.text};; esac)", "case inside $(...)"},
      {"cat <<< ${up.text}", "<<<"},
      {"alias p='printf \"'\np ${up.text}\"", "alias"},
      {"cat <<EOF\na\\\n${up.text}\nEOF\n", "end of a here-document line"},
      {"echo 'unterminated ${up.text}", "an unterminated '"},
      {"echo '' ${up.text} 'x", "an unterminated '"},
      {"echo \"${up.text}", "an unterminated \""},
      {"cat <<EOF; x=$(echo a\n${up.text}\n)\nEOF\n", "newline inside $(...)"},
  };
  for (const auto& [script, reason] : cases) {
    const auto where = shell::places(script, spans_of(script));
    ASSERT_EQ(where.size(), 1u) << script;
    EXPECT_EQ(where[0].context, shell::Context::refused) << script;
    EXPECT_NE(where[0].why.find(reason), std::string::npos) << script << " -> " << where[0].why;
  }
}

TEST(ShellPlaces, SafePlacesGetTheirContextAndLine) {
  const std::string script = "echo ${up.text} '${up.text}' \"${up.text}\"\ncat <<EOF\n${up.text}\nEOF\ncat <<\"X\"\n${up.text}\nX\n"
                             "echo \"$(echo ${up.text})\" # done";
  const auto where = shell::places(script, spans_of(script));
  ASSERT_EQ(where.size(), 6u);
  EXPECT_EQ(where[0].context, shell::Context::word);
  EXPECT_EQ(where[1].context, shell::Context::single_quoted);
  EXPECT_EQ(where[2].context, shell::Context::double_quoted);
  EXPECT_EQ(where[3].context, shell::Context::heredoc);
  EXPECT_EQ(where[3].line, 3);
  EXPECT_EQ(where[4].context, shell::Context::heredoc_literal);
  EXPECT_EQ(where[5].context, shell::Context::word);
  EXPECT_EQ(where[5].line, 8);
}

// The structural check after splicing: values that would end a here-document early, strip under <<-, or
// carry a NUL are refused, naming the reference.
TEST(ShellSplice, ValuesThatWouldBreakAHereDocumentAreRefused) {
  EXPECT_THROW(splice_value("cat <<EOF\n${up.text}\nEOF\n", "x\nEOF\ntouch CANARY"), shell::SpliceError);
  EXPECT_THROW(splice_value("cat <<'EOF'\n${up.text}\nEOF\n", "EOF"), shell::SpliceError);
  EXPECT_THROW(splice_value("cat <<-EOF\n${up.text}\nEOF\n", "\tEOF"), shell::SpliceError);
  EXPECT_THROW(splice_value("cat <<-EOF\nx${up.text}\nEOF\n", "a\n\tb"), shell::SpliceError);
  EXPECT_THROW(splice_value("echo ${up.text}", std::string("a\0b", 3)), shell::SpliceError);
  // A line that only contains the delimiter is fine.
  EXPECT_EQ(splice_value("cat <<EOF\n${up.text}\nEOF\n", "EOFX\n EOF"), "cat <<EOF\nEOFX\n EOF\nEOF\n");
}

TEST(ShellEscape, EachContextHasItsOwnEscaping) {
  EXPECT_EQ(shell::escape("a'b", shell::Context::word), "'a'\\''b'");
  EXPECT_EQ(shell::escape("a'b", shell::Context::single_quoted), "a'\\''b");
  EXPECT_EQ(shell::escape("\\$`\"'", shell::Context::double_quoted), "\\\\\\$\\`\\\"'");
  EXPECT_EQ(shell::escape("\\$`\"'", shell::Context::heredoc), "\\\\\\$\\`\"'");
  EXPECT_EQ(shell::escape("\\$`\"'", shell::Context::heredoc_literal), "\\$`\"'");
}

// The old quoting (one single-quoted word wherever the reference stood) fails this suite: a test that can
// fail. Inside '...' it lets the payload out.
TEST_F(ShellQuote, TheOldWordQuotingInsideSingleQuotesWouldRunThePayload) {
  const std::string script = "printf '%s' 'a${up.text}b' > got";
  const std::string value = "x; touch CANARY; echo ";  // the issue's case: no quotes of its own
  std::string old = script;  // what the old code did everywhere: one single-quoted word
  old.replace(old.find(kRef), kRef.size(), shell::escape(value, shell::Context::word));
  old = "exec >/dev/null; " + old;
  run_shell("/bin/sh", old);
  EXPECT_TRUE(canary()) << "the harness must be able to see a payload run";
  fs::remove(dir_ / "CANARY");
  EXPECT_EQ(run_shell("/bin/sh", splice_value(script, value)), "a" + value + "b");
  EXPECT_FALSE(canary());
}

}  // namespace
