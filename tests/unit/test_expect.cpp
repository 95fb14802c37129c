// The `expect` node: statuses (pass / regressed / improved / missing), the good direction per metric,
// failed and skipped records, the verdict that makes the run exit 3, file errors with line:column, and
// update: true rewriting the file.
#include <gtest/gtest.h>

#include "nodes/node_factories.hpp"
#include "nodes/record_match.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::make_record;
using testing::NodeHarness;
using testing::sweep_artifact;

json two_provider_sweep() {
  return sweep_artifact(json::array({
      make_record("cpu.blocked", "decode_b8_qkv_proj", 8, 5120, 2880, "fp32", 0.20),
      make_record("cpu.blocked", "decode_b64_qkv_proj", 64, 5120, 2880, "fp32", 0.60),
      make_record("cpu.openblas", "decode_b8_qkv_proj", 8, 5120, 2880, "fp32", 0.25),
      make_record("cpu.openblas", "decode_b64_qkv_proj", 64, 5120, 2880, "fp32", 0.80),
  }));
}

// The rows of one expectation (1-based index) in the node's output.
std::vector<json> rows_of(const NodeOutput& out, int expectation) {
  std::vector<json> rows;
  for (const auto& r : out.data["results"])
    if (r["expectation"] == expectation) rows.push_back(r);
  return rows;
}

TEST(Expect, PassRegressedImprovedAndMissing) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  const auto file = h.write_file("expectations/e.yaml", R"(expectations:
  - match: {provider: cpu.blocked, shape: "decode_*", dtype: fp32}
    metric: tflops
    min: 0.1
  - match: {provider: cpu.openblas, shape: decode_b8_qkv_proj}
    metric: tflops
    baseline: 0.5
    tolerance_pct: 10
  - match: {provider: cpu.openblas, shape: decode_b64_qkv_proj}
    metric: tflops
    baseline: 0.5
    tolerance_pct: 10
  - match: {provider: cpu.openblas, shape: decode_b64_qkv_proj}
    metric: tflops
    baseline: 0.78
    tolerance_pct: 5
  - match: {provider: cublaslt}
    metric: tflops
    min: 100
)");
  const auto out = h.run(*make_expect_node(), {{"file", file}, {"update", false}, {"strict_missing", true}});

  ASSERT_EQ(rows_of(out, 1).size(), 2u);   // the glob matched both cpu.blocked shapes
  for (const auto& r : rows_of(out, 1)) EXPECT_EQ(r["status"], "pass");
  EXPECT_EQ(rows_of(out, 2)[0]["status"], "regressed");   // 0.25 is 50% below 0.5
  EXPECT_EQ(rows_of(out, 3)[0]["status"], "improved");    // 0.80 is 60% above 0.5
  EXPECT_EQ(rows_of(out, 4)[0]["status"], "pass");        // 0.80 vs 0.78: +2.6%, inside 5%
  ASSERT_EQ(rows_of(out, 5).size(), 1u);
  EXPECT_EQ(rows_of(out, 5)[0]["status"], "missing");
  EXPECT_TRUE(rows_of(out, 5)[0]["record"].is_null());
  EXPECT_EQ(rows_of(out, 2)[0]["record"]["provider"], "cpu.openblas");
  EXPECT_DOUBLE_EQ(rows_of(out, 2)[0]["value"].get<double>(), 0.25);

  EXPECT_EQ(out.data["summary"]["pass"], 3);
  EXPECT_EQ(out.data["summary"]["regressed"], 1);
  EXPECT_EQ(out.data["summary"]["improved"], 1);
  EXPECT_EQ(out.data["summary"]["missing"], 1);
  EXPECT_EQ(out.verdict, Verdict::expectations_not_met);

  // expect.md: a table with the problems first, naming the line of each expectation.
  const std::string md = h.read_output("expect.md");
  EXPECT_NE(md.find("expectations not met"), std::string::npos);
  EXPECT_LT(md.find("| regressed |"), md.find("| pass |"));
  EXPECT_LT(md.find("| missing |"), md.find("| pass |"));
  EXPECT_NE(md.find("| 5 | 17 | missing | cublaslt |"), std::string::npos) << md;
  EXPECT_NE(h.log.find("expectations not met"), std::string::npos) << h.log;
}

