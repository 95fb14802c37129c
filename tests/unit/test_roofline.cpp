// The `roofline` node: attainable = min(compute, intensity x bandwidth) and the binding resource on
// hand-made ceilings and records, the choice of ceilings (best measured memory roof of the slowest level,
// compute by dtype with a stated fallback), datasheet percentages, a well-formed SVG with one marker per
// ok record, the CSV columns, Nsight Compute CSV points, and the SVG helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <regex>

#include "nodes/ncu_csv.hpp"
#include "nodes/ncu_profile.hpp"
#include "nodes/node_factories.hpp"
#include "nodes/roofline_kernels.hpp"
#include "nodes/svg.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::make_record;
using testing::NodeHarness;
using testing::sweep_artifact;

json ceiling(const std::string& name, const std::string& kind, double value, const std::string& dtype = "",
             const std::string& source = "measured") {
  json c = {{"name", name},
            {"kind", kind},
            {"unit", kind == "memory" ? "GB/s" : "TFLOP/s"},
            {"value", value},
            {"source", source},
            {"method", "test"}};
  if (!dtype.empty()) c["dtype"] = dtype;
  return c;
}

// peak artifact: DRAM copy 100 GB/s and triad 120 GB/s; fp32 2 TFLOP/s, fp64 1 TFLOP/s.
json cpu_peaks() {
  return {{"ceilings", json::array({ceiling("dram.copy", "memory", 100), ceiling("dram.triad", "memory", 120),
                                    ceiling("fp32.fma", "compute", 2.0, "fp32"),
                                    ceiling("fp64.fma", "compute", 1.0, "fp64")})},
          {"env", {{"cpu_model", "Test CPU 9000"}}}};
}

// A record placed at a chosen intensity and throughput (the shape is only its name here).
json point(const std::string& provider, const std::string& shape, const std::string& dtype, double intensity,
           double tflops) {
  json r = make_record(provider, shape, 64, 64, 64, dtype, tflops);
  r["intensity"] = intensity;
  return r;
}

const json& point_named(const json& data, const std::string& id) {
  for (const auto& p : data["points"])
    if (p["record"] == id) return p;
  static const json none;
  ADD_FAILURE() << "no point " << id;
  return none;
}

// Minimal XML well-formedness: every tag closed in order, attributes quoted, no stray '<' or '&'.
// Returns "" when fine, else what is wrong.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  const std::regex attr_re(R"(\s+[A-Za-z_:][-A-Za-z0-9_:.]*="[^"<]*")");
  while (i < xml.size()) {
    const std::size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    for (std::size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1))
      if (!std::regex_search(text.substr(a), std::regex("^&(amp|lt|gt|quot|apos);"))) return "stray & in text";
    if (lt == std::string::npos) break;
    const std::size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unclosed tag";
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (tag.rfind('/', 0) == 0) {
      if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
      stack.pop_back();
    } else {
      const bool self_closing = !tag.empty() && tag.back() == '/';
      if (self_closing) tag.pop_back();
      const std::size_t sp = tag.find_first_of(" \n");
      const std::string name = tag.substr(0, sp);
      if (name.empty()) return "empty tag name";
      const std::string attrs = sp == std::string::npos ? "" : tag.substr(sp);
      if (!std::regex_replace(attrs, attr_re, "").empty() &&
          std::regex_replace(attrs, attr_re, "").find_first_not_of(" \n") != std::string::npos)
        return "bad attributes in <" + name + ">: " + attrs;
      if (!self_closing) stack.push_back(name);
    }
    i = gt + 1;
  }
  return stack.empty() ? "" : "unclosed <" + stack.back() + ">";
}

// Number of marker elements inside <g id="points">.
int markers_in_points_group(const std::string& svg) {
  const auto start = svg.find("<g id=\"points\">");
  if (start == std::string::npos) return -1;
  // The group holds one clip group; both close before the legend starts.
  const auto end = svg.find("<g id=\"legend\">", start);
  const std::string group = svg.substr(start, end - start);
  int n = 0;
  for (const char* tag : {"<circle ", "<rect ", "<polygon "})
    for (auto p = group.find(tag); p != std::string::npos; p = group.find(tag, p + 1)) ++n;
  return n;
}

