// `aispflow report`'s reading side, without a browser: two runs compared record by record (regression -> exit 3,
// equal runs -> 0, a missing record reported, the metric's direction honoured, nothing paired -> bad input), and
// the page's document (records joined with their roofline point, the JSON embedded so it cannot close its script).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "pipeline/errors.hpp"
#include "reports/html_page.hpp"
#include "reports/run_data.hpp"
#include "reports/run_diff.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace aispflow::reports;

json record(const std::string& provider, const std::string& shape, double tflops, const std::string& status = "ok") {
  json r = {{"provider", provider}, {"kernel", provider + " v1"}, {"shape", {{"name", shape}, {"m", 8}, {"n", 64}, {"k", 32}}},
            {"dtype", "fp32"}, {"status", status}};
  if (status == "ok") {
    r["verified"] = true;
    r["tflops"] = tflops;
    r["intensity"] = 2.5;
    r["time_ms"] = {{"median", 1.0 / tflops}, {"stdrel", 0.01}};
  } else {
    r["reason"] = "max_rel_err 3 above tolerance";
  }
  return r;
}

class ReportDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-report-" + std::to_string(rd()));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static void write(const fs::path& file, const json& j) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << j.dump(1);
  }
  // A run directory as `aispflow run --out` leaves it: run.json plus nodes/<name>/artifact.json.
  fs::path make_run(const std::string& name, const json& records, const json& extra_nodes = json::array()) {
    const fs::path run = dir_ / name;
    json nodes = json::array({{{"name", "sweep"}, {"type", "gemm_sweep"}, {"status", "ran"}, {"reason", "no cache entry"},
                               {"seconds", 1.5}, {"digest", "d1"}, {"inputs", json::array()}, {"exclusive", true}}});
    for (const auto& n : extra_nodes) nodes.push_back(n);
    write(run / "run.json", {{"workflow", "wf"}, {"file", "/x/wf.yaml"}, {"started", "2026-11-25T10:00:00Z"},
                             {"seconds", 2.0}, {"exit_code", 0}, {"backend", "cpu"}, {"aispflow_version", "0.1.0+abc"},
                             {"nodes", nodes}});
    write(run / "nodes" / "sweep" / "artifact.json", {{"data", {{"records", records}}}, {"verdict", "ok"}});
    return run;
  }
  fs::path dir_;
};

const DiffRow& row_of(const RunDiff& d, const std::string& provider, const std::string& shape) {
  for (const auto& r : d.rows)
    if (r.provider == provider && r.shape == shape) return r;
  throw std::runtime_error("no row " + provider + " " + shape);
}

TEST_F(ReportDataTest, EqualRunsHaveNoRegression) {
  const json recs = json::array({record("cpu.blocked", "s1", 1.0), record("cpu.openblas", "s1", 2.0)});
  const RunDiff d = diff_runs(make_run("a", recs), make_run("b", recs), {});
  EXPECT_EQ(d.exit_code(), 0);
  EXPECT_EQ(d.count("same"), 2u);
  EXPECT_EQ(d.count("regression"), 0u);
  EXPECT_DOUBLE_EQ(*row_of(d, "cpu.blocked", "s1").speedup, 1.0);
}

TEST_F(ReportDataTest, ASlowerRecordIsARegressionAndExits3) {
  const fs::path a = make_run("a", json::array({record("cpu.blocked", "s1", 1.0), record("cpu.openblas", "s1", 2.0)}));
  const fs::path b = make_run("b", json::array({record("cpu.blocked", "s1", 0.9), record("cpu.openblas", "s1", 2.0)}));
  const RunDiff d = diff_runs(a, b, {});   // 10 % slower, 5 % tolerance
  EXPECT_EQ(d.exit_code(), 3);
  EXPECT_EQ(row_of(d, "cpu.blocked", "s1").verdict, "regression");
  EXPECT_NEAR(*row_of(d, "cpu.blocked", "s1").speedup, 0.9, 1e-12);
  EXPECT_EQ(d.rows.front().verdict, "regression");   // regressions first
  EXPECT_NE(diff_markdown(d, false).find("| regression | cpu.blocked | s1 |"), std::string::npos);
  // The same change within a wider tolerance passes.
  DiffOptions wide;
  wide.tolerance = 0.15;
  EXPECT_EQ(diff_runs(a, b, wide).exit_code(), 0);
}