TEST(Expect, AllPassingIsOk) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  const auto file = h.write_file("e.yaml", "expectations:\n  - {match: {dtype: fp32}, metric: tflops, min: 0.1, max: 5}\n");
  const auto out = h.run(*make_expect_node(), {{"file", file}});
  EXPECT_EQ(out.data["summary"]["pass"], 4);
  EXPECT_EQ(out.verdict, Verdict::ok);
}

TEST(Expect, BoundsAreHardLimitsInBothDirections) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  const auto file = h.write_file("e.yaml", "expectations:\n  - {match: {provider: cpu.openblas}, metric: tflops, max: 0.5}\n");
  const auto out = h.run(*make_expect_node(), {{"file", file}});
  const auto rows = rows_of(out, 1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["status"], "pass");        // 0.25 <= 0.5
  EXPECT_EQ(rows[1]["status"], "regressed");   // 0.80 above a declared max (e.g. a physical limit) is suspect
  EXPECT_NE(rows[1]["reason"].get<std::string>().find("above max"), std::string::npos);
}

TEST(Expect, LowerIsBetterForTime) {
  NodeHarness h("expect");
  json fast = make_record("p", "s", 64, 64, 64, "fp32", 1.0);
  fast["time_ms"]["median"] = 1.5;
  json slow = make_record("q", "s", 64, 64, 64, "fp32", 1.0);
  slow["time_ms"]["median"] = 2.5;
  h.add_input("sweep", sweep_artifact({fast, slow}));
  const auto file = h.write_file("e.yaml", R"(expectations:
  - {match: {provider: p}, metric: time_ms.median, baseline: 2.0, tolerance_pct: 10}
  - {match: {provider: q}, metric: time_ms.median, baseline: 2.0, tolerance_pct: 10}
)");
  const auto out = h.run(*make_expect_node(), {{"file", file}});
  EXPECT_EQ(rows_of(out, 1)[0]["status"], "improved");    // faster than baseline
  EXPECT_EQ(rows_of(out, 2)[0]["status"], "regressed");   // slower than baseline
  EXPECT_EQ(records::find_metric("time_ms.median")->better, records::Better::lower);
  EXPECT_EQ(records::find_metric("tflops")->better, records::Better::higher);
}

TEST(Expect, FailedRecordRegressesAndSkippedRecordIsMissing) {
  NodeHarness h("expect");
  h.add_input("sweep", sweep_artifact({
                           make_record("cpu.blocked", "a", 8, 8, 8, "fp32", 0, "failed", "max_rel_err 0.3 > 1e-4"),
                           make_record("cpu.naive", "big", 8, 8, 8, "fp32", 0, "skipped", "above cpu.naive size limit"),
                       }));
  const auto file = h.write_file("e.yaml", R"(expectations:
  - {match: {provider: cpu.blocked}, metric: tflops, min: 0.01}
  - {match: {provider: cpu.naive}, metric: tflops, min: 0.01}
)");
  const auto out = h.run(*make_expect_node(), {{"file", file}});
  const auto failed = rows_of(out, 1);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["status"], "regressed");
  EXPECT_NE(failed[0]["reason"].get<std::string>().find("max_rel_err 0.3"), std::string::npos);
  const auto skipped = rows_of(out, 2);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["status"], "missing");
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("above cpu.naive size limit"), std::string::npos);
  EXPECT_EQ(out.verdict, Verdict::expectations_not_met);
}

