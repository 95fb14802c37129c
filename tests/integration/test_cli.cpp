// The real `aispflow` binary on real workflows (tests/data/cli/), each test in its own temp directory
// with its own cache and report directory: run.json, exit codes 0/1/2/3/130, error messages, caching
// and the reasons, --set, selection, graph, nodes, cache, validate, hw.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

using aispflow::test::quote;
using aispflow::test::read_file;

using Result = aispflow::test::CommandResult;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-cli-" + std::to_string(rd()));
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "data" / "input.csv") << "size,label\n1,small\n";
    for (const auto& entry : fs::directory_iterator(fs::path(AISPFLOW_TEST_DATA) / "cli"))
      fs::copy_file(entry.path(), dir_ / entry.path().filename());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `aispflow ARGS` in the temp directory (cache and reports inside it).
  // `env`: variable assignments for the command, e.g. "AISPFLOW_CACHE=x".
  Result aispflow(const std::string& args, const std::string& env = "") {
    return aispflow::test::run_in(dir_, env + " " + quote(AISPFLOW_BIN) + " " + args);
  }
  Result run(const std::string& workflow, const std::string& extra = "") {
    return aispflow("run " + workflow + " --cache cache --out out " + extra);
  }
  json report() { return json::parse(read_file(dir_ / "out" / "run.json")); }
  static const json& node(const json& report, const std::string& name) {
    for (const auto& n : report["nodes"])
      if (n["name"] == name) return n;
    throw std::runtime_error("no node " + name + " in run.json");
  }

  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------------

