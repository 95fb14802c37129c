// `aispflow run --executor slurm` on a real one-node Slurm cluster on localhost (tests/support/local_slurm.sh):
// a 30-node workflow gives the same artifacts as a local run and keeps dependency order; a job killed with
// scancel fails its node (Slurm's state and log in the error), its dependents are skipped, the rest
// finish; a driver killed with SIGKILL and run again resubmits nothing that finished (and adopts jobs
// still running); the controller being away is a clear error before anything is submitted. Every test
// skips, with the reason, where the cluster cannot start.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/local_slurm.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using aispflow::test::quote;
using aispflow::test::read_file;
using Result = aispflow::test::CommandResult;

std::string why(const Result& r) { return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

// Command nodes go to Slurm (by default only hardware-bound ones do); a fast poll keeps the tests short.
const char* kExecutor = R"(executor:
  slurm:
    poll_interval_s: 0.1
    types:
      command: {where: slurm}
)";

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& cluster = aispflow::test::LocalSlurm::instance();
    if (!cluster.problem().empty()) GTEST_SKIP() << cluster.problem();
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-slurm-" + std::to_string(rd()));
    fs::create_directories(dir_ / "locks");
    // The jobs inherit it (sbatch exports the environment): measuring nodes of this test never wait for
    // another run's measurement on a shared machine, nor hold up one.
    ::setenv("AISPFLOW_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string command(const std::string& args, const std::string& cache = "cache", const std::string& out = "out") {
    return "timeout 300 " + quote(AISPFLOW_BIN) + " run " + args + " --backend cpu --progress lines --cache " + cache +
           " --out " + out;
  }
  Result run(const std::string& args, const std::string& cache = "cache", const std::string& out = "out") {
    return aispflow::test::run_in(dir_, command(args, cache, out));
  }
  json report(const std::string& out = "out") { return json::parse(read_file(dir_ / out / "run.json")); }
  static std::map<std::string, json> by_name(const json& report) {
    std::map<std::string, json> nodes;
    for (const auto& n : report["nodes"]) nodes[n["name"].get<std::string>()] = n;
    return nodes;
  }
  fs::path dir_;
};

// 10 generators -> a sum -> 10 multiples -> a chain of 8 -> a final join: 30 nodes, 13 levels deep.
std::string thirty_node_workflow() {
  std::string wf = "name: thirty\nnodes:\n";
  wf += "  gen:\n    type: command\n    matrix: {i: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"
        "    params: {run: \"echo ${matrix.i} > $AISPFLOW_OUT/v.txt\"}\n";
  wf += "  sum:\n    type: command\n    inputs: [gen]\n"
        "    params: {run: \"cat $AISPFLOW_IN_DIR/*/v.txt | awk '{s+=$1} END {print s}' > $AISPFLOW_OUT/v.txt\"}\n";
  wf += "  mul:\n    type: command\n    inputs: [sum]\n    matrix: {k: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n"
        "    params: {run: \"echo $(( $(cat $AISPFLOW_IN_SUM/v.txt) * ${matrix.k} )) > $AISPFLOW_OUT/v.txt\"}\n";
  std::string previous = "mul";
  for (int c = 1; c <= 8; ++c) {
    const std::string name = "chain" + std::to_string(c);
    wf += "  " + name + ":\n    type: command\n    inputs: {up: " + previous + "}\n"
          "    params: {run: \"cat $AISPFLOW_IN_DIR/*/v.txt | awk '{s+=$1} END {print s+" + std::to_string(c) +
          "}' > $AISPFLOW_OUT/v.txt\"}\n";
    previous = name;
  }
  wf += "  final:\n    type: command\n    inputs: [chain8, sum]\n"
        "    params: {run: \"cat $AISPFLOW_IN_CHAIN8/v.txt $AISPFLOW_IN_SUM/v.txt > $AISPFLOW_OUT/v.txt\"}\n";
  return wf;
}