TEST_F(ReportDataTest, TheMetricsDirectionDecidesWhatIsWorse) {
  // time_ms.median: lower is better, so B taking longer is the regression and B faster an improvement.
  const fs::path a = make_run("a", json::array({record("p", "s1", 1.0), record("p", "s2", 1.0)}));
  const fs::path b = make_run("b", json::array({record("p", "s1", 0.5), record("p", "s2", 2.0)}));
  DiffOptions time;
  time.metric = "time_ms.median";
  const RunDiff d = diff_runs(a, b, time);
  EXPECT_EQ(row_of(d, "p", "s1").verdict, "regression");
  EXPECT_NEAR(*row_of(d, "p", "s1").speedup, 0.5, 1e-12);
  EXPECT_EQ(row_of(d, "p", "s2").verdict, "improvement");
}

TEST_F(ReportDataTest, MissingNewFailedAndFixedRecordsAreReported) {
  const fs::path a = make_run("a", json::array({record("p", "kept", 1.0), record("p", "gone", 1.0), record("p", "breaks", 1.0),
                                                record("p", "heals", 0, "failed")}));
  const fs::path b = make_run("b", json::array({record("p", "kept", 1.0), record("p", "added", 1.0), record("p", "breaks", 0, "failed"),
                                                record("p", "heals", 1.0)}));
  const RunDiff d = diff_runs(a, b, {});
  EXPECT_EQ(row_of(d, "p", "gone").verdict, "missing");
  EXPECT_EQ(row_of(d, "p", "gone").note, "not in B");
  EXPECT_EQ(row_of(d, "p", "added").verdict, "new");
  EXPECT_EQ(row_of(d, "p", "breaks").verdict, "regression");   // verified before, failing now
  EXPECT_NE(row_of(d, "p", "breaks").note.find("failed in B"), std::string::npos);
  EXPECT_EQ(row_of(d, "p", "heals").verdict, "fixed");
  EXPECT_EQ(d.exit_code(), 3);
  const std::string md = diff_markdown(d, true);
  EXPECT_NE(md.find("| missing | p | gone |"), std::string::npos) << md;
  EXPECT_NE(md.find("1 missing in B"), std::string::npos) << md;
}

TEST_F(ReportDataTest, RecordsPairOnLayoutAndDimensionsToo) {
  json nt = record("p", "s1", 1.0);
  nt["layout"] = "nt";
  const fs::path a = make_run("a", json::array({record("p", "s1", 1.0), nt}));
  json nt_slow = nt;
  nt_slow["tflops"] = 0.5;
  const fs::path b = make_run("b", json::array({record("p", "s1", 1.0), nt_slow}));
  const RunDiff d = diff_runs(a, b, {});
  EXPECT_EQ(d.count("same"), 1u);
  EXPECT_EQ(d.count("regression"), 1u);
  EXPECT_EQ(d.rows.front().dtype, "fp32 nt");
}

TEST_F(ReportDataTest, NothingToPairIsBadInput) {
  const fs::path a = make_run("a", json::array({record("p", "s1", 1.0)}));
  const fs::path b = make_run("b", json::array({record("q", "s2", 1.0)}));
  EXPECT_THROW(diff_runs(a, b, {}), aispflow::InputError);
  EXPECT_THROW(diff_runs(a, dir_ / "nowhere", {}), aispflow::InputError);
  DiffOptions bad;
  bad.metric = "no_such_metric";
  EXPECT_THROW(diff_runs(a, a, bad), aispflow::InputError);
}