TEST_F(CliTest, RunWritesTheReportAndEveryArtifact) {
  Result r = run("demo.yaml");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json rep = report();
  EXPECT_EQ(rep["workflow"], "demo");
  EXPECT_EQ(rep["exit_code"], 0);
  EXPECT_TRUE(fs::equivalent(rep["file"].get<std::string>(), dir_ / "demo.yaml"));
  EXPECT_TRUE(std::regex_match(rep["started"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(rep["seconds"].is_number());
  EXPECT_TRUE(rep["backend"].is_string());
  EXPECT_TRUE(rep["aispflow_version"].is_string());
  ASSERT_EQ(rep["nodes"].size(), 7u);
  for (const auto& n : rep["nodes"]) {
    EXPECT_EQ(n["status"], "ran") << n;
    EXPECT_EQ(n["reason"], "no cache entry");
    EXPECT_EQ(n["type"], "command");
    EXPECT_TRUE(std::regex_match(n["digest"].get<std::string>(), std::regex("[0-9a-f]{32}"))) << n;
    EXPECT_TRUE(n["seconds"].is_number());
    EXPECT_FALSE(n.contains("error"));
    // When run() started and returned, UTC with milliseconds; ISO 8601 text of one width orders like time.
    const std::regex ms(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
    ASSERT_TRUE(n.contains("started_at") && n.contains("finished_at")) << n;
    EXPECT_TRUE(std::regex_match(n["started_at"].get<std::string>(), ms)) << n;
    EXPECT_TRUE(std::regex_match(n["finished_at"].get<std::string>(), ms)) << n;
    EXPECT_LE(n["started_at"].get<std::string>(), n["finished_at"].get<std::string>()) << n;
    EXPECT_GE(n["started_at"].get<std::string>(), rep["started"].get<std::string>().substr(0, 19)) << n;
  }
  // A node's finish is never before a node it depends on started and finished: join after make_a.
  auto node_of = [&](const std::string& name) -> const json& {
    for (const auto& n : rep["nodes"])
      if (n["name"] == name) return n;
    static const json none;
    return none;
  };
  EXPECT_LE(node_of("make_a")["finished_at"].get<std::string>(), node_of("join")["started_at"].get<std::string>());
  // Files flowed between nodes, and every artifact is in out/nodes/<name>/ (real files, not symlinks).
  EXPECT_EQ(read_file(dir_ / "out/nodes/join/ab.txt"), "a\nb\n");
  EXPECT_EQ(read_file(dir_ / "out/nodes/gather/list.txt"), "per_size.size-1\nper_size.size-2\nper_size.size-4\n");
  EXPECT_EQ(read_file(dir_ / "out/nodes/per_size.size-2/n.txt"), "2\n");
  EXPECT_TRUE(fs::exists(dir_ / "out/nodes/join/artifact.json"));
  EXPECT_FALSE(fs::is_symlink(dir_ / "out/nodes/join/ab.txt"));
  json artifact = json::parse(read_file(dir_ / "out/nodes/join/artifact.json"));
  EXPECT_EQ(artifact["data"]["exit_code"], 0);
  EXPECT_EQ(artifact["data"]["files"], json::array({"ab.txt"}));
  // Console: one line per finished node (not a terminal), then the summary.
  EXPECT_NE(r.out.find("[ran] join ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo: 7 nodes: 7 ran, 0 cached, 0 failed, 0 skipped"), std::string::npos) << r.out;
}

TEST_F(CliTest, SecondRunIsEntirelyCached) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  json first = report();
  Result r = run("demo.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  json second = report();
  for (std::size_t i = 0; i < second["nodes"].size(); ++i) {
    EXPECT_EQ(second["nodes"][i]["status"], "cached");
    EXPECT_EQ(second["nodes"][i]["reason"], "cached (same inputs)");
    EXPECT_EQ(second["nodes"][i]["digest"], first["nodes"][i]["digest"]);
  }
  EXPECT_EQ(read_file(dir_ / "out/nodes/join/ab.txt"), "a\nb\n");
}

TEST_F(CliTest, SetReRunsOnlyTheChangedNodeAndWhatDependsOnIt) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  Result r = run("demo.yaml", "--set 'make_a.run=echo A > $AISPFLOW_OUT/a.txt'");
  ASSERT_EQ(r.code, 0) << r.err;
  json rep = report();
  EXPECT_EQ(node(rep, "make_a")["status"], "ran");
  EXPECT_EQ(node(rep, "make_a")["reason"],
            "params changed: run echo a > $AISPFLOW_OUT/a.txt → echo A > $AISPFLOW_OUT/a.txt");
  EXPECT_EQ(node(rep, "join")["status"], "ran");
  EXPECT_EQ(node(rep, "join")["reason"], "input make_a changed");
  for (const char* cached : {"make_b", "per_size[size=1]", "per_size[size=2]", "per_size[size=4]", "gather"})
    EXPECT_EQ(node(rep, cached)["status"], "cached") << cached;
  EXPECT_EQ(read_file(dir_ / "out/nodes/join/ab.txt"), "A\nb\n");
}

TEST_F(CliTest, RefIntoACachedNodeReadsItsDataFromTheCache) {
  ASSERT_EQ(run("refs.yaml").code, 0);
  EXPECT_EQ(read_file(dir_ / "out/nodes/consumer/c.txt"), "got hello\n");
  // A new process: producer is a hit taken from metadata alone; consumer re-runs and its ${ref} reads
  // producer's data from the cache entry.
  Result r = run("refs.yaml", "--set 'consumer.run=echo again ${producer.stdout_tail} > $AISPFLOW_OUT/c.txt'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(node(report(), "producer")["status"], "cached");
  EXPECT_EQ(node(report(), "consumer")["status"], "ran");
  EXPECT_EQ(read_file(dir_ / "out/nodes/consumer/c.txt"), "again hello\n");

  // A record altered behind the cache's back, keeping its size and time, is caught when its data is read:
  // the reading node fails naming the entry, which is removed so the next run rebuilds it.
  const fs::path record = dir_ / "out/nodes/producer/artifact.json";  // a hard link to the entry's record
  struct stat before {};
  ASSERT_EQ(::stat(record.c_str(), &before), 0);
  std::string text = read_file(record);
  ASSERT_NE(text.find("hello"), std::string::npos);
  text.replace(text.find("hello"), 5, "jello");
  {
    std::fstream f(record, std::ios::in | std::ios::out | std::ios::binary);
    f << text;
  }
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, record.c_str(), times, 0), 0);
  r = run("refs.yaml", "--set 'consumer.run=echo third ${producer.stdout_tail} > $AISPFLOW_OUT/c.txt'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(node(report(), "consumer")["status"], "failed");
  EXPECT_NE(node(report(), "consumer")["error"].get<std::string>().find("is corrupt"), std::string::npos) << report();
  r = run("refs.yaml", "--set 'consumer.run=echo third ${producer.stdout_tail} > $AISPFLOW_OUT/c.txt'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(node(report(), "producer")["status"], "ran");
  EXPECT_EQ(read_file(dir_ / "out/nodes/consumer/c.txt"), "third hello\n");
}

TEST_F(CliTest, ChangedInputFileReRunsTheNodeThatDeclaresIt) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  std::ofstream(dir_ / "data" / "input.csv") << "size,label\n1,tiny\n";
  ASSERT_EQ(run("demo.yaml").code, 0);
  json rep = report();
  EXPECT_EQ(node(rep, "make_b")["status"], "ran");
  EXPECT_EQ(node(rep, "make_b")["reason"], "file data/input.csv changed");
  // make_b's output (b.txt) did not change: early cutoff keeps join cached.
  EXPECT_EQ(node(rep, "join")["status"], "cached");
}

TEST_F(CliTest, MissingInputFileFailsTheNodeNamingIt) {
  fs::remove(dir_ / "data" / "input.csv");
  Result r = run("demo.yaml");
  EXPECT_EQ(r.code, 1);
  json rep = report();
  EXPECT_EQ(node(rep, "make_b")["status"], "failed");
  EXPECT_NE(node(rep, "make_b")["error"].get<std::string>().find("file 'data/input.csv' does not exist"),
            std::string::npos);
  EXPECT_EQ(node(rep, "join")["reason"], "upstream make_b failed");
}

TEST_F(CliTest, FailedNodeGivesExitOneSkipsDescendantsAndFinishesTheRest) {
  Result r = run("fail.yaml");
  EXPECT_EQ(r.code, 1);
  json rep = report();
  EXPECT_EQ(rep["exit_code"], 1);
  EXPECT_EQ(node(rep, "bad")["status"], "failed");
  EXPECT_EQ(node(rep, "bad")["error"], "command exited with status 3: boom");
  EXPECT_EQ(node(rep, "child")["status"], "skipped");
  EXPECT_EQ(node(rep, "child")["reason"], "upstream bad failed");
  EXPECT_EQ(node(rep, "other")["status"], "ran");
  EXPECT_EQ(node(rep, "other_child")["status"], "ran");
  EXPECT_EQ(read_file(dir_ / "out/nodes/other_child/copy.txt"), "fine\n");
  // The failure is on stderr, and the failed node's partial output is kept for a look.
  EXPECT_NE(r.err.find("node 'bad' failed: command exited with status 3: boom"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir_ / "out/nodes/bad/stderr.txt"), "boom\n");
  EXPECT_EQ(read_file(dir_ / "out/nodes/bad/p.txt"), "partial\n");
  // Completed nodes stay cached.
  EXPECT_EQ(run("fail.yaml").code, 1);
  EXPECT_EQ(node(report(), "other_child")["status"], "cached");
}

TEST_F(CliTest, UnmetExpectationsGiveExitThreeEvenWhenCached) {
  Result r = run("expect.yaml");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  json rep = report();
  EXPECT_EQ(rep["exit_code"], 3);
  EXPECT_EQ(node(rep, "loud")["verdict"], "expectations_not_met");
  EXPECT_EQ(node(rep, "polite")["verdict"], "ok");
  EXPECT_NE(r.err.find("node 'loud': expectations not met"), std::string::npos) << r.err;
  Result again = run("expect.yaml");
  EXPECT_EQ(again.code, 3);
  EXPECT_EQ(node(report(), "loud")["status"], "cached");
  // Fixing the expectation from the command line makes the run pass.
  EXPECT_EQ(run("expect.yaml", "--set loud.must_contain=CPU").code, 0);
}

TEST_F(CliTest, BadInputGivesExitTwoWithFileLineAndColumn) {
  Result type = run("bad_type.yaml");
  EXPECT_EQ(type.code, 2);
  EXPECT_NE(type.err.find("bad_type.yaml:4:11"), std::string::npos) << type.err;
  EXPECT_NE(type.err.find("did you mean 'command'"), std::string::npos) << type.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "run.json"));  // nothing ran

  Result param = run("bad_param.yaml");
  EXPECT_EQ(param.code, 2);
  EXPECT_NE(param.err.find("bad_param.yaml:5:"), std::string::npos) << param.err;
  EXPECT_NE(param.err.find("timeout_s"), std::string::npos) << param.err;

  Result cycle = run("cycle.yaml");
  EXPECT_EQ(cycle.code, 2);
  EXPECT_NE(cycle.err.find("cycle"), std::string::npos) << cycle.err;

  Result missing = run("no_such_file.yaml");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no_such_file.yaml"), std::string::npos) << missing.err;

  EXPECT_EQ(run("demo.yaml", "--only no_such_node").code, 2);
  EXPECT_EQ(run("demo.yaml", "--force no_such_node").code, 2);
  EXPECT_EQ(run("demo.yaml", "--set make_a.no_such_param=1").code, 2);
  Result backend = run("demo.yaml", "--backend quantum");
  EXPECT_EQ(backend.code, 2);
  EXPECT_NE(backend.err.find("quantum"), std::string::npos) << backend.err;
  EXPECT_EQ(aispflow("run demo.yaml --no-such-option").code, 2);
  EXPECT_EQ(aispflow("frobnicate").code, 2);
  // Never a stack trace or an abort, whatever the input.
  for (const auto& r : {type, param, cycle, missing, backend}) {
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos);
    EXPECT_EQ(r.err.find("what():"), std::string::npos);
  }
}