TEST_F(SlurmTest, ThirtyNodesGiveTheLocalOutputsInDependencyOrder) {
  write("thirty.yaml", thirty_node_workflow() + kExecutor);
  Result local = run("thirty.yaml", "cache-local", "out-local");
  ASSERT_EQ(local.code, 0) << why(local);
  Result slurm = run("thirty.yaml --executor slurm");
  ASSERT_EQ(slurm.code, 0) << why(slurm);

  auto local_nodes = by_name(report("out-local"));
  json slurm_report = report();
  auto nodes = by_name(slurm_report);
  ASSERT_EQ(nodes.size(), 30u);
  std::set<std::string> job_ids;
  for (const auto& [name, n] : nodes) {
    EXPECT_EQ(n["status"], "ran") << name;
    EXPECT_EQ(n["digest"], local_nodes.at(name)["digest"]) << name << ": Slurm and local outputs differ";
    EXPECT_EQ(n.value("executor", ""), "slurm") << name;
    ASSERT_TRUE(n.contains("slurm")) << name;
    EXPECT_FALSE(n["slurm"]["job_id"].get<std::string>().empty()) << name;
    EXPECT_EQ(n["slurm"]["state"], "COMPLETED") << name;
    EXPECT_FALSE(n["slurm"]["host"].get<std::string>().empty()) << name;
    for (const char* field : {"submitted_at", "started_at", "finished_at"}) EXPECT_TRUE(n["slurm"].contains(field)) << name;
    job_ids.insert(n["slurm"]["job_id"].get<std::string>());
  }
  EXPECT_EQ(job_ids.size(), 30u) << "one job per node";
  EXPECT_EQ(read_file(dir_ / "out" / "nodes" / "final" / "v.txt"), read_file(dir_ / "out-local" / "nodes" / "final" / "v.txt"));

  // Dependency order: a node's job started after every upstream job had finished (both times are the
  // jobs' own clocks, on this one host).
  auto after = [&](const std::string& up, const std::string& down) {
    EXPECT_LE(nodes[up]["finished_at"].get<std::string>(), nodes[down]["started_at"].get<std::string>())
        << down << " started before " << up << " finished";
  };
  for (int i = 0; i < 10; ++i) after("gen[i=" + std::to_string(i) + "]", "sum");
  for (int k = 1; k <= 10; ++k) {
    after("sum", "mul[k=" + std::to_string(k) + "]");
    after("mul[k=" + std::to_string(k) + "]", "chain1");
  }
  for (int c = 1; c < 8; ++c) after("chain" + std::to_string(c), "chain" + std::to_string(c + 1));
  after("chain8", "final");

  // Run again: everything is cached, nothing is submitted.
  Result again = run("thirty.yaml --executor slurm");
  ASSERT_EQ(again.code, 0) << why(again);
  for (const auto& [name, n] : by_name(report())) EXPECT_EQ(n["status"], "cached") << name;
}

std::string running_job(const fs::path& dir, const std::string& node) {
  auto q = aispflow::test::run_in(dir, "squeue -h -t running --name=aispflow:" + node + " -o %i");
  return q.out.substr(0, q.out.find('\n'));
}