TEST_F(ReportDataTest, DocumentJoinsRecordsWithTheirRooflinePoint) {
  // The roofline names its points provider/shape/dtype, "#2" for a repeat: the second p/s1 record is "#2".
  const json roofline = {{"name", "roofline"}, {"type", "roofline"}, {"status", "ran"}, {"reason", "no cache entry"},
                         {"seconds", 0.1}, {"digest", "d2"}, {"inputs", {"sweep"}}};
  json second = record("p", "s1", 3.0);
  second["layout"] = "nt";
  const fs::path run = make_run("a", json::array({record("p", "s1", 1.0), second, record("p", "s2", 0, "failed")}),
                                json::array({roofline}));
  write(run / "nodes" / "roofline" / "artifact.json",
        {{"data", {{"points", {{{"record", "p/s1/fp32"}, {"pct_of_roof", 40.0}, {"binding", "memory"}},
                               {{"record", "p/s1/fp32#2"}, {"pct_of_roof", 90.0}, {"binding", "compute"}}}}}}});
  std::ofstream(run / "nodes" / "roofline" / "roofline.svg") << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>";
  const json doc = report_document(run);
  ASSERT_EQ(doc["records"].size(), 3u);
  EXPECT_EQ(doc["records"][0]["pct_roof"], 40.0);
  EXPECT_EQ(doc["records"][1]["pct_roof"], 90.0);
  EXPECT_EQ(doc["records"][1]["binding"], "compute");
  EXPECT_FALSE(doc["records"][2].contains("pct_roof"));   // failed: never plotted
  EXPECT_EQ(doc["records"][2]["status"], "failed");
  EXPECT_FALSE(doc["records"][0].contains("env"));
  ASSERT_EQ(doc["plots"].size(), 1u);
  EXPECT_EQ(doc["plots"][0]["node"], "roofline");
  EXPECT_EQ(doc["nodes"].size(), 2u);
}

TEST_F(ReportDataTest, DocumentPutsFailuresFirst) {
  const json expect_node = {{"name", "check"}, {"type", "expect"}, {"status", "ran"}, {"reason", "r"}, {"seconds", 0.1},
                            {"digest", "d"}, {"inputs", {"sweep"}}};
  const json comm_node = {{"name", "a2a"}, {"type", "alltoall"}, {"status", "ran"}, {"reason", "r"}, {"seconds", 0.1},
                          {"digest", "d"}, {"inputs", json::array()}};
  const fs::path run = make_run("a", json::array({record("p", "s1", 1.0)}), json::array({expect_node, comm_node}));
  write(run / "nodes" / "check" / "artifact.json",
        json{{"data", {{"results", json::array({{{"status", "pass"}, {"line", 1}}, {{"status", "improved"}, {"line", 2}},
                                                {{"status", "missing"}, {"line", 3}}, {{"status", "regressed"}, {"line", 4}}})}}}});
  write(run / "nodes" / "a2a" / "artifact.json",
        json{{"data", {{"transport", "mpi"},
                       {"points", json::array({{{"result", "PASS"}, {"size_bytes", 1}}, {{"result", "FAIL"}, {"size_bytes", 2}}})}}}});
  const json doc = report_document(run);
  ASSERT_EQ(doc["expect"].size(), 1u);
  std::vector<std::string> order;
  for (const auto& r : doc["expect"][0]["results"]) order.push_back(r["status"]);
  EXPECT_EQ(order, (std::vector<std::string>{"regressed", "missing", "improved", "pass"}));
  ASSERT_EQ(doc["alltoall"].size(), 1u);
  EXPECT_EQ(doc["alltoall"][0]["points"][0]["result"], "FAIL");
  EXPECT_EQ(doc["alltoall"][0]["points"][1]["result"], "PASS");
}

TEST(ReportHtml, EmbeddedJsonCannotCloseItsScript) {
  const json doc = {{"reason", "</script><script>alert(1)</script> <!-- x"}};
  const std::string text = embeddable_json(doc);
  EXPECT_EQ(text.find("</"), std::string::npos) << text;
  EXPECT_EQ(text.find("<!--"), std::string::npos) << text;
  EXPECT_EQ(json::parse(text), doc);   // still the same document
  const std::string page = render_html(doc, "a <b> title");
  EXPECT_EQ(page.find("</script><script>alert"), std::string::npos);
  EXPECT_NE(page.find("<title>a &lt;b&gt; title</title>"), std::string::npos);
  EXPECT_NE(page.find("<script type=\"application/json\" id=\"aispflow-data\">"), std::string::npos);
}

}  // namespace
