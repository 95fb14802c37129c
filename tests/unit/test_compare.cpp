// The `compare` node: per (shape, dtype) values, fastest provider and speedup over the baseline; failure
// naming the gaps when a provider lacks ok records others have; record files from other tools.
#include <gtest/gtest.h>

#include <cmath>

#include "nodes/node_factories.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::make_record;
using testing::NodeHarness;
using testing::sweep_artifact;

json sweep_a() {
  return sweep_artifact({
      make_record("cpu.openblas", "s1", 8, 512, 512, "fp32", 1.0),
      make_record("cpu.openblas", "s2", 512, 512, 512, "fp32", 4.0),
      make_record("cpu.blocked", "s1", 8, 512, 512, "fp32", 0.5),
      make_record("cpu.blocked", "s2", 512, 512, 512, "fp32", 5.0),
  });
}

const json& row_of(const json& data, const std::string& shape, const std::string& dtype = "fp32") {
  for (const auto& r : data["rows"])
    if (r["shape"] == shape && r["dtype"] == dtype) return r;
  static const json none;
  ADD_FAILURE() << "no row " << shape << "/" << dtype;
  return none;
}

std::string error_of(NodeHarness& h, const json& params) {
  try {
    h.run(*make_compare_node(), params);
  } catch (const NodeError& e) {
    return e.what();
  }
  return {};
}

TEST(Compare, FastestAndSpeedupOverBaseline) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  const auto out = h.run(*make_compare_node(), {{"baseline", "cpu.openblas"}});

  const json& s1 = row_of(out.data, "s1");
  EXPECT_EQ(s1["fastest"], "cpu.openblas");
  EXPECT_DOUBLE_EQ(s1["values"]["cpu.blocked"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s1["speedup"]["cpu.blocked"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s1["speedup"]["cpu.openblas"].get<double>(), 1.0);
  const json& s2 = row_of(out.data, "s2");
  EXPECT_EQ(s2["fastest"], "cpu.blocked");
  EXPECT_DOUBLE_EQ(s2["speedup"]["cpu.blocked"].get<double>(), 1.25);

  EXPECT_EQ(out.data["baseline"], "cpu.openblas");
  EXPECT_EQ(out.data["providers"], json({"cpu.openblas", "cpu.blocked"}));   // order of first appearance
  for (const auto& s : out.data["summary"])
    if (s["provider"] == "cpu.blocked") {
      EXPECT_NEAR(s["geomean_speedup"].get<double>(), std::sqrt(0.5 * 1.25), 1e-12);
      EXPECT_EQ(s["wins"], 1);
    }

  // compare.json mirrors the data; compare.md is a readable table.
  EXPECT_EQ(json::parse(h.read_output("compare.json")), out.data);
  const std::string md = h.read_output("compare.md");
  EXPECT_NE(md.find("| s2 | fp32 | **cpu.blocked** | 4 | 5 | 1.25x |"), std::string::npos) << md;
}

TEST(Compare, AutoBaselineIsTheFirstProvider) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  EXPECT_EQ(h.run(*make_compare_node(), {{"baseline", "auto"}}).data["baseline"], "cpu.openblas");
}

TEST(Compare, BaselineListTakesTheFirstPresentProvider) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  EXPECT_EQ(h.run(*make_compare_node(), {{"baseline", {"cublaslt", "cpu.blocked"}}}).data["baseline"], "cpu.blocked");
  EXPECT_NE(make_compare_node()->check_params({{"baseline", json::array()}}), "");
  EXPECT_NE(make_compare_node()->check_params({{"baseline", {1, 2}}}), "");
  EXPECT_EQ(make_compare_node()->check_params({{"baseline", {"a", "b"}}}), "");
}

TEST(Compare, UnknownBaselineListsProviders) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  const std::string e = error_of(h, {{"baseline", "cublaslt"}});
  EXPECT_NE(e.find("'cublaslt' has no records"), std::string::npos) << e;
  EXPECT_NE(e.find("cpu.openblas, cpu.blocked"), std::string::npos) << e;
}

