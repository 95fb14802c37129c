// The roofline plot stays readable: on the committed H100 inputs (bench/results/h100/roofline: the peak
// artifact and the sweep records), no two ceiling labels' boxes intersect and none leaves the plot area, with
// the default ceilings and with all of them; by default only the compute ceilings of the points' dtypes and
// the best memory roof per level are drawn; equal values share one label; points keep their hover text.
// The box test itself (rotated rectangles) is checked on hand-made cases first, so it can fail.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "nodes/node_factories.hpp"
#include "nodes/roofline_plot.hpp"
#include "nodes/svg.hpp"
#include "unit/analysis_fixtures.hpp"

namespace aispflow {
namespace {

using testing::NodeHarness;

json read_json(const std::string& relative) {
  std::ifstream in(std::string(AISPFLOW_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream b;
  b << in.rdbuf();
  return json::parse(b.str());
}

std::string unescape(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}})
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

struct Label {
  std::string text;
  svg::TextBox box;
};

// The <text> elements of <g id="ceiling-labels">, with the boxes their attributes give them.
std::vector<Label> ceiling_labels(const std::string& svg_text) {
  const auto start = svg_text.find("<g id=\"ceiling-labels\">");
  EXPECT_NE(start, std::string::npos) << "no ceiling-labels group";
  if (start == std::string::npos) return {};
  const auto end = svg_text.find("</g>", start);
  const std::string group = svg_text.substr(start, end - start);
  const std::regex text_re(
      R"re(<text x="([-0-9.]+)" y="([-0-9.]+)" font-size="([0-9.]+)" text-anchor="(\w+)"[^>]*?(?: transform="rotate\(([-0-9.]+) [-0-9.]+ [-0-9.]+\)")?>([^<]*)</text>)re");
  std::vector<Label> out;
  for (auto it = std::sregex_iterator(group.begin(), group.end(), text_re); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    svg::Font f;
    f.size = std::stod(m[3]);
    f.anchor = m[4];
    f.rotate_deg = m[5].matched ? std::stod(m[5]) : 0.0;
    const std::string text = unescape(m[6]);
    out.push_back({text, svg::text_box(std::stod(m[1]), std::stod(m[2]), text, f)});
  }
  return out;
}

// The plot area: the first clip rectangle (the roof lines are clipped to it).
std::array<double, 4> plot_area(const std::string& svg_text) {
  std::smatch m;
  const std::regex clip_re(R"re(<clipPath id="clip1"><rect x="([-0-9.]+)" y="([-0-9.]+)" width="([0-9.]+)" height="([0-9.]+)")re");
  EXPECT_TRUE(std::regex_search(svg_text, m, clip_re));
  const double x = std::stod(m[1]), y = std::stod(m[2]);
  return {x, y, x + std::stod(m[3]), y + std::stod(m[4])};
}

// "" when no two labels intersect and all lie inside the plot area, else what is wrong.
std::string label_problem(const std::string& svg_text) {
  const auto labels = ceiling_labels(svg_text);
  const auto [x0, y0, x1, y1] = plot_area(svg_text);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!labels[i].box.inside(x0, y0, x1, y1)) return "'" + labels[i].text + "' leaves the plot area";
    for (std::size_t j = i + 1; j < labels.size(); ++j)
      if (labels[i].box.intersects(labels[j].box)) return "'" + labels[i].text + "' overlaps '" + labels[j].text + "'";
  }
  return "";
}