TEST(Roofline, AttainableIsMinOfComputeAndBandwidthTimesIntensity) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  h.add_input("sweep", sweep_artifact({
                           point("cpu.blocked", "low", "fp32", 5.0, 0.3),     // 5 x 120 GB/s = 0.6 < 2
                           point("cpu.blocked", "high", "fp32", 100.0, 1.5),  // 12 > 2 -> compute
                           point("cpu.naive", "dp", "fp64", 100.0, 0.5),      // fp64 roof 1.0
                           point("cpu.blocked", "half", "bf16", 100.0, 1.0),  // no bf16 ceiling: fallback
                       }));
  const auto out = h.run(*make_roofline_node(), json::object());

  const json& low = point_named(out.data, "cpu.blocked/low/fp32");
  EXPECT_NEAR(low["attainable_tflops"].get<double>(), 0.6, 1e-12);   // best memory roof: triad, not copy
  EXPECT_EQ(low["binding"], "memory");
  EXPECT_EQ(low["memory_ceiling"], "dram.triad");
  EXPECT_NEAR(low["pct_of_roof"].get<double>(), 50.0, 1e-9);

  const json& high = point_named(out.data, "cpu.blocked/high/fp32");
  EXPECT_NEAR(high["attainable_tflops"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(high["binding"], "compute");
  EXPECT_EQ(high["compute_ceiling"], "fp32.fma");
  EXPECT_EQ(high["compute_ceiling_choice"], "dtype match");

  const json& dp = point_named(out.data, "cpu.naive/dp/fp64");
  EXPECT_NEAR(dp["attainable_tflops"].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(dp["compute_ceiling"], "fp64.fma");

  const json& half = point_named(out.data, "cpu.blocked/half/bf16");
  EXPECT_EQ(half["compute_ceiling"], "fp32.fma");   // the highest measured one
  EXPECT_NE(half["compute_ceiling_choice"].get<std::string>().find("fallback"), std::string::npos);

  // Ridge points: compute / bandwidth, for every pair.
  bool found = false;
  for (const auto& r : out.data["ridge_points"])
    if (r["compute"] == "fp32.fma" && r["memory"] == "dram.triad") {
      EXPECT_NEAR(r["intensity"].get<double>(), 2.0 * 1000 / 120, 1e-9);
      found = true;
    }
  EXPECT_TRUE(found);
  // One ridge per compute roof with the best roof of each memory level (dram.copy is not the best): 2.
  EXPECT_EQ(out.data["ridge_points"].size(), 2u);
  EXPECT_EQ(out.data["device"], "Test CPU 9000");
  EXPECT_FALSE(out.data["dual_roofline"].get<bool>());
}

TEST(Roofline, BindingFlipsExactlyAtTheRidge) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  const double ridge = 2.0 * 1000 / 120;
  h.add_input("sweep", sweep_artifact({point("p", "below", "fp32", ridge * 0.99, 0.1),
                                       point("p", "above", "fp32", ridge * 1.01, 0.1)}));
  const auto out = h.run(*make_roofline_node(), json::object());
  EXPECT_EQ(point_named(out.data, "p/below/fp32")["binding"], "memory");
  EXPECT_EQ(point_named(out.data, "p/above/fp32")["binding"], "compute");
}

TEST(Roofline, SvgIsWellFormedWithOneMarkerPerOkRecord) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  h.add_input("sweep", sweep_artifact({
                           point("cpu.blocked", "a", "fp32", 3, 0.2),
                           point("cpu.openblas", "a", "fp32", 3, 0.3),
                           point("cpu.openblas", "b", "fp32", 300, 1.7),
                           point("odd<&>\"provider'", "c", "fp32", 30, 0.9),   // escaping
                           make_record("cpu.naive", "big", 8, 8, 8, "fp32", 0, "skipped", "above size limit"),
                           make_record("cpu.blocked", "bad", 8, 8, 8, "fp32", 0, "failed", "mismatch"),
                       }));
  const auto out = h.run(*make_roofline_node(), {{"title", "Test & <roofline>"}});
  const std::string svg = h.read_output("roofline.svg");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(markers_in_points_group(svg), 4);
  EXPECT_EQ(out.data["points"].size(), 4u);
  EXPECT_EQ(out.data["records_not_plotted"], 2);
  EXPECT_NE(svg.find("Test &amp; &lt;roofline&gt;"), std::string::npos);
  EXPECT_NE(svg.find("FLOP/byte"), std::string::npos);      // axis units
  EXPECT_NE(svg.find("TFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("Test CPU 9000"), std::string::npos);  // device in the title area
  EXPECT_NE(svg.find(">cpu.openblas</text>"), std::string::npos);   // legend entry
  EXPECT_NE(svg.find("dram.triad"), std::string::npos);     // ceiling label
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(Roofline, CsvHasTheDocumentedColumns) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  h.add_input("sweep", sweep_artifact({point("cpu.blocked", "low", "fp32", 5.0, 0.3),
                                       point("cpu.blocked", "high", "fp32", 100.0, 1.5)}));
  h.run(*make_roofline_node(), json::object());
  const std::string csv = h.read_output("roofline.csv");
  const auto rows = ncu::parse_csv(csv);
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::string> header = {"record", "source", "provider", "shape", "dtype",
                                           "intensity_flop_per_byte", "achieved_tflops", "attainable_tflops",
                                           "pct_of_roof", "binding", "memory_ceiling", "compute_ceiling",
                                           "compute_ceiling_choice", "datasheet_attainable_tflops",
                                           "pct_of_datasheet_roof", "pct_of_compute_ceiling"};
  EXPECT_EQ(rows[0], header);
  EXPECT_EQ(rows[1][0], "cpu.blocked/low/fp32");
  EXPECT_NEAR(std::stod(rows[1][7]), 0.6, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][8]), 50.0, 1e-6);
  EXPECT_EQ(rows[1][9], "memory");
  EXPECT_EQ(rows[2][9], "compute");
  EXPECT_EQ(rows[1][13], "");   // no datasheet ceilings in the inputs
  // Every point as a share of the compute ceiling, memory-bound ones too: achieved / P (x 100).
  const double compute_peak = std::stod(rows[2][7]);   // the compute-bound point attains P itself
  EXPECT_NEAR(std::stod(rows[1][15]), 100.0 * std::stod(rows[1][6]) / compute_peak, 1e-3);
  EXPECT_NEAR(std::stod(rows[2][15]), 100.0 * std::stod(rows[2][6]) / compute_peak, 1e-3);
}