TEST(Compare, LowerIsBetterMetricInvertsTheSpeedup) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  const auto out = h.run(*make_compare_node(), {{"baseline", "cpu.openblas"}, {"metric", "time_ms.median"}});
  const json& s2 = row_of(out.data, "s2");
  EXPECT_EQ(s2["fastest"], "cpu.blocked");   // the lowest time
  EXPECT_NEAR(s2["speedup"]["cpu.blocked"].get<double>(), 1.25, 1e-9);   // time_base / time
  EXPECT_EQ(out.data["better"], "lower");
  EXPECT_NE(make_compare_node()->check_params({{"baseline", "x"}, {"metric", "status"}}), "");
}

TEST(Compare, FailsNamingProvidersThatLackRecordsOthersHave) {
  NodeHarness h("compare");
  json records = sweep_a()["records"];
  records.push_back(make_record("cpu.openblas", "s3", 4096, 4096, 4096, "fp32", 3.0));
  records.push_back(make_record("cpu.blocked", "s3", 4096, 4096, 4096, "fp32", 0, "failed", "verification mismatch"));
  records.push_back(make_record("cpu.naive", "s1", 8, 512, 512, "fp32", 0.01));
  records.push_back(make_record("cpu.naive", "s2", 8, 512, 512, "fp32", 0, "skipped", "above cpu.naive size limit"));
  h.add_input("sweep", sweep_artifact(records));
  const std::string e = error_of(h, {{"baseline", "cpu.openblas"}});
  EXPECT_NE(e.find("cpu.blocked: 1 missing: s3/fp32 (failed: verification mismatch)"), std::string::npos) << e;
  EXPECT_NE(e.find("cpu.naive: 2 missing: s2/fp32 (skipped: above cpu.naive size limit), s3/fp32 (no record)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("allow_missing"), std::string::npos) << e;

  // allow_missing: compared anyway, the gaps listed in the data and the table.
  const auto out = h.run(*make_compare_node(), {{"baseline", "cpu.openblas"}, {"allow_missing", true}});
  EXPECT_EQ(out.data["gaps"].size(), 3u);
  const json& s3 = row_of(out.data, "s3");
  EXPECT_TRUE(s3["values"]["cpu.blocked"].is_null());
  EXPECT_TRUE(s3["speedup"]["cpu.blocked"].is_null());
  EXPECT_EQ(s3["missing"]["cpu.blocked"], "failed: verification mismatch");
  EXPECT_NE(h.read_output("compare.md").find("## Missing results"), std::string::npos);
}

TEST(Compare, ReadsRecordFilesFromOtherTools) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  // One file as a bare array with shapes given by name only, one as {"records": [...]}.
  h.write_file("ext/a.json", R"([
    {"provider": "vendor.lib", "shape": "s1", "dtype": "fp32", "status": "ok", "tflops": 2.0},
    {"provider": "vendor.lib", "shape": {"name": "s2", "m": 512, "n": 512, "k": 512}, "dtype": "fp32",
     "status": "ok", "tflops": 8.0}
  ])");
  h.write_file("ext/b.json", R"({"records": [
    {"provider": "other", "shape": {"name": "s1"}, "dtype": "fp32", "status": "ok", "tflops": 1.5},
    {"provider": "other", "shape": {"name": "s2"}, "dtype": "fp32", "status": "ok", "tflops": 4.5}
  ]})");
  const auto out =
      h.run(*make_compare_node(), {{"baseline", "cpu.openblas"}, {"files", {"ext/a.json", "ext/b.json"}}});
  EXPECT_EQ(out.data["providers"].size(), 4u);
  EXPECT_EQ(row_of(out.data, "s1")["fastest"], "vendor.lib");
  EXPECT_DOUBLE_EQ(row_of(out.data, "s2")["speedup"]["vendor.lib"].get<double>(), 2.0);
  EXPECT_EQ(out.data["sources"]["files"], json({"ext/a.json", "ext/b.json"}));
}