// AISPFLOW_TEST_SVG_DIR=dir keeps the plots (roofline_h100[_all|_levels].svg) to look at, e.g. with rsvg-convert.
// The committed H100 peaks (bench/results/h100/roofline/peak.json) were measured with the L2 and shared-memory
// levels; without `levels` those ceilings are left out (the single-level plot).
NodeOutput run_h100(NodeHarness& h, const json& params, bool levels = false) {
  json peak = read_json("bench/results/h100/roofline/peak.json");
  int on_chip = 0;
  json kept = json::array();
  for (const auto& c : peak["ceilings"]) {
    const std::string level = c.value("level", std::string());
    const bool chip = level == "l2" || level == "smem";
    on_chip += chip ? 1 : 0;
    if (levels || !chip) kept.push_back(c);
  }
  EXPECT_GE(on_chip, 2) << "the committed H100 peaks should hold the measured l2.read and smem.read";
  peak["ceilings"] = kept;
  h.add_input("peak", peak);
  h.add_input("sweep", read_json("bench/results/h100/roofline/sweep_records.json"));
  NodeOutput out = h.run(*make_roofline_node(), params);
  if (const char* dir = std::getenv("AISPFLOW_TEST_SVG_DIR"))
    std::ofstream(std::string(dir) + "/roofline_h100" + (params.value("all_ceilings", false) ? "_all" : "") +
                  (levels ? "_levels" : "") + ".svg")
        << h.read_output("roofline.svg");
  return out;
}

TEST(TextBox, RotatedBoxesIntersectOnlyWhenTheyOverlap) {
  svg::Font f;
  f.size = 10;
  const auto a = svg::text_box(100, 100, "abcdefghij", f);   // about 65 x 13 px from (100, 90.5)
  EXPECT_TRUE(a.intersects(svg::text_box(150, 105, "abcdefghij", f)));
  EXPECT_FALSE(a.intersects(svg::text_box(100, 120, "abcdefghij", f)));   // one line lower
  EXPECT_FALSE(a.intersects(svg::text_box(170, 100, "abcdefghij", f)));   // right of it
  svg::Font end = f;
  end.anchor = "end";
  EXPECT_TRUE(a.intersects(svg::text_box(120, 100, "abcdefghij", end)));   // ends where a starts + 20
  // Parallel rotated labels a line apart (perpendicular to the text) do not touch, although their
  // axis-aligned bounding boxes overlap; the same two shifted along the text do.
  svg::Font r = f;
  r.rotate_deg = -40;
  const double a_rad = -40 * M_PI / 180, nx = std::sin(a_rad), ny = -std::cos(a_rad);
  const auto p = svg::text_box(300, 300, "abcdefghij", r);
  EXPECT_FALSE(p.intersects(svg::text_box(300 + 16 * nx, 300 + 16 * ny, "abcdefghij", r)));
  EXPECT_TRUE(p.intersects(svg::text_box(300 + 8 * nx, 300 + 8 * ny, "abcdefghij", r)));
  EXPECT_TRUE(p.inside(250, 200, 400, 320));
  EXPECT_FALSE(p.inside(310, 200, 400, 320));
}

TEST(RooflinePlot, H100LabelsNeverOverlapOrLeaveThePlot) {
  for (const auto& [all, levels] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    SCOPED_TRACE(std::string(all ? "all_ceilings" : "default ceilings") + (levels ? ", with L2 and smem" : ""));
    NodeHarness h("roofline-h100");
    const auto out = run_h100(h, {{"all_ceilings", all}}, levels);
    EXPECT_EQ(out.data["dual_roofline"].get<bool>(), levels);
    const std::string svg_text = h.read_output("roofline.svg");
    EXPECT_EQ(label_problem(svg_text), "");
    const auto labels = ceiling_labels(svg_text);
    EXPECT_GE(labels.size(), (all ? 8u : 5u) + (levels ? 2u : 0u));
    // The check can fail: the same labels moved onto each other are caught.
    if (labels.size() >= 2) {
      std::string moved = svg_text;
      const auto first = moved.find("<text ", moved.find("<g id=\"ceiling-labels\">"));
      const auto second = moved.find("<text ", first + 1);
      std::smatch m;
      const std::string first_tag = moved.substr(first, moved.find('>', first) - first);
      ASSERT_TRUE(std::regex_search(first_tag, m, std::regex(R"re(x="([-0-9.]+)" y="([-0-9.]+)")re")));
      const std::string xy = m[0];
      const auto second_xy = moved.find(" x=\"", second);
      const auto second_end = moved.find(" font-size", second);
      moved.replace(second_xy + 1, second_end - second_xy - 1, xy);
      EXPECT_NE(label_problem(moved), "") << "two labels at one spot were not caught";
    }
  }
}

