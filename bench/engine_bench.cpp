// Engine scheduling overhead: drives the Executor in-process over 10,000 no-op nodes in the in-memory
// mode (no cache, no directories, no processes), so what is measured is the engine itself: the flow
// graph, per-node decisions (params completion, requirements), resource bookkeeping, the node call and
// the in-memory artifact with its digest.
//
//   engine_bench [--nodes N] [--repeats R] [--jobs J]      prints one JSON document
//   engine_bench --fs-probe DIR     time of creating a directory with one empty file in it, in DIR (us):
//                                   context for the whole-process numbers, which create a few per node
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/dag.hpp"
#include "pipeline/executor.hpp"
#include "pipeline/registry.hpp"
#include "pipeline/workflow.hpp"

namespace {

using namespace aispflow;
using Clock = std::chrono::steady_clock;

class NoopNode : public NodeType {
 public:
  std::string name() const override { return "noop"; }
  std::string doc() const override { return "does nothing; returns its `value`"; }
  std::vector<ParamSpec> params() const override { return {{"value", ParamKind::integer, 0, false, ""}}; }
  NodeOutput run(NodeContext& ctx) const override {
    NodeOutput out;
    out.data["value"] = ctx.params["value"];
    return out;
  }
};

class BenchMachine : public Environment {
 public:
  std::string backend_name() const override { return "bench"; }
  json fingerprint() const override { return json::object(); }
  int resource_total(const std::string&) const override { return 0; }
  std::optional<std::string> unmet(const Requirements&) const override { return std::nullopt; }
};

NodeDecl noop(const std::string& name, int value) {
  NodeDecl n;
  n.name = n.declared_name = name;
  n.type = "noop";
  n.params = {{"value", value}};
  n.loc = SourceLoc{"bench", 0, 0};
  return n;
}

// Independent nodes: only the scheduler and the per-node work, no dependency bookkeeping.
Workflow independent(int nodes) {
  Workflow w;
  w.name = "independent";
  w.file = "/bench/independent.yaml";
  for (int i = 0; i < nodes; ++i) w.nodes.push_back(noop("n" + std::to_string(i), i));
  return w;
}

// Layers of 100 nodes, each reading 3 nodes of the layer before: dependency counting and successor
// release on every node.
Workflow layered(int nodes) {
  Workflow w;
  w.name = "layered";
  w.file = "/bench/layered.yaml";
  const int width = 100;
  for (int i = 0; i < nodes; ++i) {
    NodeDecl n = noop("n" + std::to_string(i), i);
    if (i >= width) {
      const int base = (i / width - 1) * width;
      for (int k = 0; k < 3; ++k) {
        std::string up = "n" + std::to_string(base + (i * 7 + k * 31) % width);
        if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](const InputDecl& d) { return d.node == up; }))
          n.inputs.push_back(InputDecl{up, up, SourceLoc{}});
      }
    }
    w.nodes.push_back(std::move(n));
  }
  return w;
}

double cpu_seconds() {  // user + system time of the whole process (all threads)
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

json measure(const Workflow& w, const Registry& registry, int jobs, int repeats) {
  Dag dag(w);
  BenchMachine machine;
  std::vector<double> per_node_us, cpu_per_node_us;
  for (int r = 0; r < repeats + 1; ++r) {  // the first repetition warms up (allocator, TBB threads)
    EnvironmentSource env(machine);
    Executor executor(w, dag, registry, env, nullptr);
    ExecOptions options;
    options.in_memory = true;
    options.jobs = jobs;
    const double cpu0 = cpu_seconds();
    const auto t0 = Clock::now();
    RunSummary s = executor.run(options);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    if (s.exit_code != 0 || s.nodes.size() != w.nodes.size()) {
      std::fprintf(stderr, "engine_bench: the run failed (exit %d)\n", s.exit_code);
      std::exit(1);
    }
    if (r > 0) {
      per_node_us.push_back(seconds * 1e6 / static_cast<double>(w.nodes.size()));
      cpu_per_node_us.push_back(cpu * 1e6 / static_cast<double>(w.nodes.size()));
    }
  }
  Stats st = stats(per_node_us), cpu = stats(cpu_per_node_us);
  return {{"graph", w.name}, {"nodes", w.nodes.size()}, {"jobs", jobs}, {"repeats", repeats},
          {"us_per_node", {{"median", st.median}, {"min", st.min}, {"max", st.max},
                           {"spread_pct", 100.0 * (st.max - st.min) / st.median}}},
          // CPU time of all threads: idle TBB workers spin a little, so with jobs > 1 this is an upper bound.
          {"cpu_us_per_node", {{"median", cpu.median}, {"min", cpu.min}, {"max", cpu.max}}},
          {"samples_us_per_node", per_node_us}};
}

}  // namespace

// Median over 5 rounds of 2,000 (mkdir + create an empty file), in microseconds.
int fs_probe(const std::string& dir) {
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const std::string base = dir + "/aispflow-fs-probe-" + std::to_string(::getpid()) + "-" + std::to_string(r);
    if (::mkdir(base.c_str(), 0755) != 0) {
      std::perror(base.c_str());
      return 1;
    }
    const int n = 2000;
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      const std::string d = base + "/d" + std::to_string(i);
      ::mkdir(d.c_str(), 0755);
      ::close(::open((d + "/f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    }
    rounds.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e6 / n);
    for (int i = 0; i < n; ++i) {
      const std::string d = base + "/d" + std::to_string(i);
      ::unlink((d + "/f").c_str());
      ::rmdir(d.c_str());
    }
    ::rmdir(base.c_str());
  }
  std::printf("%.1f\n", stats(rounds).median);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && !std::strcmp(argv[1], "--fs-probe")) return fs_probe(argv[2]);
  int nodes = 10000, repeats = 7;
  std::vector<int> jobs_list = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) jobs_list = {std::atoi(argv[i + 1])};
  }
  Registry registry;
  registry.add(std::make_unique<NoopNode>());
  json results = json::array();
  for (const Workflow& w : {independent(nodes), layered(nodes)})
    for (int jobs : jobs_list) results.push_back(measure(w, registry, jobs, repeats));
  std::printf("%s\n", json{{"benchmark", "engine scheduling overhead (in-memory no-op nodes), wall time per node"},
                           {"target_us_per_node", 10},
                           {"results", results}}
                          .dump(2)
                          .c_str());
  return 0;
}