TEST(Roofline, DatasheetCeilingsGiveASecondPercentageAndDashedLines) {
  NodeHarness h("roofline");
  json peaks = cpu_peaks();
  peaks["ceilings"].push_back(ceiling("datasheet.hbm", "memory", 200, "", "datasheet"));
  peaks["ceilings"].push_back(ceiling("datasheet.fp32", "compute", 4.0, "fp32", "datasheet"));
  h.add_input("peak", peaks);
  h.add_input("sweep", sweep_artifact({point("p", "low", "fp32", 5.0, 0.3), point("p", "high", "fp32", 100.0, 1.5)}));
  const auto out = h.run(*make_roofline_node(), json::object());
  const json& low = point_named(out.data, "p/low/fp32");
  EXPECT_NEAR(low["attainable_tflops"].get<double>(), 0.6, 1e-12);             // measured roof still used
  EXPECT_NEAR(low["datasheet_attainable_tflops"].get<double>(), 1.0, 1e-12);   // 5 x 200 GB/s
  EXPECT_NEAR(low["pct_of_datasheet_roof"].get<double>(), 30.0, 1e-9);
  EXPECT_NEAR(point_named(out.data, "p/high/fp32")["datasheet_attainable_tflops"].get<double>(), 4.0, 1e-12);
  const std::string svg = h.read_output("roofline.svg");
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("(datasheet)"), std::string::npos);
  EXPECT_EQ(xml_problem(svg), "");
}

TEST(Roofline, TwoMemoryLevelsMakeADualRooflineOnTheSlowestLevel) {
  NodeHarness h("roofline");
  json peaks = cpu_peaks();
  peaks["ceilings"].push_back(ceiling("l2.read", "memory", 900));   // faster level: drawn, not the roof
  h.add_input("peak", peaks);
  h.add_input("sweep", sweep_artifact({point("p", "low", "fp32", 5.0, 0.3)}));
  const auto out = h.run(*make_roofline_node(), json::object());
  EXPECT_TRUE(out.data["dual_roofline"].get<bool>());
  EXPECT_EQ(point_named(out.data, "p/low/fp32")["memory_ceiling"], "dram.triad");
  EXPECT_NE(h.read_output("roofline.svg").find("Dual roofline"), std::string::npos);
}

