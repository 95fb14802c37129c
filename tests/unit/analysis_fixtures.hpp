#pragma once
// Test helpers for the analysis nodes (expect, roofline, compare): run a node type on hand-made input
// artifacts in a scratch directory, without the engine, the cache or a backend.
#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "kernels/common/gemm.hpp"
#include "pipeline/node_type.hpp"

namespace aispflow::testing {

namespace fs = std::filesystem;

class NodeHarness {
 public:
  explicit NodeHarness(const std::string& label) {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("aispflow-" + label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
    ctx.node_name = label;
    ctx.out_dir = dir_ / "out";
    ctx.workflow_dir = dir_;
    ctx.log = [this](const std::string& s) { log += s + "\n"; };
  }
  ~NodeHarness() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  NodeHarness(const NodeHarness&) = delete;
  NodeHarness& operator=(const NodeHarness&) = delete;

  // An upstream node's artifact, seen by the node under test as input `name`.
  void add_input(const std::string& name, json data) {
    Artifact& a = artifacts_.emplace_back();
    a.set_data(std::move(data));
    ctx.inputs.push_back(NodeInput{name, name, &a});
  }

  // A file next to the (imaginary) workflow; returns its path relative to the workflow dir.
  std::string write_file(const std::string& relative, const std::string& content) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative, std::ios::binary) << content;
    return relative;
  }
  std::string read_file(const fs::path& relative_to_dir) const {
    std::ifstream in(dir_ / relative_to_dir, std::ios::binary);
    std::stringstream b;
    b << in.rdbuf();
    return b.str();
  }
  std::string read_output(const std::string& name) const { return read_file(fs::path("out") / name); }
  bool output_exists(const std::string& name) const { return fs::exists(dir_ / "out" / name); }
  const fs::path& dir() const { return dir_; }

  NodeOutput run(const NodeType& type, json params) {
    ctx.params = std::move(params);
    return type.run(ctx);
  }

  NodeContext ctx;
  std::string log;

 private:
  fs::path dir_;
  std::deque<Artifact> artifacts_;   // stable addresses for NodeInput::artifact
};

// A record in the docs/records.md schema. tflops <= 0 leaves the timing fields out (as for failed/skipped).
inline json make_record(const std::string& provider, const std::string& shape, std::int64_t m, std::int64_t n,
                        std::int64_t k, const std::string& dtype, double tflops, const std::string& status = "ok",
                        const std::string& reason = "") {
  kernels::GemmShape s;
  s.name = shape;
  s.m = m;
  s.n = n;
  s.k = k;
  json r = {{"provider", provider}, {"kernel", provider + " test kernel"}, {"shape", s.to_json()},
            {"dtype", dtype},       {"status", status},                   {"verified", status == "ok"},
            {"max_rel_err", 1e-7},  {"tolerance", 1e-4},                  {"env", {{"cpu_model", "Test CPU 9000"}}}};
  if (kernels::operand_bytes(dtype)) r["intensity"] = kernels::intensity(s, dtype);
  if (!reason.empty()) r["reason"] = reason;
  if (status == "ok" && tflops > 0) {
    const double ms = s.flops() / (tflops * 1e12) * 1e3;
    r["tflops"] = tflops;
    r["time_ms"] = {{"median", ms}, {"min", ms * 0.98}, {"max", ms * 1.05}, {"stdrel", 0.01}};
    r["samples"] = 10;
    if (kernels::operand_bytes(dtype)) r["gbytes_per_s"] = kernels::compulsory_bytes(s, dtype) / (ms * 1e-3) / 1e9;
  }
  return r;
}

inline json sweep_artifact(json records) { return {{"records", std::move(records)}, {"env", {{"cpu_model", "Test CPU 9000"}}}}; }

}  // namespace aispflow::testing
