// The roofline plot: see nodes/roofline_plot.hpp.
#include "nodes/roofline_plot.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "nodes/svg.hpp"

namespace aispflow::roofline {

using records::format_number;

namespace {

svg::Font font(double size, std::string anchor = "start", std::string color = "#222222", bool bold = false,
               double rotate_deg = 0) {
  svg::Font f;
  f.size = size;
  f.anchor = std::move(anchor);
  f.color = std::move(color);
  f.bold = bold;
  f.rotate_deg = rotate_deg;
  return f;
}

svg::Stroke stroke(std::string color, double width) {
  svg::Stroke s;
  s.color = std::move(color);
  s.width = width;
  return s;
}

// Colour-blind-friendly palette; well-known providers keep their colour from plot to plot.
const std::vector<std::string> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                           "#56B4E9", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF"};
const std::map<std::string, std::string> kProviderColour = {
    {"cpu.openblas", "#0072B2"}, {"cpu.blocked", "#D55E00"}, {"cpu.naive", "#7F7F7F"},
    {"cublaslt", "#009E73"},     {"cublaslt.sweep", "#CC79A7"}};

std::map<std::string, std::string> assign_colours(const std::vector<std::string>& providers) {
  std::map<std::string, std::string> out;
  std::set<std::string> used;
  for (const auto& p : providers)
    if (auto it = kProviderColour.find(p); it != kProviderColour.end()) {
      out[p] = it->second;
      used.insert(it->second);
    }
  std::size_t next = 0;
  for (const auto& p : providers) {
    if (out.count(p)) continue;
    while (next < kPalette.size() && used.count(kPalette[next])) ++next;
    out[p] = next < kPalette.size() ? kPalette[next++] : kPalette[(out.size()) % kPalette.size()];
    used.insert(out[p]);
  }
  return out;
}

struct Layout {
  double width, height;
  double left = 78, top = 70, bottom = 62, legend_width = 300;
  double x0() const { return left; }
  double x1() const { return width - legend_width - 16; }
  double y0() const { return top; }
  double y1() const { return height - bottom; }
};

}  // namespace

std::string draw_svg(const std::string& title, const std::string& subtitle, const std::string& warning,
                     const std::vector<Ceiling>& ceilings,
                     const std::vector<Point>& points, const json& ridges, const std::vector<std::string>& providers,
                     const std::vector<std::string>& dtypes, double width, double height) {
  const std::map<std::string, std::string> colour = assign_colours(providers);
  auto dtype_marker = [&](const std::string& d) {
    const auto it = std::find(dtypes.begin(), dtypes.end(), d);
    return svg::marker_for_index(std::size_t(it - dtypes.begin()));
  };

  // Data ranges: every point and every ridge must be visible, with some air around them.
  double x_min = 1e300, x_max = 0, y_min = 1e300, y_max = 0;
  for (const auto& p : points) {
    x_min = std::min(x_min, p.intensity);
    x_max = std::max(x_max, p.intensity);
    y_min = std::min(y_min, p.achieved);
    y_max = std::max(y_max, p.achieved);
  }
  for (const auto& r : ridges) {
    x_min = std::min(x_min, r["intensity"].get<double>());
    x_max = std::max(x_max, r["intensity"].get<double>());
  }
  double top_compute = 0;
  for (const auto& c : ceilings)
    if (!c.memory) top_compute = std::max(top_compute, c.value);
  y_max = std::max(y_max, top_compute);
  if (x_max <= 0) x_min = 0.1, x_max = 100;
  auto [xlo, xhi] = svg::LogAxis::decade_range(x_min / 1.5, x_max * 2.5);
  if (xhi / xlo < 100) xhi = xlo * 100;   // at least two decades, so the slope reads as a slope
  // The lowest memory roof at the left edge sets how low the y axis must reach for the lines to show.
  double lowest_mem = 1e300;
  for (const auto& c : ceilings)
    if (c.memory) lowest_mem = std::min(lowest_mem, c.value * xlo / 1000.0);
  if (lowest_mem < 1e300) y_min = std::min(y_min, lowest_mem);
  if (!(y_min > 0) || y_min > y_max) y_min = y_max / 1000;
  auto [ylo, yhi] = svg::LogAxis::decade_range(y_min / 1.5, y_max * 2.5);
  if (yhi / ylo > 1e7) ylo = yhi / 1e7;   // extremely low points would squash the interesting part

  // Legend rows decide the height: the legend never overlaps the plot, the canvas grows instead.
  std::size_t legend_rows = providers.size() + 2 + ceilings.size() + 2 + ridges.size() + 2;
  if (dtypes.size() > 1) legend_rows += dtypes.size() + 2;
  bool any_ncu = std::any_of(points.begin(), points.end(), [](const Point& p) { return p.source == "ncu"; });
  if (any_ncu) legend_rows += 2;
  Layout L{width, height};
  const double legend_needed = L.top + 18.0 * double(legend_rows) + 20;
  if (legend_needed > L.height) L.height = legend_needed;

  svg::LogAxis X{xlo, xhi, L.x0(), L.x1()};
  svg::LogAxis Y{ylo, yhi, L.y1(), L.y0()};
  svg::Document doc(L.width, L.height);

  doc.text(L.x0(), 28, title, font(18, "start", "#111111", true));
  doc.text(L.x0(), 48, subtitle, font(12, "start", "#555555"));
  if (!warning.empty()) doc.text(L.x0(), 63, warning, font(11, "start", "#b2182b"));

  // Grid and axes.
  const svg::Stroke grid = stroke("#e3e3e3", 1);
  const svg::Stroke minor = stroke("#f2f2f2", 1);
  const svg::Stroke axis = stroke("#333333", 1.2);
  for (double d : X.decades()) {
    for (int m = 2; m <= 9 && d * m < xhi * 1.0001; ++m) doc.line(X.to_px(d * m), L.y0(), X.to_px(d * m), L.y1(), minor);
    doc.line(X.to_px(d), L.y0(), X.to_px(d), L.y1(), grid);
  }
  for (double d : Y.decades()) {
    for (int m = 2; m <= 9 && d * m < yhi * 1.0001; ++m) doc.line(L.x0(), Y.to_px(d * m), L.x1(), Y.to_px(d * m), minor);
    doc.line(L.x0(), Y.to_px(d), L.x1(), Y.to_px(d), grid);
  }
  doc.rect(L.x0(), L.y0(), L.x1() - L.x0(), L.y1() - L.y0(), "none", &axis);
  for (double d : X.decades()) {
    doc.line(X.to_px(d), L.y1(), X.to_px(d), L.y1() + 5, axis);
    doc.text(X.to_px(d), L.y1() + 19, svg::decade_label(d), font(12, "middle"));
  }
  for (double d : Y.decades()) {
    doc.line(L.x0() - 5, Y.to_px(d), L.x0(), Y.to_px(d), axis);
    doc.text(L.x0() - 8, Y.to_px(d) + 4, svg::decade_label(d), font(12, "end"));
  }
  doc.text((L.x0() + L.x1()) / 2, L.y1() + 44, "Arithmetic intensity (FLOP/byte)",
           font(13, "middle"));
  doc.text(24, (L.y0() + L.y1()) / 2, "Performance (TFLOP/s)",
           font(13, "middle", "#222222", false, -90));

  // Roof lines, clipped to the plot area.
  // Each memory roof gets its own colour (close roofs such as copy and triad must stay distinguishable);
  // compute roofs are dark grey, their labels tell them apart. Datasheet roofs are dashed.
  const std::vector<std::string> memory_palette = {"#1f3b73", "#6a3d9a", "#8c510a", "#01665e", "#b2182b", "#4d4d4d"};
  const std::string compute_colour = "#333333";
  std::map<std::string, std::string> memory_colour;
  for (const auto& c : ceilings)
    if (c.memory) {
      const std::string key = c.name + (c.measured ? "" : " (datasheet)");
      memory_colour[key] = memory_palette[memory_colour.size() % memory_palette.size()];
    }
  auto top_compute_of = [&](bool measured) {
    double top = 0;
    for (const auto& c : ceilings)
      if (!c.memory && c.measured == measured) top = std::max(top, c.value);
    return top > 0 ? top : top_compute;   // a source without compute ceilings runs to the other's top
  };
  auto fastest_memory_of = [&](bool measured) {
    double best = 0;
    for (const auto& c : ceilings)
      if (c.memory && c.measured == measured) best = std::max(best, c.value);
    if (best == 0)
      for (const auto& c : ceilings)
        if (c.memory) best = std::max(best, c.value);
    return best;
  };
  auto line_stroke = [&](const Ceiling& c) {
    svg::Stroke s;
    s.color = !c.memory ? compute_colour : memory_colour.at(c.name + (c.measured ? "" : " (datasheet)"));
    s.width = c.measured ? 1.8 : 1.3;
    if (!c.measured) s.dash = "7 4";
    return s;
  };

  doc.begin_group("ceilings");
  doc.begin_clip(L.x0(), L.y0(), L.x1() - L.x0(), L.y1() - L.y0());
  for (const auto& c : ceilings) {
    if (c.memory) {   // slanted: from the left edge up to where it meets the top compute roof
      const double ridge = top_compute_of(c.measured) > 0 ? top_compute_of(c.measured) * 1000.0 / c.value : xhi;
      const double x_end = std::min(ridge, xhi);
      doc.line(X.to_px(xlo), Y.to_px(c.value * xlo / 1000.0), X.to_px(x_end), Y.to_px(c.value * x_end / 1000.0),
               line_stroke(c));
    } else {   // flat: from where the fastest memory roof reaches it to the right edge
      const double bw = fastest_memory_of(c.measured);
      const double x_start = bw > 0 ? std::max(xlo, c.value * 1000.0 / bw) : xlo;
      doc.line(X.to_px(x_start), Y.to_px(c.value), X.to_px(xhi), Y.to_px(c.value), line_stroke(c));
    }
  }
  doc.end_clip();
  doc.end_group();

  // Ceiling labels, pushed apart so close ceilings (copy vs triad) stay readable.
  const double label_size = 11;
  {   // compute: just above each flat line, at its right end or just right of its ridge, whichever
      // covers fewer points (compute-bound points crowd near the roof, usually at one end)
    std::vector<const Ceiling*> cs;
    std::vector<double> wanted;
    for (const auto& c : ceilings)
      if (!c.memory) {
        cs.push_back(&c);
        wanted.push_back(Y.to_px(c.value) - 5);
      }
    const auto ys = svg::spread_labels(wanted, label_size + 5, L.y0() + label_size + 2, L.y1() - 4);
    auto points_under = [&](double left, double right, double baseline) {
      int n = 0;
      for (const auto& p : points) {
        const double px = X.to_px(p.intensity), py = Y.to_px(p.achieved);
        n += px > left - 5 && px < right + 5 && py > baseline - label_size - 5 && py < baseline + 6;
      }
      return n;
    };
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const double w = svg::text_width(cs[i]->label(), label_size);
      const double bw = fastest_memory_of(cs[i]->measured);
      const double line_start = X.to_px(bw > 0 ? std::max(xlo, cs[i]->value * 1000.0 / bw) : xlo);
      // Right of the ridge, and right of every slanted line at the height of the text's top.
      double slowest = 0;
      for (const auto& c : ceilings)
        if (c.memory && (slowest == 0 || c.value < slowest)) slowest = c.value;
      const double text_top_value = Y.from_px(ys[i] - label_size - 2);
      const double left_x =
          std::max(line_start + 10, slowest > 0 ? X.to_px(text_top_value * 1000.0 / slowest) + 8 : line_start + 10);
      const bool left_fits = left_x + w < L.x1() - 6;
      const bool use_left = left_fits && points_under(left_x, left_x + w, ys[i]) <
                                             points_under(L.x1() - 6 - w, L.x1() - 6, ys[i]);
      svg::Font f = font(label_size, use_left ? "start" : "end", compute_colour);
      f.background = "#ffffff";
      doc.text(use_left ? left_x : L.x1() - 6, ys[i], cs[i]->label(), f);
    }
  }
  {   // memory: parallel to the slanted lines, in the empty space above them
    const double dx_per_decade = (L.x1() - L.x0()) / std::log10(xhi / xlo);
    const double dy_per_decade = (L.y1() - L.y0()) / std::log10(yhi / ylo);
    const double angle = -std::atan(dy_per_decade / dx_per_decade) * 180.0 / M_PI;
    const double cos_a = std::cos(angle * M_PI / 180.0);
    std::vector<const Ceiling*> cs;
    double x_enter_all = L.x0() + 14, widest = 0;
    for (const auto& c : ceilings)
      if (c.memory) {
        cs.push_back(&c);
        // Where the line rises above the bottom edge (plus room for the text).
        const double x_enter = X.to_px(ylo * 1.6 * 1000.0 / c.value);
        x_enter_all = std::max(x_enter_all, x_enter + 4);
        widest = std::max(widest, svg::text_width(c.label(), label_size));
      }
    std::stable_sort(cs.begin(), cs.end(), [](const Ceiling* a, const Ceiling* b) { return a->value > b->value; });
    // Away from the crowded corner, but ending before the first ridge so no label runs into a flat roof.
    double first_ridge_px = L.x1();
    for (const auto& r : ridges) first_ridge_px = std::min(first_ridge_px, X.to_px(r["intensity"].get<double>()));
    const double run = widest * cos_a;
    double x_anchor = std::max(x_enter_all, L.x0() + 0.3 * (first_ridge_px - L.x0() - run));
    x_anchor = std::max(x_enter_all, std::min(x_anchor, first_ridge_px - run - 10));
    x_anchor = std::min(x_anchor, (L.x0() + L.x1()) / 2);
    const double xv = std::pow(10.0, std::log10(xlo) + (x_anchor - L.x0()) / dx_per_decade);

    // Lines closer together than a label's height form a group; a group's labels stack above its top line
    // in the lines' own order, so no text sits on a line and the labels read top to bottom like the lines.
    // Colours tie each label to its line.
    const double gap = (label_size + 6) / std::max(cos_a, 0.2);
    std::vector<double> line_y(cs.size()), wanted(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i) line_y[i] = Y.to_px(cs[i]->value * xv / 1000.0);
    for (std::size_t first = 0; first < cs.size();) {
      std::size_t last = first;   // the group: first..last
      while (last + 1 < cs.size() && line_y[last + 1] - line_y[last] < gap) ++last;
      for (std::size_t i = first; i <= last; ++i) wanted[i] = line_y[first] - 6 - gap * double(last - i);
      first = last + 1;
    }
    // A lower group's stack may reach past the next line up: keep every label above the ones below it.
    for (std::size_t i = cs.size(); i-- > 1;) wanted[i - 1] = std::min(wanted[i - 1], wanted[i] - gap);
    const auto ys = svg::spread_labels(wanted, gap, L.y0() + 20, L.y1() - 4);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      svg::Font f = font(label_size, "start", line_stroke(*cs[i]).color, false, angle);
      f.background = "#ffffff";
      doc.text(x_anchor, ys[i], cs[i]->label(), f);
    }
  }

  // Ridge points: where a compute roof meets a memory roof.
  doc.begin_group("ridges");
  for (const auto& r : ridges)
    doc.marker(svg::Marker::circle, X.to_px(r["intensity"].get<double>()), Y.to_px(r["tflops"].get<double>()), 7,
               "#ffffff", "#333333",
               "ridge " + r["compute"].get<std::string>() + " / " + r["memory"].get<std::string>() + ": " +
                   format_number(r["intensity"].get<double>()) + " FLOP/byte");
  doc.end_group();

  // One marker per point, coloured by provider, shaped by dtype; ncu points are hollow.
  doc.begin_group("points");
  doc.begin_clip(L.x0(), L.y0(), L.x1() - L.x0(), L.y1() - L.y0());
  for (const auto& p : points) {
    const std::string col = colour.count(p.provider) ? colour.at(p.provider) : "#444444";
    const bool hollow = p.source == "ncu";
    doc.marker(dtype_marker(p.dtype), X.to_px(p.intensity), Y.to_px(p.achieved), 9, hollow ? "#ffffff" : col,
               hollow ? col : "#ffffff",
               p.id + ": " + format_number(p.achieved) + " TFLOP/s at " + format_number(p.intensity) +
                   " FLOP/byte (" + format_number(p.attainable > 0 ? 100 * p.achieved / p.attainable : 0) +
                   "% of roof, " + p.binding + "-bound)");
  }
  doc.end_clip();
  doc.end_group();

  // Legend, in its own column right of the plot.
  doc.begin_group("legend");
  const double lx = L.x1() + 22;
  double ly = L.y0() + 4;
  auto heading = [&](const std::string& s) {
    doc.text(lx, ly, s, font(12, "start", "#111111", true));
    ly += 18;
  };
  heading("Providers");
  for (const auto& p : providers) {
    doc.marker(svg::Marker::circle, lx + 6, ly - 4, 9, colour.at(p));
    doc.text(lx + 18, ly, p, font(11));
    ly += 18;
  }
  if (dtypes.size() > 1) {
    ly += 8;
    heading("dtypes");
    for (const auto& d : dtypes) {
      doc.marker(dtype_marker(d), lx + 6, ly - 4, 9, "#888888");
      doc.text(lx + 18, ly, d, font(11));
      ly += 18;
    }
  }
  if (any_ncu) {
    doc.marker(svg::Marker::circle, lx + 6, ly - 4, 9, "#ffffff", "#444444");
    doc.text(lx + 18, ly, "hollow: measured DRAM bytes (ncu)", font(11));
    ly += 18;
  }
  ly += 8;
  heading("Ceilings");
  for (const auto& c : ceilings) {
    doc.line(lx, ly - 4, lx + 14, ly - 4, line_stroke(c));
    doc.text(lx + 18, ly, c.label(), font(11));
    ly += 18;
  }
  if (!ridges.empty()) {
    ly += 8;
    heading("Ridge points (FLOP/byte)");
    for (const auto& r : ridges) {
      doc.marker(svg::Marker::circle, lx + 6, ly - 4, 7, "#ffffff", "#333333");
      doc.text(lx + 18, ly,
               r["compute"].get<std::string>() + " / " + r["memory"].get<std::string>() + ": " +
                   format_number(r["intensity"].get<double>()),
               font(11));
      ly += 18;
    }
  }
  doc.end_group();
  return doc.str();
}

}  // namespace aispflow::roofline
