// gemm_sweep: a deliberately wrong provider is reported failed and never timed while the right one is ok
// and timed; unsupported and unmet cases become skipped records with their reasons; a provider that claims
// ok without verifying is not believed. A fake backend holds test-local providers; they compute real GEMMs
// through the same CPU harness (verify, then time) the shipped CPU providers use.
#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "kernels/common/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_gemm_run.hpp"
#include "nodes/gemm_sweep.hpp"
#include "nodes/node_factories.hpp"
#include "support/quick_timing.hpp"

namespace aispflow {
namespace {

using kernels::GemmRecord;
using kernels::GemmShape;
using kernels::TimingPolicy;

// A plain triple loop; with `drop_last_k` it skips the last term of every dot product: a subtle bug of
// the kind a tiling edge case produces, small enough that only verification notices it.
class LoopProvider : public kernels::GemmProvider {
 public:
  LoopProvider(std::string name, bool drop_last_k) : name_(std::move(name)), drop_last_k_(drop_last_k) {}
  std::string name() const override { return name_; }
  std::optional<std::string> unsupported(const kernels::GemmCase& c) const override {
    if (c.dtype != "fp32") return c.dtype + " is not supported by " + name_;
    return kernels::unless_plain(name_, c);
  }
  std::vector<GemmRecord> run(const kernels::GemmCase& c, const TimingPolicy& timing) override {
    const GemmShape& shape = c.shape;
    kernels::CpuGemmJob job{name_, "triple loop", shape, c.dtype, timing};
    const std::int64_t m = shape.m, n = shape.n, k = shape.k, k_end = drop_last_k_ ? k - 1 : k;
    return {kernels::run_cpu_gemm(job, [=](const float* a, const float* b, float* c) {
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          float sum = 0;
          for (std::int64_t p = 0; p < k_end; ++p) sum += a[i * k + p] * b[p * n + j];
          c[i * n + j] = sum;
        }
    })};
  }

 private:
  std::string name_;
  bool drop_last_k_;
};

// Says "ok" and hands back a timing without ever having verified anything.
class OverconfidentProvider : public kernels::GemmProvider {
 public:
  std::string name() const override { return "test.overconfident"; }
  std::optional<std::string> unsupported(const kernels::GemmCase&) const override { return std::nullopt; }
  std::vector<GemmRecord> run(const kernels::GemmCase& c, const TimingPolicy&) override {
    GemmRecord r;
    r.provider = name();
    r.shape = c.shape;
    r.dtype = c.dtype;
    r.status = "ok";
    r.verified = false;
    r.time = kernels::summarize({1.0, 1.0, 1.0}, 0.02);
    return {r};
  }
};

class ThrowingProvider : public kernels::GemmProvider {
 public:
  std::string name() const override { return "test.throws"; }
  std::optional<std::string> unsupported(const kernels::GemmCase&) const override { return std::nullopt; }
  std::vector<GemmRecord> run(const kernels::GemmCase&, const TimingPolicy&) override {
    throw std::runtime_error("out of device memory");
  }
};

class NeedsGpuProvider : public LoopProvider {
 public:
  NeedsGpuProvider() : LoopProvider("test.gpu", false) {}
  Requirements requirements() const override {
    Requirements r;
    r.gpus = 1;
    r.why = "test kernel";
    return r;
  }
};

class FakeBackend final : public kernels::Backend {
 public:
  FakeBackend() {
    providers_["test.right"] = std::make_unique<LoopProvider>("test.right", false);
    providers_["test.wrong"] = std::make_unique<LoopProvider>("test.wrong", true);
    providers_["test.overconfident"] = std::make_unique<OverconfidentProvider>();
    providers_["test.throws"] = std::make_unique<ThrowingProvider>();
    providers_["test.gpu"] = std::make_unique<NeedsGpuProvider>();
  }
  std::string backend_name() const override { return "fake"; }
  json fingerprint() const override { return {{"device", "fake"}, {"build", "test"}}; }
  int resource_total(const std::string&) const override { return 0; }
  std::optional<std::string> unmet(const Requirements& req) const override {
    if (req.gpus > 0) return "requires " + std::to_string(req.gpus) + " GPU(s) (" + req.why + "); found none (fake)";
    return std::nullopt;
  }
  std::vector<std::string> provider_names() const override {
    return {"test.right", "test.wrong", "test.overconfident", "test.throws", "test.gpu"};
  }
  kernels::GemmProvider* provider(const std::string& name) override {
    auto it = providers_.find(name);
    return it == providers_.end() ? nullptr : it->second.get();
  }
  std::vector<std::string> auto_providers() const override { return {"test.right", "test.wrong"}; }
  std::vector<kernels::Ceiling> measure_peaks(const kernels::PeakOptions&) override { return {}; }
  json hardware_info() const override { return fingerprint(); }

