// peak: what it asks of the backend, and how it merges measured, backend-datasheet and declared ceilings.
// A fake backend stands in for the hardware so the test is fast and exact.
#include <gtest/gtest.h>

#include "kernels/common/backend.hpp"
#include "nodes/node_factories.hpp"

namespace aispflow {
namespace {

class FakePeakBackend final : public kernels::Backend {
 public:
  kernels::PeakOptions seen;   // what the node asked for
  std::string backend_name() const override { return "fake"; }
  json fingerprint() const override { return {{"device", "fake device"}}; }
  int resource_total(const std::string&) const override { return 0; }
  std::optional<std::string> unmet(const Requirements&) const override { return std::nullopt; }
  std::vector<std::string> provider_names() const override { return {}; }
  kernels::GemmProvider* provider(const std::string&) override { return nullptr; }
  std::vector<std::string> auto_providers() const override { return {}; }
  std::vector<kernels::Ceiling> measure_peaks(const kernels::PeakOptions& options) override {
    seen = options;
    return {{{"name", "dram.triad"}, {"kind", "memory"}, {"unit", "GB/s"}, {"value", 20.5}, {"method", "fake"}},
            {{"name", "fp32.fma"}, {"kind", "compute"}, {"unit", "TFLOP/s"}, {"value", 0.25}, {"method", "fake"},
             {"dtype", "fp32"}}};
  }
  std::vector<kernels::Ceiling> datasheet_ceilings() const override {
    return {{{"name", "fake.datasheet"}, {"kind", "memory"}, {"unit", "GB/s"}, {"value", 25.0}}};
  }
  json hardware_info() const override { return fingerprint(); }
};

json run_peak(FakePeakBackend& backend, const json& params) {
  auto node = make_peak_node();
  NodeContext ctx;
  ctx.node_name = "peak";
  ctx.params = params;
  ctx.env = &backend;
  return node->run(ctx).data;
}

TEST(PeakNode, PassesOptionsAndMergesCeilings) {
  FakePeakBackend backend;
  const json out = run_peak(backend, {{"bandwidth_mib", 128},
                                      {"dtypes", {"fp32"}},
                                      {"timing", {{"min_samples", 3}, {"budget_s", 0.5}}},
                                      {"datasheet", {{{"name", "vendor.hbm"}, {"kind", "memory"}, {"unit", "TB/s"},
                                                      {"value", 3.35}}}}});
  EXPECT_DOUBLE_EQ(backend.seen.bandwidth_bytes, 128.0 * 1024 * 1024);
  EXPECT_EQ(backend.seen.dtypes, std::vector<std::string>{"fp32"});
  EXPECT_EQ(backend.seen.timing.min_samples, 3);
  EXPECT_DOUBLE_EQ(backend.seen.timing.budget_s, 0.5);
  EXPECT_FALSE(backend.seen.timing.cold_code);
  run_peak(backend, {{"timing", {{"code", "cold"}}}});
  EXPECT_TRUE(backend.seen.timing.cold_code) << "timing.code reaches the backend";

  EXPECT_EQ(out["backend"], "fake");
  EXPECT_EQ(out["env"]["device"], "fake device");
  const json& c = out["ceilings"];
  ASSERT_EQ(c.size(), 4u);   // 2 measured + 1 backend datasheet + 1 declared
  EXPECT_EQ(c[0]["name"], "dram.triad");
  EXPECT_EQ(c[0]["source"], "measured");
  EXPECT_EQ(c[2]["name"], "fake.datasheet");
  EXPECT_EQ(c[2]["source"], "datasheet");
  // Declared in TB/s, stored in the canonical GB/s with the declaration kept.
  EXPECT_EQ(c[3]["name"], "vendor.hbm");
  EXPECT_EQ(c[3]["unit"], "GB/s");
  EXPECT_DOUBLE_EQ(c[3]["value"].get<double>(), 3350.0);
  EXPECT_EQ(c[3]["source"], "datasheet");
  EXPECT_EQ(c[3]["declared"]["unit"], "TB/s");
}

// A declared TMEM figure becomes its own roofline level; a level on a compute ceiling is refused.
TEST(PeakNode, DeclaredCeilingCarriesItsLevel) {
  FakePeakBackend backend;
  const json out = run_peak(backend, {{"include_datasheet", false},
                                      {"datasheet", {{{"name", "my.tmem"}, {"kind", "memory"}, {"unit", "TB/s"},
                                                      {"value", 40}, {"level", "tmem"}}}}});
  EXPECT_EQ(out["ceilings"].back()["level"], "tmem");
  EXPECT_DOUBLE_EQ(out["ceilings"].back()["value"].get<double>(), 40000.0);
  auto node = make_peak_node();
  EXPECT_NE(node->check_params({{"datasheet", {{{"name", "x"}, {"kind", "compute"}, {"unit", "TFLOP/s"}, {"value", 1},
                                                {"level", "tmem"}}}}}),
            "");
}

TEST(PeakNode, DefaultsAndBackendDatasheetCanBeLeftOut) {
  FakePeakBackend backend;
  const json out = run_peak(backend, {{"include_datasheet", false}});
  EXPECT_DOUBLE_EQ(backend.seen.bandwidth_bytes, 0.0) << "0 lets the backend pick a size >> last-level cache";
  EXPECT_TRUE(backend.seen.dtypes.empty());
  ASSERT_EQ(out["ceilings"].size(), 2u);
  for (const auto& c : out["ceilings"]) EXPECT_EQ(c["source"], "measured");
}

TEST(PeakNode, TraitsAndBadParams) {
  auto node = make_peak_node();
  EXPECT_TRUE(node->traits().hardware_bound);
  EXPECT_TRUE(node->traits().exclusive);
  EXPECT_EQ(node->check_params(json::object()), "");
  auto datasheet = [&](json entry) { return node->check_params({{"datasheet", json::array({std::move(entry)})}}); };
  EXPECT_NE(datasheet({{"name", "x"}, {"kind", "disk"}, {"unit", "GB/s"}, {"value", 1}}).find("datasheet[0].kind"),
            std::string::npos);
  EXPECT_NE(datasheet({{"name", "x"}, {"kind", "compute"}, {"unit", "GB/s"}, {"value", 1}}).find("datasheet[0].unit"),
            std::string::npos);
  EXPECT_NE(datasheet({{"name", "x"}, {"kind", "memory"}, {"unit", "GB/s"}, {"value", 0}}).find("datasheet[0].value"),
            std::string::npos);
  EXPECT_NE(datasheet({{"kind", "memory"}, {"unit", "GB/s"}, {"value", 1}}).find("datasheet[0].name"),
            std::string::npos);
  EXPECT_NE(datasheet({{"name", "x"}, {"kind", "memory"}, {"unit", "GB/s"}, {"value", 1}, {"colour", "red"}})
                .find("colour"),
            std::string::npos);
  EXPECT_NE(node->check_params({{"timing", {{"warmpu", 1}}}}).find("timing.warmpu"), std::string::npos);
  EXPECT_NE(node->check_params({{"timing", {{"code", "hot"}}}}).find("timing.code"), std::string::npos);
  EXPECT_EQ(node->check_params({{"timing", {{"code", "cold"}}}}), "");
  EXPECT_NE(node->check_params({{"bandwidth_mib", 0}}).find("bandwidth_mib"), std::string::npos);
  FakePeakBackend backend;
  EXPECT_THROW(run_peak(backend, {{"timing", {{"min_samples", 0}}}}), NodeError);
  // Without a measurement backend the node fails clearly instead of crashing.
  auto peak = make_peak_node();
  NodeContext ctx;
  ctx.params = json::object();
  EXPECT_THROW(peak->run(ctx), NodeError);
}

}  // namespace
}  // namespace aispflow