TEST(Roofline, CeilingSelectionParams) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  h.add_input("sweep", sweep_artifact({point("p", "low", "fp32", 5.0, 0.3)}));
  const auto out = h.run(*make_roofline_node(), {{"memory_ceilings", {"dram.copy"}}});
  EXPECT_NEAR(point_named(out.data, "p/low/fp32")["attainable_tflops"].get<double>(), 0.5, 1e-12);   // 5 x 100
  EXPECT_EQ(out.data["ceilings"].size(), 3u);

  NodeHarness bad("roofline");
  bad.add_input("peak", cpu_peaks());
  bad.add_input("sweep", sweep_artifact({point("p", "low", "fp32", 5.0, 0.3)}));
  try {
    bad.run(*make_roofline_node(), {{"compute_ceilings", {"fp16.tensor"}}});
    FAIL() << "expected a NodeError";
  } catch (const NodeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("compute_ceilings"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fp16.tensor"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fp32.fma, fp64.fma"), std::string::npos) << msg;
  }
}

TEST(Roofline, NoCeilingsIsAClearError) {
  NodeHarness h("roofline");
  h.add_input("sweep", sweep_artifact({point("p", "low", "fp32", 5.0, 0.3)}));
  try {
    h.run(*make_roofline_node(), json::object());
    FAIL() << "expected a NodeError";
  } catch (const NodeError& e) {
    EXPECT_NE(std::string(e.what()).find("peak"), std::string::npos) << e.what();
  }
}

TEST(Roofline, NsightComputeCsvGivesMeasuredBytesPoints) {
  NodeHarness h("roofline");
  h.add_input("peak", cpu_peaks());
  h.add_input("sweep", sweep_artifact({point("cpu.blocked", "low", "fp32", 5.0, 0.3)}));
  // --page raw with a units row: two launches of one kernel, one of another, one unknown kernel.
  h.write_file("prof.csv", R"csv(==PROF== Connected to process 1234
"ID","Process ID","Kernel Name","dram__bytes.sum","gpu__time_duration.sum"
"","","","Mbyte","usecond"
"0","1234","sgemm_128x64_nn","10","100"
"1","1234","sgemm_128x64_nn","10","100"
"2","1234","void gemv<float, 4>(float const*, float*)","1,000","50"
"3","1234","mystery_kernel","1","1"
)csv");
  h.write_file("flops.csv", "kernel,flops,provider,shape,dtype\nsgemm_128x64_nn,2e9,cublaslt,big,fp32\n"
                            "void gemv<*,fp32-ish\n"
                            "\"void gemv<*\",4e8,cublaslt,skinny,fp32\n");
  // The row "void gemv<*,fp32-ish" has a non-numeric flops value: that must be an error, not a silent skip.
  EXPECT_THROW(h.run(*make_roofline_node(), {{"ncu_csv", "prof.csv"}, {"ncu_flops_csv", "flops.csv"}}), NodeError);

  h.write_file("flops.csv", "kernel,flops,provider,shape,dtype\nsgemm_128x64_nn,2e9,cublaslt,big,fp32\n"
                            "\"void gemv<*\",4e8,cublaslt,skinny,fp32\n");
  const auto out = h.run(*make_roofline_node(), {{"ncu_csv", "prof.csv"}, {"ncu_flops_csv", "flops.csv"}});
  const json& big = point_named(out.data, "ncu:cublaslt/big/fp32");
  EXPECT_EQ(big["source"], "ncu");
  EXPECT_NEAR(big["intensity"].get<double>(), 2 * 2e9 / 20e6, 1e-9);          // FLOPs / measured bytes
  EXPECT_NEAR(big["achieved_tflops"].get<double>(), 2 * 2e9 / 200e-6 / 1e12, 1e-9);
  const json& skinny = point_named(out.data, "ncu:cublaslt/skinny/fp32");
  EXPECT_NEAR(skinny["intensity"].get<double>(), 4e8 / 1e9, 1e-12);             // "1,000" Mbyte
  ASSERT_EQ(out.data["ncu_unmatched"].size(), 1u);
  EXPECT_EQ(out.data["ncu_unmatched"][0]["kernel"], "mystery_kernel");
  EXPECT_EQ(out.data["points"].size(), 3u);
  EXPECT_EQ(markers_in_points_group(h.read_output("roofline.svg")), 3);
}

