// The roofline's dual-roofline input (nodes/roofline_kernels.hpp): the kernel metadata CSV, the Nsight Compute
// throughput CSV (raw and details pages, percent or ratio), matching exactly or by a unique substring (an
// ambiguous name is an error), the binding resource (the most utilised), and the node on the example files
// under examples/data: points, roofline_kernels.csv, hover text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "nodes/node_factories.hpp"
#include "nodes/roofline_kernels.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::NodeHarness;
using namespace roofline;

std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(AISPFLOW_SOURCE_DIR) + "/" + relative);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RooflineKernels, MetadataCsvAndItsErrors) {
  const auto rows = read_kernel_rows("kernel,intensity,achieved_tflops,label\ngemm_a,100,500,big GEMM\nnorm,0.5,1.5\n", "k.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kernel, "gemm_a");
  EXPECT_DOUBLE_EQ(rows[0].intensity, 100);
  EXPECT_DOUBLE_EQ(rows[0].achieved_tflops, 500);
  EXPECT_EQ(rows[0].label, "big GEMM");
  EXPECT_EQ(rows[1].label, "");
  EXPECT_EQ(error_of([] { read_kernel_rows("kernel,flops\na,1\n", "k.csv"); }).rfind("k.csv:1: expected a header", 0), 0u);
  const std::string bad = error_of([] { read_kernel_rows("kernel,intensity,achieved_tflops\na,1,2\nb,x,3\n", "k.csv"); });
  EXPECT_NE(bad.find("k.csv:3: column intensity: expected a positive number, got 'x'"), std::string::npos) << bad;
}

TEST(RooflineKernels, ThroughputRawPageWithPercentUnits) {
  std::vector<std::string> scales;
  const auto t = read_throughput(source_file("examples/data/dual_roofline_ncu.csv"), "ncu.csv", &scales);
  ASSERT_EQ(t.size(), 4u);   // launches of one kernel name are averaged
  EXPECT_EQ(t[0].launches, 2);
  EXPECT_NEAR(t[0].utilisation.at("TMEM"), (0.915 + 0.909) / 2, 1e-12);
  EXPECT_NEAR(t[0].utilisation.at("compute"), (0.784 + 0.788) / 2, 1e-12);
  EXPECT_NEAR(t[3].utilisation.at("DRAM"), 0.889, 1e-12);
  EXPECT_EQ(scales.size(), 4u);
  for (const auto& s : scales) EXPECT_NE(s.find("percent"), std::string::npos) << s;
}

TEST(RooflineKernels, ThroughputDetailsPageAndRatios) {
  const std::string details =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k1\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\",\"50\"\n"
      "\"0\",\"k1\",\"lts__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\",\"70\"\n"
      "\"0\",\"k1\",\"gpu__time_duration.sum\",\"nsecond\",\"1200\"\n";
  const auto d = read_throughput(details, "d.csv");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NEAR(d[0].utilisation.at("L2"), 0.7, 1e-12);
  EXPECT_EQ(d[0].utilisation.count("DRAM"), 0u);
  // No unit and no pct in the name: values at most 1 are ratios, values above 1 percents.
  const auto r = read_throughput("Kernel Name,sm__throughput.avg,dram__throughput.avg\nk,0.4,0.9\n", "r.csv");
  EXPECT_NEAR(r[0].utilisation.at("DRAM"), 0.9, 1e-12);
  const auto p = read_throughput("Kernel Name,sm__throughput.avg,dram__throughput.avg\nk,40,0.9\n", "p.csv");
  EXPECT_NEAR(p[0].utilisation.at("compute"), 0.4, 1e-12);
  EXPECT_NE(error_of([] { read_throughput("Kernel Name,gpu__time_duration.sum\nk,5\n", "n.csv"); })
                .find("no throughput metric"), std::string::npos);
}

TEST(RooflineKernels, MatchingAndBindingResource) {
  std::vector<KernelThroughput> ncu = {{"void gemm_tcgen05_a<1>(P)", 1, {{"compute", 0.6}, {"TMEM", 0.9}, {"DRAM", 0.2}}},
                                       {"void gemm_tcgen05_b<1>(P)", 1, {{"compute", 0.5}, {"L2", 0.5}, {"DRAM", 0.3}}},
                                       {"norm", 1, {{"compute", 0.1}, {"DRAM", 0.8}}}};
  std::vector<KernelRow> rows = {{"gemm_tcgen05_a", 100, 900, "", 2}, {"void gemm_tcgen05_b<1>(P)", 50, 300, "", 3},
                                 {"norm", 1, 2, "", 4}, {"missing", 1, 1, "", 5}};
  const auto b = bind_kernels(rows, ncu, "k.csv");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].resource, "TMEM");     // unique substring
  EXPECT_EQ(b[0].ncu->kernel, "void gemm_tcgen05_a<1>(P)");
  EXPECT_EQ(b[1].resource, "compute");  // exact; a tie goes to the earlier resource (compute before L2)
  EXPECT_EQ(b[2].resource, "DRAM");
  EXPECT_EQ(b[3].resource, "unknown");
  EXPECT_FALSE(b[3].ncu.has_value());
  EXPECT_EQ(b[0].describe(), "TMEM-bound (compute 60%, TMEM 90%, DRAM 20%)");
  const std::string ambiguous = error_of([&] { bind_kernels({{"gemm_tcgen05", 1, 1, "", 7}}, ncu, "k.csv"); });
  EXPECT_NE(ambiguous.find("k.csv:7: kernel 'gemm_tcgen05' is part of 2 kernel names"), std::string::npos) << ambiguous;
  const std::string csv = kernels_csv(b);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "kernel,ncu_kernel,label,intensity_flop_per_byte,achieved_tflops,compute_pct,tmem_pct,l2_pct,dram_pct,"
            "binding_resource");
  EXPECT_NE(csv.find("gemm_tcgen05_a,void gemm_tcgen05_a<1>(P),,100,900,60,90,,20,TMEM\n"), std::string::npos) << csv;
}