TEST_F(CliTest, DryRunPrintsThePlanAndRunsNothing) {
  Result r = run("demo.yaml", "--dry-run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("make_a"), std::string::npos);
  EXPECT_NE(r.out.find("would run: no cache entry"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would run: depends on make_a, which will re-run"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "run.json"));
  EXPECT_TRUE(aispflow("cache ls --cache cache").out.find("0 entries") != std::string::npos);
  EXPECT_EQ(run("bad_type.yaml", "--dry-run").code, 2);
}

TEST_F(CliTest, ExplainSaysWhyANodeWouldRun) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  Result r = aispflow("explain demo.yaml join make_b --cache cache --set 'make_a.run=echo A'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("join"), std::string::npos);
  EXPECT_NE(r.out.find("would run: depends on make_a, which will re-run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("make_b  cached (same inputs)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("per_size"), std::string::npos) << r.out;  // only what was asked
  Result all = aispflow("explain demo.yaml --cache cache --set 'make_a.run=echo A'");
  EXPECT_NE(all.out.find("would run: params changed: run"), std::string::npos) << all.out;
  EXPECT_EQ(aispflow("explain demo.yaml nope --cache cache").code, 2);
}

TEST_F(CliTest, OnlyFromAndUntilSelectNodes) {
  ASSERT_EQ(run("demo.yaml", "--only make_a").code, 0);
  EXPECT_EQ(report()["nodes"].size(), 1u);
  ASSERT_EQ(run("demo.yaml", "--until join").code, 0);
  EXPECT_EQ(report()["nodes"].size(), 3u);
  ASSERT_EQ(run("demo.yaml", "--from per_size").code, 0);
  EXPECT_EQ(report()["nodes"].size(), 4u);
  EXPECT_EQ(node(report(), "gather")["status"], "ran");
}

TEST_F(CliTest, ForceAndNoCache) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  ASSERT_EQ(run("demo.yaml", "--force make_a").code, 0);
  EXPECT_EQ(node(report(), "make_a")["reason"], "forced");
  EXPECT_EQ(node(report(), "join")["status"], "cached");  // same output: early cutoff
  ASSERT_EQ(run("demo.yaml", "--force-all").code, 0);
  const json forced = report();
  ASSERT_EQ(forced["nodes"].size(), 7u);
  for (const auto& n : forced["nodes"]) EXPECT_EQ(n["reason"], "forced");
  Result r = aispflow("run demo.yaml --no-cache --cache fresh --out out");
  ASSERT_EQ(r.code, 0) << r.err;
  const json uncached = report();
  ASSERT_EQ(uncached["nodes"].size(), 7u);
  for (const auto& n : uncached["nodes"]) EXPECT_EQ(n["status"], "ran");
  EXPECT_EQ(read_file(dir_ / "out/nodes/join/ab.txt"), "a\nb\n");
  EXPECT_NE(aispflow("cache ls --cache fresh").out.find("0 entries"), std::string::npos);
}

TEST_F(CliTest, ForcedNodeReplacesItsEntryAndItsOutput) {
  std::ofstream(dir_ / "stamp.yaml") << "nodes:\n  stamp:\n    type: command\n"
                                        "    params: {run: \"date +%s%N > $AISPFLOW_OUT/t.txt\"}\n";
  ASSERT_EQ(run("stamp.yaml").code, 0);
  const std::string first = read_file(dir_ / "out/nodes/stamp/t.txt");
  ASSERT_EQ(run("stamp.yaml", "--force stamp").code, 0);
  const std::string forced_digest = node(report(), "stamp")["digest"];
  const std::string second = read_file(dir_ / "out/nodes/stamp/t.txt");
  EXPECT_NE(second, first) << "--out must show the forced run's output, not the old entry's";
  ASSERT_EQ(run("stamp.yaml").code, 0);
  EXPECT_EQ(node(report(), "stamp")["status"], "cached");
  EXPECT_EQ(node(report(), "stamp")["digest"], forced_digest) << "the cache holds the forced run's result";
  EXPECT_EQ(read_file(dir_ / "out/nodes/stamp/t.txt"), second);
}

TEST_F(CliTest, CacheHitKeepsItsEntryReferencedForGcAndWhy) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  ASSERT_EQ(run("demo.yaml", "--set 'make_a.run=echo A > $AISPFLOW_OUT/a.txt'").code, 0);
  ASSERT_EQ(run("demo.yaml").code, 0);  // back to the original params: cache hits
  EXPECT_EQ(node(report(), "make_a")["status"], "cached");
  // The hit was recorded as make_a's latest use: gc keeps it, and a change is explained against it.
  ASSERT_EQ(aispflow("cache gc --cache cache").code, 0);
  ASSERT_EQ(run("demo.yaml").code, 0);
  for (const auto& n : report()["nodes"]) EXPECT_EQ(n["status"], "cached") << n;
  Result why = aispflow("explain demo.yaml make_a --cache cache --set 'make_a.run=echo B > $AISPFLOW_OUT/a.txt'");
  EXPECT_NE(why.out.find("params changed: run echo a > $AISPFLOW_OUT/a.txt → echo B"), std::string::npos) << why.out;
}

TEST_F(CliTest, IndependentCommandsRunInParallel) {
  auto t0 = std::chrono::steady_clock::now();
  Result r = run("parallel.yaml", "--jobs 4");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err;
  double sum = 0;
  const json rep = report();  // (a range-for over report()["nodes"] would iterate a destroyed temporary)
  ASSERT_EQ(rep["nodes"].size(), 4u);
  for (const auto& n : rep["nodes"]) sum += n["seconds"].get<double>();
  EXPECT_GE(sum, 1.6);        // each node really slept 0.4 s...
  EXPECT_LT(wall, 0.75 * sum);  // ...and they overlapped (1.6 s one after another)
}

TEST_F(CliTest, GpuNodeIsSkippedOnTheCpuBackendWithTheReason) {
  Result r = run("gpu.yaml", "--backend cpu");
  EXPECT_EQ(r.code, 0) << r.err;
  json rep = report();
  EXPECT_EQ(node(rep, "on_gpu")["status"], "skipped");
  EXPECT_EQ(node(rep, "on_gpu")["reason"], "needs 1 gpu, this machine has 0");
  EXPECT_EQ(node(rep, "after_gpu")["reason"], "upstream on_gpu skipped");
  EXPECT_EQ(node(rep, "on_cpu")["status"], "ran");
  EXPECT_EQ(rep["backend"], "cpu");
}

TEST_F(CliTest, ValidateSaysWhatThisMachineCanRun) {
  Result r = aispflow("validate gpu.yaml --backend cpu");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid workflow 'needs_gpu', 3 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot run on this machine (would be skipped): needs 1 gpu, this machine has 0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("on_cpu"), std::string::npos);
  EXPECT_EQ(aispflow("validate bad_type.yaml").code, 2);
}

TEST_F(CliTest, GraphPrintsDot) {
  Result r = aispflow("graph demo.yaml");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("digraph", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\"make_a\" -> \"join\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"per_size[size=4]\" -> \"gather\""), std::string::npos) << r.out;
}