TEST(Roofline, NsightComputeDetailsPageIsReadToo) {
  const std::string details = R"("ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"
"0","k1","Command line profiler metrics","dram__bytes_read.sum","Kbyte","1,500"
"0","k1","Command line profiler metrics","dram__bytes_write.sum","Kbyte","500"
"0","k1","Command line profiler metrics","gpu__time_duration.sum","msecond","0.5"
)";
  const auto traffic = ncu::read_traffic(details, "d.csv");
  ASSERT_EQ(traffic.size(), 1u);
  EXPECT_EQ(traffic[0].kernel, "k1");
  EXPECT_DOUBLE_EQ(traffic[0].dram_bytes, 2e6);
  ASSERT_TRUE(traffic[0].seconds.has_value());
  EXPECT_DOUBLE_EQ(*traffic[0].seconds, 0.5e-3);
  EXPECT_THROW(ncu::read_traffic("\"ID\",\"Kernel Name\",\"sm__cycles.sum\"\n\"0\",\"k\",\"5\"\n", "x.csv"),
               std::runtime_error);
}

// The three Nsight Compute readers find their table through ncu::kernel_header_row: past ncu's own log lines, and
// an export with no "Kernel Name" column (a table of something else, or ncu's log alone) is refused naming the file.
TEST(NcuCsv, TheKernelTableIsFoundPastLogLinesOrRefusedNamingTheFile) {
  const std::vector<std::vector<std::string>> rows = {
      {"==PROF== Connected to process 1"}, {"ID", "Kernel Name", "dram__bytes.sum"}, {"0", "k", "5"}};
  EXPECT_EQ(ncu::kernel_header_row(rows, "p.csv"), 1u);
  const std::string no_table = "\"ID\",\"Name\",\"dram__bytes.sum\"\n\"0\",\"k\",\"5\"\n";
  auto message = [](const std::function<void()>& read) {
    try {
      read();
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string expected = "p.csv: no \"Kernel Name\" column";
  EXPECT_EQ(message([&] { ncu::kernel_header_row(ncu::parse_csv(no_table), "p.csv"); }).rfind(expected, 0), 0u);
  EXPECT_EQ(message([&] { ncu::read_traffic(no_table, "p.csv"); }).rfind(expected, 0), 0u);
  EXPECT_EQ(message([&] { roofline::read_throughput(no_table, "p.csv", nullptr); }).rfind(expected, 0), 0u);
  EXPECT_EQ(message([&] { ncu::read_launches(no_table, "p.csv"); }).rfind(expected, 0), 0u);
  // A parse error names the file as well.
  EXPECT_EQ(message([] { ncu::parse_csv_of("\"unterminated\n", "p.csv"); }).rfind("p.csv: ", 0), 0u);
}

TEST(Svg, SpreadLabelsKeepsOrderAndGap) {
  const auto ys = svg::spread_labels({100, 101, 102, 300}, 14, 0, 1000);
  ASSERT_EQ(ys.size(), 4u);
  EXPECT_GE(ys[1] - ys[0], 14 - 1e-9);
  EXPECT_GE(ys[2] - ys[1], 14 - 1e-9);
  EXPECT_DOUBLE_EQ(ys[3], 300);                     // far away: untouched
  EXPECT_NEAR((ys[0] + ys[1] + ys[2]) / 3, 101, 1e-9);   // the cluster stays centred where it wanted to be
  const auto clamped = svg::spread_labels({5, 6}, 14, 10, 1000);
  EXPECT_GE(clamped[0], 10);
  EXPECT_GE(clamped[1] - clamped[0], 14 - 1e-9);
  const auto unordered = svg::spread_labels({50, 10, 49}, 10, 0, 1000);   // result follows input order
  EXPECT_LT(unordered[1], unordered[2]);
  EXPECT_LT(unordered[2], unordered[0]);
}

TEST(Svg, LogAxisAndEscaping) {
  svg::LogAxis x{0.1, 1000, 0, 400};
  EXPECT_DOUBLE_EQ(x.to_px(0.1), 0);
  EXPECT_DOUBLE_EQ(x.to_px(1000), 400);
  EXPECT_NEAR(x.to_px(1), 100, 1e-9);
  EXPECT_EQ(x.decades().size(), 5u);
  const auto [lo, hi] = svg::LogAxis::decade_range(0.3, 45);
  EXPECT_DOUBLE_EQ(lo, 0.1);
  EXPECT_DOUBLE_EQ(hi, 100);
  EXPECT_EQ(svg::decade_label(0.01), "0.01");
  EXPECT_EQ(svg::decade_label(1000), "1000");
  EXPECT_EQ(svg::decade_label(1e7), "1e7");
  EXPECT_EQ(svg::escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
  EXPECT_EQ(svg::num(1.0 / 3), "0.33");
  EXPECT_EQ(svg::num(std::nan("")), "0");
}

}  // namespace
}  // namespace aispflow