 private:
  std::map<std::string, std::unique_ptr<kernels::GemmProvider>> providers_;
};

TimingPolicy quick_timing() { return test::quick_timing(0.05); }

GemmShape shape(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmShape s;
  s.name = name;
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

const json& find_record(const json& out, const std::string& provider, const std::string& shape_name,
                        const std::string& dtype = "fp32") {
  for (const auto& r : out.at("records"))
    if (r["provider"] == provider && r["shape"]["name"] == shape_name && r["dtype"] == dtype) return r;
  static const json none;
  ADD_FAILURE() << "no record for " << provider << " " << shape_name << " " << dtype;
  return none;
}

TEST(GemmSweep, WrongProviderFailsUntimedRightProviderIsOkAndTimed) {
  FakeBackend backend;
  SweepPlan plan{{"test.right", "test.wrong"}, {shape("odd", 17, 33, 65), shape("tiny", 4, 8, 16)}, {"fp32"},
                 quick_timing()};
  const json out = run_sweep(backend, plan);
  ASSERT_EQ(out["records"].size(), 4u);
  for (const char* s : {"odd", "tiny"}) {
    const json& right = find_record(out, "test.right", s);
    EXPECT_EQ(right["status"], "ok") << right.dump();
    EXPECT_TRUE(right["verified"].get<bool>());
    ASSERT_TRUE(right.contains("time_ms"));
    EXPECT_GT(right["time_ms"]["median"].get<double>(), 0.0);
    EXPECT_GE(right["samples"].get<int>(), 3);
    EXPECT_GT(right["tflops"].get<double>(), 0.0);
    EXPECT_EQ(right["env"]["device"], "fake");

    const json& wrong = find_record(out, "test.wrong", s);
    EXPECT_EQ(wrong["status"], "failed") << wrong.dump();
    EXPECT_FALSE(wrong["verified"].get<bool>());
    EXPECT_FALSE(wrong.contains("time_ms")) << "a wrong result must never be timed";
    EXPECT_FALSE(wrong.contains("tflops"));
    EXPECT_GT(wrong["max_rel_err"].get<double>(), wrong["tolerance"].get<double>());
    EXPECT_NE(wrong["reason"].get<std::string>().find("verification"), std::string::npos);
  }
  EXPECT_EQ(out["summary"]["ok"], 2);
  EXPECT_EQ(out["summary"]["failed"], 2);
  // Shape-major order: both providers' results for one shape sit together.
  EXPECT_EQ(out["records"][0]["shape"]["name"], "odd");
  EXPECT_EQ(out["records"][1]["shape"]["name"], "odd");
}

// The layout and epilogue axes multiply the cases; a provider that offers only nn/none skips the others with
// its reason, and every record says which layout and epilogue it is.
TEST(GemmSweep, LayoutAndEpilogueAxesAreRecordedAndUnsupportedOnesSkip) {
  FakeBackend backend;
  SweepPlan plan{{"test.right"}, {shape("s", 8, 8, 8)}, {"fp32"}, quick_timing(), {"nn", "nt"}, {"none", "bias_gelu"}};
  const json out = run_sweep(backend, plan);
  ASSERT_EQ(out["records"].size(), 4u);
  int ok = 0;
  for (const auto& r : out["records"]) {
    ASSERT_TRUE(r.contains("layout") && r.contains("epilogue")) << r.dump();
    const bool plain = r["layout"] == "nn" && r["epilogue"] == "none";
    EXPECT_EQ(r["status"], plain ? "ok" : "skipped") << r.dump();
    if (!plain) EXPECT_NE(r["reason"].get<std::string>().find("test.right offers"), std::string::npos) << r.dump();
    ok += plain ? 1 : 0;
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(out["layouts"], json({"nn", "nt"}));
  EXPECT_EQ(out["epilogues"], json({"none", "bias_gelu"}));
}

TEST(GemmSweep, SkipsAndDistrustsWithReasons) {
  FakeBackend backend;
  SweepPlan plan{{"test.right", "test.gpu", "test.overconfident", "test.throws"}, {shape("s", 8, 8, 8)},
                 {"fp32", "fp64"}, quick_timing()};
  const json out = run_sweep(backend, plan);
  ASSERT_EQ(out["records"].size(), 8u);

  const json& unsupported = find_record(out, "test.right", "s", "fp64");
  EXPECT_EQ(unsupported["status"], "skipped");
  EXPECT_EQ(unsupported["reason"], "fp64 is not supported by test.right");

  // The backend's exact words for an unmet requirement.
  const json& gpu = find_record(out, "test.gpu", "s");
  EXPECT_EQ(gpu["status"], "skipped");
  EXPECT_EQ(gpu["reason"], "requires 1 GPU(s) (test kernel); found none (fake)");
  EXPECT_FALSE(gpu.contains("time_ms"));

  const json& liar = find_record(out, "test.overconfident", "s");
  EXPECT_EQ(liar["status"], "failed");
  EXPECT_FALSE(liar.contains("time_ms")) << "unverified timing must not be published";
  EXPECT_NE(liar["reason"].get<std::string>().find("without verifying"), std::string::npos);

  const json& thrower = find_record(out, "test.throws", "s");
  EXPECT_EQ(thrower["status"], "failed");
  EXPECT_NE(thrower["reason"].get<std::string>().find("out of device memory"), std::string::npos);

  EXPECT_EQ(out["summary"]["ok"], 1);
}

TEST(GemmSweep, ExpandsAutoAndRejectsUnknownProviders) {
  FakeBackend backend;
  EXPECT_EQ(expand_providers(backend, {"auto"}), (std::vector<std::string>{"test.right", "test.wrong"}));
  EXPECT_EQ(expand_providers(backend, {"test.wrong", "auto"}), (std::vector<std::string>{"test.wrong", "test.right"}));
  try {
    expand_providers(backend, {"test.rigth"});
    FAIL() << "an unknown provider must be refused";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("did you mean 'test.right'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test.overconfident"), std::string::npos) << "lists what is available: " << msg;
  }
}

// The node around the loop: shapes from an input artifact, filter, max_shapes, cancellation, params.
struct NodeRun {
  FakeBackend backend;
  Artifact shapes_artifact;
  std::atomic<bool> cancel{false};
  std::vector<std::string> log;

  NodeOutput run(const json& params) {
    auto node = make_gemm_sweep_node();
    NodeContext ctx;
    ctx.node_name = "sweep";
    ctx.params = params;
    ctx.env = &backend;
    ctx.cancel = &cancel;
    ctx.log = [this](const std::string& s) { log.push_back(s); };
    ctx.inputs.push_back({"shapes", "shapes", &shapes_artifact});
    return node->run(ctx);
  }
};

TEST(GemmSweepNode, ReadsShapesFromInputsFiltersAndLogs) {
  NodeRun r;
  r.shapes_artifact.set_data({{"shapes",
                             {{{"name", "decode_b1_qkv"}, {"m", 1}, {"n", 16}, {"k", 8}, {"kind", "qkv_proj"}},
                              {{"name", "decode_b8_qkv"}, {"m", 8}, {"n", 16}, {"k", 8}},
                              {{"name", "prefill_t16_qkv"}, {"m", 16}, {"n", 16}, {"k", 8}}}}});
  const json timing = {{"warmup", 1}, {"min_samples", 3}, {"max_samples", 4}, {"budget_s", 0.05},
                       {"flush_cache", false}};
  NodeOutput out = r.run({{"providers", {"auto"}}, {"filter", "decode"}, {"timing", timing}});
  EXPECT_EQ(out.data["providers"], json({"test.right", "test.wrong"}));
  EXPECT_EQ(out.data["dtypes"], json({"fp32"}));
  EXPECT_EQ(out.data["records"].size(), 4u);   // 2 decode shapes x 2 providers
  EXPECT_EQ(out.data["backend"], "fake");
  EXPECT_EQ(out.data["env"]["device"], "fake");
  EXPECT_GE(r.log.size(), 4u);

  out = r.run({{"providers", {"test.right"}}, {"max_shapes", 1}, {"timing", timing}});
  ASSERT_EQ(out.data["records"].size(), 1u);
  EXPECT_EQ(out.data["records"][0]["shape"]["name"], "decode_b1_qkv");

  // Inline shapes win over the inputs'.
  out = r.run({{"providers", {"test.right"}}, {"shapes", {{{"name", "own"}, {"m", 2}, {"n", 2}, {"k", 2}}}},
               {"timing", timing}});
  ASSERT_EQ(out.data["records"].size(), 1u);
  EXPECT_EQ(out.data["records"][0]["shape"]["name"], "own");

  EXPECT_THROW(r.run({{"providers", {"test.right"}}, {"filter", "nothing-matches"}}), NodeError);
  EXPECT_THROW(r.run({{"providers", {"test.nope"}}}), NodeError);
  r.cancel = true;
  EXPECT_THROW(r.run({{"providers", {"test.right"}}, {"timing", timing}}), NodeError);
}

TEST(GemmSweepNode, NoShapesIsAClearError) {
  NodeRun r;
  try {
    r.run({{"providers", {"test.right"}}});
    FAIL();
  } catch (const NodeError& e) {
    EXPECT_NE(std::string(e.what()).find("no shapes"), std::string::npos);
  }
}

TEST(GemmSweepNode, CheckParamsAndRequirements) {
  auto node = make_gemm_sweep_node();
  EXPECT_TRUE(node->traits().hardware_bound);
  EXPECT_TRUE(node->traits().exclusive);
  EXPECT_EQ(node->check_params({{"providers", {"auto", "cpu.blocked"}}}), "");
  const std::string typo = node->check_params({{"providers", {"cpu.blokced"}}});
  EXPECT_NE(typo.find("did you mean 'cpu.blocked'"), std::string::npos) << typo;
  for (const auto& name : kernels::cpu_provider_names()) EXPECT_NE(typo.find(name), std::string::npos) << typo;
  EXPECT_NE(node->check_params({{"dtypes", {"fp33"}}}).find("dtypes"), std::string::npos);
  EXPECT_NE(node->check_params({{"timing", {{"budget", 1}}}}).find("timing.budget"), std::string::npos);
  EXPECT_NE(node->check_params({{"shapes", {{{"name", "x"}, {"m", 0}, {"n", 1}, {"k", 1}}}}}).find("shapes[0]"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"max_shapes", 0}}).find("max_shapes"), std::string::npos);
  EXPECT_EQ(node->check_params({{"layout", "nt"}, {"epilogue", {"none", "bias_gelu"}}}), "");
  EXPECT_NE(node->check_params({{"layout", "tn"}}).find("layout: unknown value 'tn'"), std::string::npos);
  EXPECT_NE(node->check_params({{"epilogue", {"gelu"}}}).find("epilogue: unknown value 'gelu'"), std::string::npos);
  EXPECT_EQ(node->check_params({{"providers", {"ours.cluster"}}, {"provider_options", {{"ours.cluster", {{"autotune", true}}}}}}),
            "");
  EXPECT_NE(node->check_params({{"providers", {"cublaslt"}}, {"provider_options", {{"ours.cluster", {{"autotune", true}}}}}})
                .find("'ours.cluster' is not in providers"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"providers", {"ours.cluster"}}, {"provider_options", {{"ours.cluster", true}}}})
                .find("provider_options.ours.cluster: expected a map"),
            std::string::npos);
  // A sweep of GPU providers only needs a GPU; a mixed list, CPU ones and auto do not (on a machine
  // without a GPU its GPU providers give skipped records). A misspelt GPU provider is caught too.
  EXPECT_EQ(node->requirements({{"providers", {"cublaslt", "cublaslt.sweep"}}}).gpus, 1);
  EXPECT_EQ(node->requirements({{"providers", {"cublaslt", "cpu.blocked"}}}).gpus, 0);
  EXPECT_NE(node->check_params({{"providers", {"cublast"}}}).find("did you mean 'cublaslt'"), std::string::npos);
  EXPECT_EQ(node->requirements({{"providers", {"auto"}}}).gpus, 0);
  EXPECT_EQ(node->requirements(json::object()).gpus, 0);
}

// The shipped CPU backend end to end through the node: a tiny sweep with the reference provider.
TEST(GemmSweepNode, RealCpuBackendTinySweep) {
  auto backend = kernels::make_cpu_backend();
  auto node = make_gemm_sweep_node();
  NodeContext ctx;
  ctx.params = {{"providers", {"cpu.naive", "cpu.blocked"}},
                {"shapes", {{{"name", "t"}, {"m", 5}, {"n", 7}, {"k", 9}}}},
                {"timing", {{"warmup", 1}, {"min_samples", 3}, {"max_samples", 3}, {"flush_cache", false}}}};
  ctx.env = backend.get();
  const json out = node->run(ctx).data;
  ASSERT_EQ(out["records"].size(), 2u);
  for (const auto& r : out["records"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["verified"].get<bool>());
    EXPECT_TRUE(r.contains("time_ms"));
  }
  EXPECT_EQ(out["backend"], "cpu");
}

}  // namespace
}  // namespace aispflow