TEST(Expect, StatusMetricAndStrictMissingOff) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  const auto file = h.write_file("e.yaml", R"(expectations:
  - {match: {provider: "*"}, metric: status}
  - {match: {provider: "*"}, metric: verified}
  - {match: {dtype: bf16}, metric: status}
)");
  const auto out = h.run(*make_expect_node(), {{"file", file}, {"strict_missing", false}});
  EXPECT_EQ(out.data["summary"]["pass"], 8);
  EXPECT_EQ(out.data["summary"]["missing"], 1);
  EXPECT_EQ(out.verdict, Verdict::ok);   // missing is reported, not fatal, when strict_missing is off

  NodeHarness strict("expect");
  strict.add_input("sweep", two_provider_sweep());
  strict.write_file("e.yaml", h.read_file("e.yaml"));
  EXPECT_EQ(strict.run(*make_expect_node(), {{"file", "e.yaml"}}).verdict, Verdict::expectations_not_met);
}

TEST(Expect, StatusMetricCatchesAFailedRecord) {
  NodeHarness h("expect");
  json records = two_provider_sweep()["records"];
  records.push_back(make_record("cpu.blocked", "odd", 7, 9, 11, "fp32", 0, "failed", "verification mismatch"));
  h.add_input("sweep", sweep_artifact(records));
  const auto file = h.write_file("e.yaml", "expectations:\n  - {metric: status}\n");
  const auto out = h.run(*make_expect_node(), {{"file", file}});
  EXPECT_EQ(out.data["summary"]["regressed"], 1);
  EXPECT_EQ(out.verdict, Verdict::expectations_not_met);
}

// Runs the node on a file and returns the NodeError message ("" when it did not throw).
std::string file_error(const std::string& content) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  h.write_file("bad.yaml", content);
  try {
    h.run(*make_expect_node(), {{"file", "bad.yaml"}});
  } catch (const NodeError& e) {
    return e.what();
  }
  return {};
}