TEST(RooflineKernels, NodeOnTheExampleFiles) {
  NodeHarness h("roofline-kernels");
  h.add_input("peak", {{"ceilings", json::array({{{"name", "hbm.read"}, {"kind", "memory"}, {"level", "hbm"},
                                                  {"unit", "GB/s"}, {"value", 7000.0}},
                                                 {{"name", "l2.read"}, {"kind", "memory"}, {"level", "l2"},
                                                  {"unit", "GB/s"}, {"value", 20000.0}},
                                                 {{"name", "tensor.bf16"}, {"kind", "compute"}, {"dtype", "bf16"},
                                                  {"unit", "TFLOP/s"}, {"value", 2000.0}}})}});
  const std::string kernels = h.write_file("data/k.csv", source_file("examples/data/dual_roofline_kernels.csv"));
  const std::string ncu = h.write_file("data/ncu.csv", source_file("examples/data/dual_roofline_ncu.csv"));
  const auto out = h.run(*make_roofline_node(), {{"kernels_csv", kernels}, {"ncu_throughput_csv", ncu}});
  ASSERT_EQ(out.data["kernels"].size(), 4u);
  std::vector<std::string> resources;
  for (const auto& k : out.data["kernels"]) resources.push_back(k["binding_resource"]);
  EXPECT_EQ(resources, (std::vector<std::string>{"TMEM", "DRAM", "L2", "DRAM"}));
  EXPECT_TRUE(out.data["dual_roofline"].get<bool>());
  EXPECT_EQ(out.data["points"].size(), 4u);
  const std::string csv = h.read_output("roofline_kernels.csv");
  EXPECT_NE(csv.find(",TMEM\n"), std::string::npos) << csv;
  const std::string svg = h.read_output("roofline.svg");
  if (const char* dir = std::getenv("AISPFLOW_TEST_SVG_DIR")) std::ofstream(std::string(dir) + "/dual_roofline_example.svg") << svg;
  EXPECT_NE(svg.find("TMEM-bound (compute 79%, TMEM 91%, L2 33%, DRAM 22%)"), std::string::npos);
  EXPECT_NE(svg.find(">bound: TMEM</text>"), std::string::npos);   // the legend names the colour

  NodeHarness half("roofline-kernels-half");
  half.add_input("peak", {{"ceilings", json::array()}});
  try {
    half.run(*make_roofline_node(), {{"kernels_csv", "k.csv"}});
    FAIL() << "kernels_csv without ncu_throughput_csv must be refused";
  } catch (const NodeError& e) {
    EXPECT_NE(std::string(e.what()).find("go together"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aispflow