TEST_F(SlurmTest, ScancelledJobFailsItsNodeAndTheRestFinish) {
  write("cancel.yaml", std::string("name: cancel\nnodes:\n"
                                   "  slow:\n    type: command\n    params: {run: \"echo started; sleep 120\"}\n"
                                   "  after_slow:\n    type: command\n    inputs: [slow]\n    params: {run: \"true\"}\n"
                                   "  quick:\n    type: command\n    matrix: {i: [1, 2, 3]}\n"
                                   "    params: {run: \"echo ${matrix.i} > $AISPFLOW_OUT/v.txt\"}\n"
                                   "  after_quick:\n    type: command\n    inputs: [quick]\n    params: {run: \"true\"}\n") +
                       kExecutor);
  const std::string line = "cd " + quote(dir_.string()) + " && " + command("cancel.yaml --executor slurm") +
                           " > out.txt 2> err.txt";
  std::thread driver([&] { std::system(line.c_str()); });
  // Wait for the slow job to run, then cancel it as a user (or an admin) would.
  std::string id;
  for (int i = 0; i < 600 && id.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto q = aispflow::test::run_in(dir_, "squeue -h -t running --name=aispflow:slow -o %i");
    id = q.out.substr(0, q.out.find('\n'));
  }
  ASSERT_FALSE(id.empty()) << "the slow job never ran";
  // scancel until Slurm has it (a loaded controller may time out on one request).
  for (int i = 0; i < 20 && !running_job(dir_, "slow").empty(); ++i) {
    std::system(("scancel " + id).c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  driver.join();
  Result r{0, read_file(dir_ / "out.txt"), read_file(dir_ / "err.txt")};
  auto nodes = by_name(report());
  EXPECT_EQ(report()["exit_code"], 1) << r.err;
  EXPECT_EQ(nodes["slow"]["status"], "failed");
  const std::string error = nodes["slow"]["error"];
  EXPECT_NE(error.find("CANCELLED"), std::string::npos) << error;
  EXPECT_NE(error.find("CANCELLED AT"), std::string::npos) << "the tail of the job's log: " << error;
  EXPECT_EQ(nodes["slow"]["slurm"]["job_id"], id);
  EXPECT_EQ(nodes["after_slow"]["status"], "skipped");
  for (const char* name : {"quick[i=1]", "quick[i=2]", "quick[i=3]", "after_quick"}) EXPECT_EQ(nodes[name]["status"], "ran") << name;
}

// Each node appends a line to its own file when it runs: a node that ran twice has two lines.
std::string counted_workflow() {
  std::string wf = "name: counted\nnodes:\n";
  for (int i = 1; i <= 6; ++i)
    wf += "  n" + std::to_string(i) + ":\n    type: command\n    params: {run: \"echo ran >> " +
          "$COUNT_DIR/n" + std::to_string(i) + "; sleep " + std::to_string(i == 1 ? 0 : 2 * i) +
          "; echo " + std::to_string(i) + " > $AISPFLOW_OUT/v.txt\"}\n";
  wf += "  join:\n    type: command\n    inputs: [n1, n2, n3, n4, n5, n6]\n    params: {run: \"echo ran >> $COUNT_DIR/join\"}\n";
  return wf + kExecutor;
}

TEST_F(SlurmTest, DriverKilledMidRunThenRerunResubmitsNothingThatFinished) {
  write("counted.yaml", counted_workflow());
  fs::create_directories(dir_ / "count");
  const std::string env = "COUNT_DIR=" + quote((dir_ / "count").string()) + " ";
  const pid_t driver = ::fork();
  if (driver == 0) {
    const std::string line = "cd " + quote(dir_.string()) + " && exec env " + env + command("counted.yaml --executor slurm") +
                             " > out1.txt 2> err1.txt";
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Kill the driver once n1 has finished and n2..n6 are on their way (their jobs keep running).
  bool n1_done = false;
  for (int i = 0; i < 600 && !n1_done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    n1_done = read_file(dir_ / "out1.txt").find("n1") != std::string::npos;
  }
  ASSERT_TRUE(n1_done) << read_file(dir_ / "err1.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // `exec` made the shell the driver itself; timeout(1) forwards nothing on SIGKILL of its child, so kill
  // the aispflow process under it.
  aispflow::test::run_in(dir_, "kill -KILL $(pgrep -P " + std::to_string(driver) + " -x aispflow)");
  ::kill(driver, SIGKILL);
  int status = 0;
  ::waitpid(driver, &status, 0);

  Result again = aispflow::test::run_in(dir_, "env " + env + command("counted.yaml --executor slurm"));
  ASSERT_EQ(again.code, 0) << why(again);
  auto nodes = by_name(report());
  EXPECT_EQ(nodes["n1"]["status"], "cached") << "n1 had finished before the driver died";
  int adopted = 0;
  for (int i = 1; i <= 6; ++i) {
    const std::string name = "n" + std::to_string(i);
    EXPECT_EQ(read_file(dir_ / "count" / name), "ran\n") << name << " ran more than once (or never)";
    if (nodes[name].contains("slurm") && nodes[name]["slurm"].value("adopted", false)) ++adopted;
  }
  EXPECT_GE(adopted, 1) << "jobs still running when the driver died are adopted, not submitted again";
  EXPECT_EQ(read_file(dir_ / "count" / "join"), "ran\n");
}

// Starts `aispflow run ARGS` in dir_ as a child process of this test (no shell, no timeout(1) in between),
// so that a signal sent to the returned PID reaches the driver itself.
pid_t start_driver(const fs::path& dir, const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) _exit(127);
    std::FILE* out = std::freopen(log.c_str(), "w", stdout);
    std::FILE* err = std::freopen((log + ".err").c_str(), "w", stderr);
    (void)out;
    (void)err;
    std::vector<char*> argv = {const_cast<char*>(AISPFLOW_BIN)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(AISPFLOW_BIN, argv.data());
    _exit(127);
  }
  return pid;
}

TEST_F(SlurmTest, SigintCancelsTheJobsAndLeavesTheCacheIntact) {
  write("stop.yaml", std::string("name: stop\nnodes:\n"
                                 "  held:\n    type: command\n    params: {run: \"sleep 120\"}\n"
                                 "  quick:\n    type: command\n    params: {run: \"echo q > $AISPFLOW_OUT/v.txt\"}\n") +
                     kExecutor);
  const pid_t driver = start_driver(dir_, {"run", "stop.yaml", "--executor", "slurm", "--backend", "cpu", "--progress",
                                           "lines", "--cache", "cache", "--out", "out"}, "driver.txt");
  std::string id;
  for (int i = 0; i < 600 && id.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (read_file(dir_ / "driver.txt").find("[ran] quick") != std::string::npos) id = running_job(dir_, "held");
  }
  ASSERT_FALSE(id.empty()) << "the held job never ran: " << read_file(dir_ / "driver.txt.err");
  ::kill(driver, SIGINT);
  int status = 0;
  ::waitpid(driver, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_file(dir_ / "driver.txt.err");
  auto nodes = by_name(report());
  EXPECT_EQ(nodes["held"]["status"], "skipped");
  EXPECT_NE(nodes["held"]["reason"].get<std::string>().find("interrupted (Slurm job " + id + " cancelled)"), std::string::npos)
      << nodes["held"]["reason"];
  // The job is gone from the cluster (cancelled, not left running for nobody).
  auto q = aispflow::test::run_in(dir_, "squeue -h -t pending,running -j " + id + " -o %T");
  EXPECT_EQ(q.out, "") << "job " << id << " still " << q.out;
  // The cache is intact: quick stays cached, held (now quick itself) runs.
  Result again = run("stop.yaml --executor slurm --set \"held.run=echo fast\"");
  ASSERT_EQ(again.code, 0) << why(again);
  auto after = by_name(report());
  EXPECT_EQ(after["quick"]["status"], "cached");
  EXPECT_EQ(after["held"]["status"], "ran");
}

// A fleet study: one hardware-bound node type on two partitions. Each partition's node is keyed with the
// compute node's fingerprint by its own job and keeps its own record; a re-run finds both without
// submitting anything.
TEST_F(SlurmTest, HardwareBoundNodesOnTwoPartitionsKeepTheirOwnRecords) {
  const std::string sweep = "    type: gemm_sweep\n    params: {providers: [cpu.naive], shapes: [{name: t, m: 16, n: 16, k: 16}], "
                            "timing: {min_samples: 3, max_samples: 5, budget_s: 0.05}}\n";
  write("fleet.yaml", "name: fleet\nnodes:\n  on_debug:\n" + sweep + "  on_second:\n" + sweep +
                          "executor:\n  slurm:\n    poll_interval_s: 0.1\n    nodes:\n"
                          "      on_debug: {partition: debug}\n      on_second: {partition: second}\n");
  Result first = run("fleet.yaml --executor slurm");
  ASSERT_EQ(first.code, 0) << why(first);
  auto nodes = by_name(report());
  EXPECT_EQ(nodes["on_debug"]["slurm"]["partition"], "debug");
  EXPECT_EQ(nodes["on_second"]["slurm"]["partition"], "second");
  EXPECT_NE(nodes["on_debug"]["slurm"]["job_id"], nodes["on_second"]["slurm"]["job_id"]);
  std::size_t records = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "cache" / "slurm"))
    if (e.path().filename() == "result.json") ++records;
  EXPECT_EQ(records, 2u) << "one job record per partition";
  Result again = run("fleet.yaml --executor slurm");
  ASSERT_EQ(again.code, 0) << why(again);
  for (const auto& [name, n] : by_name(report())) {
    EXPECT_EQ(n["status"], "cached") << name;
    EXPECT_NE(n["reason"].get<std::string>().find("Slurm job " + nodes[name]["slurm"]["job_id"].get<std::string>()),
              std::string::npos) << n["reason"];
  }
}

// The mpi all-to-all with `launch: srun`: ranks are the tasks of the job's allocation (ntasks 2 and 4 from the
// executor settings), started by `srun --mpi=pmix`; every element arrives intact.
TEST_F(SlurmTest, MpiAlltoallUnderSrunWithTwoAndFourTasks) {
  const fs::path rank = fs::path(AISPFLOW_BIN).parent_path() / "aispflow-comm-rank";
  if (!fs::exists(rank)) GTEST_SKIP() << "aispflow-comm-rank was not built (MPI not found at build time)";
  if (aispflow::test::run_in(dir_, "command -v srun").code != 0) GTEST_SKIP() << "srun not installed";
  const std::string a2a = "    type: alltoall\n    params: {transport: mpi, launch: srun, sizes: [4096, 65536], "
                          "skews: [0, 1.35], dtypes: [bf16, fp8], warmup: 2, iterations: 30}\n";
  write("a2a.yaml", "name: a2a\nnodes:\n  two:\n" + a2a + "  four:\n" + a2a +
                        "executor:\n  slurm:\n    poll_interval_s: 0.1\n    nodes:\n"
                        "      two: {ntasks: 2}\n      four: {ntasks: 4}\n");
  Result r = run("a2a.yaml --executor slurm");
  ASSERT_EQ(r.code, 0) << why(r);
  for (const auto& [name, ranks] : std::map<std::string, int>{{"two", 2}, {"four", 4}}) {
    json data = json::parse(read_file(dir_ / "out" / "nodes" / name / "artifact.json"))["data"];
    EXPECT_EQ(data["ranks"], ranks) << name;
    EXPECT_EQ(data["launch"], "srun") << name;
    ASSERT_EQ(data["points"].size(), 8u) << name;
    for (const auto& p : data["points"]) {
      EXPECT_EQ(p["wrong"], 0) << name << ": " << p.dump();
      EXPECT_EQ(p["status"], "ok") << name << ": " << p.dump();
    }
  }
  // Two allocations of different shape are two measurements: different cache keys.
  auto nodes = by_name(report());
  EXPECT_NE(nodes["two"]["digest"], nodes["four"]["digest"]);
}

// docs/multinode.md's recipe as it is shipped: examples/slurm/alltoall.sbatch submitted with sbatch --wait.
TEST_F(SlurmTest, SbatchRecipe) {
  const fs::path rank = fs::path(AISPFLOW_BIN).parent_path() / "aispflow-comm-rank";
  if (!fs::exists(rank)) GTEST_SKIP() << "aispflow-comm-rank was not built (MPI not found at build time)";
  const std::string src = AISPFLOW_SOURCE_DIR;
  Result r = aispflow::test::run_in(
      dir_, "AISPFLOW=" + quote(AISPFLOW_BIN) + " WORKFLOW=" + quote(src + "/examples/slurm/alltoall.yaml") +
                " AISPFLOW_CACHE=cache OUT=out timeout 300 sbatch --wait --ntasks=2 " +
                quote(src + "/examples/slurm/alltoall.sbatch"));
  ASSERT_EQ(r.code, 0) << why(r) << "\njob log:\n" << aispflow::test::run_in(dir_, "cat aispflow-alltoall-*.log").out;
  json data = json::parse(read_file(dir_ / "out" / "nodes" / "a2a" / "artifact.json"))["data"];
  EXPECT_EQ(data["ranks"], 2);
  EXPECT_EQ(data["launch"], "srun");
  ASSERT_EQ(data["points"].size(), 4u);
  for (const auto& p : data["points"]) EXPECT_EQ(p["wrong"], 0) << p.dump();
}

// Settings reach sbatch: `sbatch_args` and `partition` of the node; the placeholder GPU reaches the job as
// CUDA_VISIBLE_DEVICES. A partition that does not exist fails that node with sbatch's message; the rest runs.
TEST_F(SlurmTest, SettingsReachSbatchAndARefusedJobFailsItsNode) {
  if (!aispflow::test::LocalSlurm::instance().has_gpus()) GTEST_SKIP() << "the local cluster has no placeholder GPUs";
  write("gres.yaml", std::string("name: gres\nnodes:\n"
                                 "  gpu_job:\n    type: command\n    params: {run: \"echo $CUDA_VISIBLE_DEVICES $SLURM_JOB_PARTITION > $AISPFLOW_OUT/v.txt\"}\n"
                                 "  nowhere:\n    type: command\n    params: {run: \"true\"}\n") +
                     kExecutor + "    nodes:\n      gpu_job: {partition: second, sbatch_args: [--gres=gpu:1]}\n"
                                 "      nowhere: {partition: no_such_partition}\n");
  Result r = run("gres.yaml --executor slurm");
  EXPECT_EQ(r.code, 1) << why(r);
  auto nodes = by_name(report());
  ASSERT_EQ(nodes["gpu_job"]["status"], "ran") << nodes["gpu_job"].dump();
  const std::string seen = read_file(dir_ / "out" / "nodes" / "gpu_job" / "v.txt");
  EXPECT_TRUE(seen == "0 second\n" || seen == "1 second\n") << seen;
  EXPECT_EQ(nodes["nowhere"]["status"], "failed");
  const std::string error = nodes["nowhere"]["error"];
  EXPECT_NE(error.find("sbatch refused the job"), std::string::npos) << error;
  EXPECT_NE(error.find("partition"), std::string::npos) << error;
}

TEST_F(SlurmTest, UnreachableControllerIsAnErrorBeforeAnythingIsSubmitted) {
  write("one.yaml", std::string("name: one\nnodes:\n  a:\n    type: command\n    params: {run: \"true\"}\n") + kExecutor);
  // A config naming a controller nobody listens on.
  std::string conf = read_file(aispflow::test::LocalSlurm::instance().dir() / "slurm.conf");
  const auto port = conf.find("SlurmctldPort=");
  conf.replace(port, conf.find('\n', port) - port, "SlurmctldPort=9");
  write("away.conf", conf);
  Result r = aispflow::test::run_in(dir_, "SLURM_CONF=away.conf " + command("one.yaml --executor slurm"));
  EXPECT_EQ(r.code, 2) << why(r);
  EXPECT_NE(r.err.find("controller does not answer"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "run.json"));
  Result no_sbatch = aispflow::test::run_in(dir_, "env PATH=/nonexistent " + quote(AISPFLOW_BIN) +
                                                      " run one.yaml --executor slurm --cache cache --out out");
  EXPECT_EQ(no_sbatch.code, 2) << why(no_sbatch);
  EXPECT_NE(no_sbatch.err.find("sbatch is not installed"), std::string::npos) << no_sbatch.err;
}

}  // namespace