TEST(Expect, FileErrorsNameLineColumnAndField) {
  // YAML syntax: an unclosed flow map.
  std::string e = file_error("expectations:\n  - {match: {provider: x}, metric: tflops, min: 1\n");
  EXPECT_NE(e.find("bad.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;

  e = file_error("expectations:\n  - match: {provider: x}\n    metric: tflop\n    min: 1\n");
  EXPECT_NE(e.find("bad.yaml:3:13: expectation 1: field 'metric': unknown metric 'tflop'"), std::string::npos) << e;
  EXPECT_NE(e.find("time_ms.median"), std::string::npos) << e;   // lists what is known

  e = file_error("expectations:\n  - metric: tflops\n    mni: 1\n");
  EXPECT_NE(e.find("bad.yaml:3:5: expectation 1: field 'mni': unknown field (did you mean 'min'?)"), std::string::npos)
      << e;

  e = file_error("expectations:\n  - {metric: tflops, min: 1}\n  - metric: tflops\n    min: abc\n");
  EXPECT_NE(e.find("bad.yaml:4:10: expectation 2: field 'min': expected a number, got 'abc'"), std::string::npos) << e;

  e = file_error("expectations:\n  - metric: tflops\n    min: 1\n  - metric: gbytes_per_s\n");
  EXPECT_NE(e.find("bad.yaml:4:5: expectation 2: "), std::string::npos) << e;
  EXPECT_NE(e.find("needs at least one of: min, max, baseline"), std::string::npos) << e;

  e = file_error("expectations:\n  - {metric: tflops, min: 5, max: 1}\n");
  EXPECT_NE(e.find("min 5 is above max 1"), std::string::npos) << e;

  e = file_error("expectations:\n  - {metric: tflops, match: {provder: x}, min: 1}\n");
  EXPECT_NE(e.find("field 'match.provder'"), std::string::npos) << e;

  e = file_error("expectation:\n  - {metric: tflops, min: 1}\n");
  EXPECT_NE(e.find("'expectations'"), std::string::npos) << e;

  e = file_error("expectations:\n  - {metric: status, min: 1}\n");
  EXPECT_NE(e.find("field 'min': metric 'status' is compared with 'equals'"), std::string::npos) << e;
}

TEST(Expect, MissingFileIsAClearError) {
  NodeHarness h("expect");
  try {
    h.run(*make_expect_node(), {{"file", "nope.yaml"}});
    FAIL() << "expected a NodeError";
  } catch (const NodeError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.yaml"), std::string::npos) << e.what();
  }
}

TEST(Expect, UpdateRewritesBaselinesAtomically) {
  NodeHarness h("expect");
  h.add_input("sweep", two_provider_sweep());
  const auto file = h.write_file("e.yaml", R"(description: quick gate
expectations:
  - match: {provider: cpu.openblas, shape: "decode_*"}
    metric: tflops
    baseline: 9.0
    tolerance_pct: 7
  - match: {provider: cpu.blocked, shape: decode_b8_qkv_proj}
    metric: tflops
    baseline: 1.0
  - {metric: status}
)");
  const auto out = h.run(*make_expect_node(), {{"file", file}, {"update", true}});
  EXPECT_EQ(out.verdict, Verdict::ok);   // update mode never fails the run...
  EXPECT_GT(out.data["summary"]["regressed"].get<int>(), 0);   // ...but still reports what it saw
  EXPECT_EQ(out.data["updated"]["baselines_set"], 3);
  EXPECT_EQ(out.data["updated"]["kept"], 1);
  EXPECT_NE(h.log.find("rewrote"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(h.dir() / "e.yaml.tmp-aispflow"));

  const std::string rewritten = h.read_file("e.yaml");
  EXPECT_NE(rewritten.find("description: quick gate"), std::string::npos) << rewritten;
  EXPECT_NE(rewritten.find("tolerance_pct: 7"), std::string::npos) << rewritten;   // tolerance kept
  EXPECT_NE(rewritten.find("baseline: 0.8"), std::string::npos) << rewritten;     // pinned per record
  EXPECT_NE(rewritten.find("decode_b64_qkv_proj"), std::string::npos) << rewritten;

  // The rewritten file now passes against the same results.
  NodeHarness again("expect");
  again.add_input("sweep", two_provider_sweep());
  again.write_file("e.yaml", rewritten);
  const auto out2 = again.run(*make_expect_node(), {{"file", "e.yaml"}});
  EXPECT_EQ(out2.verdict, Verdict::ok);
  EXPECT_EQ(out2.data["summary"]["regressed"], 0);
  EXPECT_EQ(out2.data["summary"]["pass"], 3 + 4);   // 3 pinned baselines + the status check of 4 records
}

TEST(RecordMatch, GlobPatterns) {
  using records::glob_match;
  EXPECT_TRUE(glob_match("decode_*", "decode_b8_qkv_proj"));
  EXPECT_FALSE(glob_match("decode_*", "prefill_t512_qkv_proj"));
  EXPECT_TRUE(glob_match("*_qkv_proj", "decode_b8_qkv_proj"));
  EXPECT_TRUE(glob_match("decode_b?_*", "decode_b8_qkv_proj"));
  EXPECT_FALSE(glob_match("decode_b?_*", "decode_b64_qkv_proj"));
  EXPECT_TRUE(glob_match("cpu.[bn]*", "cpu.blocked"));
  EXPECT_FALSE(glob_match("cpu.[!bn]*", "cpu.blocked"));
  EXPECT_TRUE(glob_match("fp[0-9]*", "fp32"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("fp32", "fp32x"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbc"));
}

TEST(RecordMatch, ValueAtFollowsDottedPaths) {
  const json r = make_record("p", "s", 4, 4, 4, "fp32", 1.0);
  EXPECT_TRUE(records::number_at(r, "time_ms.median").has_value());
  EXPECT_FALSE(records::number_at(r, "time_ms.nope").has_value());
  EXPECT_FALSE(records::number_at(r, "provider").has_value());   // not a number
  EXPECT_EQ(records::shape_name_of(json{{"shape", "named"}}), "named");
}

}  // namespace
}  // namespace aispflow