TEST_F(CliTest, NodesListsTypesWithTheirParams) {
  Result all = aispflow("nodes");
  EXPECT_EQ(all.code, 0);
  EXPECT_NE(all.out.find("command"), std::string::npos);
  EXPECT_NE(all.out.find("hello"), std::string::npos);
  Result one = aispflow("nodes command");
  EXPECT_EQ(one.code, 0);
  EXPECT_NE(one.out.find("timeout_s  number, optional"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("run        string, required"), std::string::npos) << one.out;
  json j = json::parse(aispflow("nodes hello --json").out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["params"][0]["name"], "name");
  EXPECT_EQ(j[0]["params"][0]["default"], "world");
  Result unknown = aispflow("nodes helo");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'hello'"), std::string::npos) << unknown.err;
}

TEST_F(CliTest, CacheLsGcClear) {
  ASSERT_EQ(run("demo.yaml").code, 0);
  Result ls = aispflow("cache ls --cache cache");
  EXPECT_EQ(ls.code, 0);
  EXPECT_NE(ls.out.find("7 entries"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("demo/join"), std::string::npos) << ls.out;
  // A --set run makes make_a's and join's old entries unreferenced: gc removes exactly those.
  ASSERT_EQ(run("demo.yaml", "--set 'make_a.run=echo A > $AISPFLOW_OUT/a.txt'").code, 0);
  Result gc = aispflow("cache gc --cache cache");
  EXPECT_EQ(gc.code, 0);
  EXPECT_NE(gc.out.find("removed 2 unreferenced entries and 1 leftover"), std::string::npos) << gc.out;
  // AISPFLOW_CACHE is the default cache directory.
  EXPECT_NE(aispflow("cache ls", "AISPFLOW_CACHE=cache").out.find("7 entries"), std::string::npos);
  EXPECT_EQ(aispflow("cache clear --cache cache").code, 0);
  EXPECT_NE(aispflow("cache ls --cache cache").out.find("0 entries"), std::string::npos);
  EXPECT_EQ(aispflow("cache explode").code, 2);
}

TEST_F(CliTest, TimeoutKillsTheCommand) {
  auto t0 = std::chrono::steady_clock::now();
  Result r = run("slow.yaml", "--only timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(node(report(), "timeout")["error"], "timed out after 0.3 s");
}

TEST_F(CliTest, CtrlCStopsTheRunKillsCommandsAndExits130) {
  const std::string cmd = "cd " + quote(dir_.string()) + " && exec " + quote(AISPFLOW_BIN) +
                          " run slow.yaml --only slow --only after --cache cache --out out > out.txt 2> err.txt";
  pid_t pid = 0;
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  // Wait until the command is running (it writes its pid), then press Ctrl-C.
  const fs::path pid_file = dir_ / "slow.pid";
  for (int i = 0; i < 200 && (!fs::exists(pid_file) || fs::file_size(pid_file) == 0); ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(fs::exists(pid_file)) << "the command never started";
  std::this_thread::sleep_for(100ms);
  const pid_t command_pid = std::stoi(read_file(pid_file));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  json rep = report();
  EXPECT_EQ(rep["exit_code"], 130);
  EXPECT_EQ(node(rep, "slow")["status"], "failed");
  EXPECT_EQ(node(rep, "slow")["error"], "interrupted");
  EXPECT_EQ(node(rep, "after")["status"], "skipped");
  // The command's process (its own process group) was terminated.
  std::this_thread::sleep_for(100ms);
  EXPECT_NE(::kill(command_pid, 0), 0) << "the command is still running";
}

TEST_F(CliTest, HelpDocumentsExitCodesAndVersionWorks) {
  Result help = aispflow("--help");
  EXPECT_EQ(help.code, 0);
  for (const char* text : {"run", "validate", "graph", "explain", "nodes", "cache", "Exit codes", "130",
                           "expectations not met", "bad input"})
    EXPECT_NE(help.out.find(text), std::string::npos) << text;
  Result version = aispflow("--version");
  EXPECT_EQ(version.code, 0);
  EXPECT_NE(version.out.find("aispflow"), std::string::npos);
}

TEST_F(CliTest, HwDescribesTheCpuBackend) {
  Result r = aispflow("hw --json --backend cpu");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_TRUE(j.is_object());
  EXPECT_FALSE(j.empty());
  // The fingerprint the cache keys use, as docs/cli.md promises for every backend.
  ASSERT_TRUE(j.contains("fingerprint")) << r.out;
  EXPECT_TRUE(j["fingerprint"].contains("cpu_model")) << j["fingerprint"].dump();
  EXPECT_TRUE(j["fingerprint"].contains("build_id")) << j["fingerprint"].dump();
  EXPECT_EQ(aispflow("hw --backend quantum").code, 2);
}

}  // namespace