TEST(Compare, BadRecordFilesAreClearErrors) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_a());
  h.write_file("bad.json", R"([{"provider": "x", "shape": "s1", "dtype": "fp32", "status": "ok"},
                               {"provider": 7, "shape": "s1", "dtype": "fp32", "status": "ok"}])");
  std::string e = error_of(h, {{"baseline", "auto"}, {"files", {"bad.json"}}});
  EXPECT_NE(e.find("bad.json: record 1: field 'provider': expected a string"), std::string::npos) << e;

  h.write_file("bad.json", "{not json");
  e = error_of(h, {{"baseline", "auto"}, {"files", {"bad.json"}}});
  EXPECT_NE(e.find("bad.json: not valid JSON"), std::string::npos) << e;

  h.write_file("bad.json", R"([{"provider": "x", "shape": "s1", "dtype": "fp32", "status": "great"}])");
  e = error_of(h, {{"baseline", "auto"}, {"files", {"bad.json"}}});
  EXPECT_NE(e.find("field 'status': expected ok, failed or skipped, got 'great'"), std::string::npos) << e;

  e = error_of(h, {{"baseline", "auto"}, {"files", {"absent.json"}}});
  EXPECT_NE(e.find("absent.json: cannot read"), std::string::npos) << e;
}

TEST(Compare, PairsNobodyMeasuredAreListedNotTabled) {
  NodeHarness h("compare");
  json records = sweep_a()["records"];
  records.push_back(make_record("cpu.openblas", "s1", 8, 512, 512, "bf16", 0, "skipped", "bf16 is not supported"));
  records.push_back(make_record("cpu.blocked", "s1", 8, 512, 512, "bf16", 0, "skipped", "bf16 is not supported"));
  h.add_input("sweep", sweep_artifact(records));
  const auto out = h.run(*make_compare_node(), {{"baseline", "cpu.openblas"}});   // not a gap: nobody has it
  EXPECT_EQ(out.data["rows"].size(), 2u);
  ASSERT_EQ(out.data["unmeasured"].size(), 1u);
  EXPECT_EQ(out.data["unmeasured"][0]["reasons"]["cpu.blocked"], "skipped: bf16 is not supported");
  EXPECT_NE(h.read_output("compare.md").find("## Not measured by any provider"), std::string::npos);

  NodeHarness none("compare");
  none.add_input("sweep", sweep_artifact({records[4], records[5]}));
  const std::string e = error_of(none, {{"baseline", "auto"}});
  EXPECT_NE(e.find("nothing to compare"), std::string::npos) << e;
}

// The kernel-selector lab's rule (workflows/kernel_selector.yaml): with the CUTLASS winner as baseline, a
// provider without a record for a baseline shape fails the comparison.
TEST(Compare, KernelSelectorRuleProviderMissingABaselineShapeFails) {
  NodeHarness h("compare");
  h.add_input("sweep", sweep_artifact({
                           make_record("cutlass.select", "kv_proj_m4096_n4096_k4096", 4096, 4096, 4096, "bf16", 700),
                           make_record("cutlass.select", "decode_mlp_m4096_n4096_k8192", 4096, 4096, 8192, "bf16", 720),
                           make_record("cublaslt.sweep", "kv_proj_m4096_n4096_k4096", 4096, 4096, 4096, "bf16", 710),
                       }));
  const std::string e = error_of(h, {{"baseline", "cutlass.select"}});
  EXPECT_NE(e.find("cublaslt.sweep: 1 missing: decode_mlp_m4096_n4096_k8192/bf16 (no record)"), std::string::npos) << e;
}

TEST(Compare, NoRecordsAtAllIsAnError) {
  NodeHarness h("compare");
  const std::string e = error_of(h, {{"baseline", "auto"}});
  EXPECT_NE(e.find("no records to compare"), std::string::npos) << e;
}

}  // namespace
}  // namespace aispflow