TEST(RooflinePlot, DefaultDrawsThePointsDtypesAndMergesEqualValues) {
  NodeHarness h("roofline-h100");
  const auto out = run_h100(h, json::object());
  const std::string svg_text = h.read_output("roofline.svg");
  std::string labels;
  for (const auto& l : ceiling_labels(svg_text)) labels += l.text + "\n";
  // The H100 sweep has bf16 and fp8_e4m3 points: their roofs are drawn, tf32's and fp32's are not.
  EXPECT_NE(labels.find("tensor.bf16"), std::string::npos) << labels;
  EXPECT_NE(labels.find("tensor.fp8_e4m3"), std::string::npos) << labels;
  EXPECT_EQ(labels.find("tensor.tf32"), std::string::npos) << labels;
  EXPECT_EQ(labels.find("cuda_core.fp32"), std::string::npos) << labels;
  // One HBM roof per source: the best measured one (the roof the numbers use) and the datasheet's.
  EXPECT_NE(labels.find(out.data["roof"]["memory"].get<std::string>()), std::string::npos) << labels;
  EXPECT_EQ(labels.find("hbm.copy"), std::string::npos) << labels;
  EXPECT_NE(svg_text.find("more in roofline.json"), std::string::npos);
  // Every ceiling it was given is still in the node's data (run_h100 leaves out l2.read and smem.read here).
  EXPECT_EQ(out.data["ceilings"].size(), read_json("bench/results/h100/roofline/peak.json")["ceilings"].size() - 2);
  // Points keep their hover text.
  EXPECT_NE(svg_text.find("<title>cublaslt/"), std::string::npos);

  NodeHarness all("roofline-h100-all");
  run_h100(all, {{"all_ceilings", true}});
  std::string all_labels;
  for (const auto& l : ceiling_labels(all.read_output("roofline.svg"))) all_labels += l.text + "\n";
  // datasheet bf16 and fp16 are both 989.4 TFLOP/s: one line, one label naming both.
  EXPECT_NE(all_labels.find("datasheet.bf16, datasheet.fp16  989.4 TFLOP/s (datasheet)"), std::string::npos) << all_labels;
  EXPECT_NE(all_labels.find("tensor.tf32"), std::string::npos) << all_labels;
}

TEST(RooflinePlot, CeilingsToDrawByDtypeAndLevel) {
  auto c = [](std::string name, bool memory, double value, std::string dtype_or_level, bool measured = true) {
    roofline::Ceiling x;
    x.name = std::move(name);
    x.memory = memory;
    x.value = value;
    x.measured = measured;
    (memory ? x.level : x.dtype) = std::move(dtype_or_level);
    return x;
  };
  const std::vector<roofline::Ceiling> cs = {c("hbm.read", true, 3100, "hbm"),  c("hbm.copy", true, 3000, "hbm"),
                                             c("l2.read", true, 9000, "l2"),    c("tensor.bf16", false, 800, "bf16"),
                                             c("tensor.fp16", false, 800, "fp16"), c("tensor.tf32", false, 400, "tf32"),
                                             c("misc", false, 100, "")};
  int hidden = 0;
  const auto drawn = roofline::ceilings_to_draw(cs, {"bf16"}, false, &hidden);
  std::vector<std::string> labels;
  for (const auto& d : drawn) labels.push_back(d.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"hbm.read  3100 GB/s", "l2.read  9000 GB/s", "tensor.bf16  800 TFLOP/s",
                                              "misc  100 TFLOP/s"}));
  EXPECT_EQ(hidden, 3);
  const auto every = roofline::ceilings_to_draw(cs, {"bf16"}, true, &hidden);
  EXPECT_EQ(hidden, 0);
  EXPECT_EQ(every.size(), 6u);   // bf16 and fp16 share a line
  EXPECT_EQ(every[3].label(), "tensor.bf16, tensor.fp16  800 TFLOP/s");
}

}  // namespace
}  // namespace aispflow
