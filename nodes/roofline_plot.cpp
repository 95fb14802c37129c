// The roofline plot: see nodes/roofline_plot.hpp.
#include "nodes/roofline_plot.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
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

// Places labels one at a time: each takes, among its candidate positions, one inside the plot area and
// clear of every label placed before, covering the fewest markers (earlier candidates win ties). A label
// with no such position is not drawn (the legend still names its line).
class LabelPlacer {
 public:
  struct Candidate {
    double x, y;
    svg::Font font;
  };
  LabelPlacer(double x0, double y0, double x1, double y1, std::vector<std::pair<double, double>> markers)
      : x0_(x0), y0_(y0), x1_(x1), y1_(y1), markers_(std::move(markers)) {}

  std::optional<Candidate> place(const std::string& text, const std::vector<Candidate>& candidates) {
    std::optional<std::size_t> best;
    int best_covered = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const svg::TextBox box = svg::text_box(candidates[i].x, candidates[i].y, text, candidates[i].font);
      if (!box.inside(x0_, y0_, x1_, y1_)) continue;
      if (std::any_of(placed_.begin(), placed_.end(), [&](const svg::TextBox& b) { return b.intersects(box); })) continue;
      const int covered = markers_under(box);
      if (!best || covered < best_covered) {
        best = i;
        best_covered = covered;
      }
      if (covered == 0) break;
    }
    if (!best) return std::nullopt;
    placed_.push_back(svg::text_box(candidates[*best].x, candidates[*best].y, text, candidates[*best].font));
    return candidates[*best];
  }

 private:
  int markers_under(const svg::TextBox& box) const {
    int n = 0;
    for (const auto& [mx, my] : markers_) {
      svg::TextBox dot{{{{mx - 5, my - 5}, {mx + 5, my - 5}, {mx + 5, my + 5}, {mx - 5, my + 5}}}};
      n += box.intersects(dot);
    }
    return n;
  }
  double x0_, y0_, x1_, y1_;
  std::vector<std::pair<double, double>> markers_;
  std::vector<svg::TextBox> placed_;
};

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string DrawnCeiling::label() const {
  return join_names(names) + "  " + format_number(ceiling.value) + " " + ceiling.unit() +
         (ceiling.measured ? "" : " (datasheet)");
}

std::vector<DrawnCeiling> ceilings_to_draw(const std::vector<Ceiling>& ceilings, const std::vector<std::string>& dtypes,
                                           bool all, int* hidden) {
  const bool any_dtype = std::any_of(dtypes.begin(), dtypes.end(), [](const std::string& d) { return !d.empty(); });
  std::map<std::pair<std::string, bool>, const Ceiling*> best_of_level;   // (level, measured) -> best
  for (const auto& c : ceilings)
    if (c.memory) {
      auto& best = best_of_level[{c.level, c.measured}];
      if (!best || c.value > best->value) best = &c;
    }
  std::vector<DrawnCeiling> out;
  int left_out = 0;
  for (const auto& c : ceilings) {
    const bool wanted =
        all || (c.memory ? best_of_level[{c.level, c.measured}] == &c
                         : !any_dtype || c.dtype.empty() || std::find(dtypes.begin(), dtypes.end(), c.dtype) != dtypes.end());
    if (!wanted) {
      ++left_out;
      continue;
    }
    auto same = std::find_if(out.begin(), out.end(), [&](const DrawnCeiling& d) {
      return d.ceiling.memory == c.memory && d.ceiling.measured == c.measured &&
             format_number(d.ceiling.value) == format_number(c.value);
    });
    if (same != out.end())
      same->names.push_back(c.name);
    else
      out.push_back({c, {c.name}});
  }
  if (hidden) *hidden = left_out;
  return out;
}

std::string draw_svg(const std::string& title, const std::string& subtitle, const std::string& warning,
                     const std::vector<Ceiling>& all_ceilings_in,
                     const std::vector<Point>& points, const json& all_ridges, const std::vector<std::string>& providers,
                     const std::vector<std::string>& dtypes, double width, double height, bool all_ceilings) {
  const std::map<std::string, std::string> colour = assign_colours(providers);
  auto dtype_marker = [&](const std::string& d) {
    const auto it = std::find(dtypes.begin(), dtypes.end(), d);
    return svg::marker_for_index(std::size_t(it - dtypes.begin()));
  };
  int hidden = 0;
  const std::vector<DrawnCeiling> ceilings = ceilings_to_draw(all_ceilings_in, dtypes, all_ceilings, &hidden);
  // Ridge points of drawn lines only, one per position (merged ceilings share theirs).
  std::set<std::string> drawn_names;
  for (const auto& d : ceilings) drawn_names.insert(d.names.begin(), d.names.end());
  json ridges = json::array();
  for (const auto& r : all_ridges) {
    if (!drawn_names.count(r["compute"].get<std::string>()) || !drawn_names.count(r["memory"].get<std::string>()))
      continue;
    auto same = std::find_if(ridges.begin(), ridges.end(), [&](const json& o) {
      return o["intensity"] == r["intensity"] && o["tflops"] == r["tflops"];
    });
    if (same != ridges.end())
      (*same)["compute"] = (*same)["compute"].get<std::string>() + ", " + r["compute"].get<std::string>();
    else
      ridges.push_back(r);
  }

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
  for (const auto& d : ceilings)
    if (!d.ceiling.memory) top_compute = std::max(top_compute, d.ceiling.value);
  y_max = std::max(y_max, top_compute);
  if (x_max <= 0) x_min = 0.1, x_max = 100;
  auto [xlo, xhi] = svg::LogAxis::decade_range(x_min / 1.5, x_max * 2.5);
  if (xhi / xlo < 100) xhi = xlo * 100;   // at least two decades, so the slope reads as a slope
  // The lowest memory roof at the left edge sets how low the y axis must reach for the lines to show.
  double lowest_mem = 1e300;
  for (const auto& d : ceilings)
    if (d.ceiling.memory) lowest_mem = std::min(lowest_mem, d.ceiling.value * xlo / 1000.0);
  if (lowest_mem < 1e300) y_min = std::min(y_min, lowest_mem);
  if (!(y_min > 0) || y_min > y_max) y_min = y_max / 1000;
  auto [ylo, yhi] = svg::LogAxis::decade_range(y_min / 1.5, y_max * 2.5);
  if (yhi / ylo > 1e7) ylo = yhi / 1e7;   // extremely low points would squash the interesting part

  // Legend rows decide the height: the legend never overlaps the plot, the canvas grows instead.
  std::size_t legend_rows = providers.size() + 2 + ceilings.size() + 2 + ridges.size() + 2 + (hidden > 0 ? 1 : 0);
  if (dtypes.size() > 1) legend_rows += dtypes.size() + 2;
  bool any_ncu = std::any_of(points.begin(), points.end(), [](const Point& p) { return p.source == "ncu"; });
  if (any_ncu) legend_rows += 2;
  Layout L{width, height};
  // The legend column is as wide as its longest line (merged ceilings make long ones); the canvas grows.
  double legend_text = 0;
  for (const auto& d : ceilings) legend_text = std::max(legend_text, svg::text_width(d.label(), 11));
  for (const auto& r : ridges)
    legend_text = std::max(legend_text, svg::text_width(r["compute"].get<std::string>() + " / " +
                                                            r["memory"].get<std::string>() + ": 0000.0", 11));
  for (const auto& p : providers) legend_text = std::max(legend_text, svg::text_width(p, 11));
  if (legend_text * 1.08 + 44 > L.legend_width) {
    L.width += legend_text * 1.08 + 44 - L.legend_width;
    L.legend_width = legend_text * 1.08 + 44;
  }
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
  // Each memory roof gets its own colour; compute roofs are dark grey, their labels tell them apart.
  // Datasheet roofs are dashed.
  const std::vector<std::string> memory_palette = {"#1f3b73", "#b2182b", "#8c510a", "#01665e", "#6a3d9a", "#4d4d4d"};
  const std::string compute_colour = "#333333";
  std::vector<std::string> line_colour(ceilings.size(), compute_colour);
  for (std::size_t i = 0, m = 0; i < ceilings.size(); ++i)
    if (ceilings[i].ceiling.memory) line_colour[i] = memory_palette[m++ % memory_palette.size()];
  auto top_compute_of = [&](bool measured) {
    double top = 0;
    for (const auto& d : ceilings)
      if (!d.ceiling.memory && d.ceiling.measured == measured) top = std::max(top, d.ceiling.value);
    return top > 0 ? top : top_compute;   // a source without compute ceilings runs to the other's top
  };
  auto fastest_memory_of = [&](bool measured) {
    double best = 0;
    for (const auto& d : ceilings)
      if (d.ceiling.memory && d.ceiling.measured == measured) best = std::max(best, d.ceiling.value);
    if (best == 0)
      for (const auto& d : ceilings)
        if (d.ceiling.memory) best = std::max(best, d.ceiling.value);
    return best;
  };
  auto line_stroke = [&](std::size_t i) {
    svg::Stroke s;
    s.color = line_colour[i];
    s.width = ceilings[i].ceiling.measured ? 1.8 : 1.3;
    if (!ceilings[i].ceiling.measured) s.dash = "7 4";
    return s;
  };
  // Where each line runs, in data coordinates: memory roofs from the left edge up to the top compute roof
  // of their source, compute roofs from where the fastest memory roof of their source meets them.
  std::vector<std::pair<double, double>> line_span(ceilings.size());
  for (std::size_t i = 0; i < ceilings.size(); ++i) {
    const Ceiling& c = ceilings[i].ceiling;
    if (c.memory) {
      const double top = top_compute_of(c.measured);
      line_span[i] = {xlo, std::min(top > 0 ? top * 1000.0 / c.value : xhi, xhi)};
    } else {
      const double bw = fastest_memory_of(c.measured);
      line_span[i] = {bw > 0 ? std::max(xlo, c.value * 1000.0 / bw) : xlo, xhi};
    }
  }

  doc.begin_group("ceilings");
  doc.begin_clip(L.x0(), L.y0(), L.x1() - L.x0(), L.y1() - L.y0());
  for (std::size_t i = 0; i < ceilings.size(); ++i) {
    const Ceiling& c = ceilings[i].ceiling;
    const auto [from, to] = line_span[i];
    if (c.memory)
      doc.line(X.to_px(from), Y.to_px(c.value * from / 1000.0), X.to_px(to), Y.to_px(c.value * to / 1000.0), line_stroke(i));
    else
      doc.line(X.to_px(from), Y.to_px(c.value), X.to_px(to), Y.to_px(c.value), line_stroke(i));
  }
  doc.end_clip();
  doc.end_group();

  // Ceiling labels: each at the first of its candidate positions that is inside the plot, clear of the labels
  // placed before it and of as many markers as possible. Compute labels first (from the top roof down), then
  // the memory labels (fastest first), which follow their slanted lines.
  const double label_size = 11;
  std::vector<std::pair<double, double>> markers;
  for (const auto& p : points) markers.emplace_back(X.to_px(p.intensity), Y.to_px(p.achieved));
  for (const auto& r : ridges) markers.emplace_back(X.to_px(r["intensity"].get<double>()), Y.to_px(r["tflops"].get<double>()));
  LabelPlacer placer(L.x0() + 2, L.y0() + 2, L.x1() - 2, L.y1() - 2, markers);
  doc.begin_group("ceiling-labels");
  std::vector<std::size_t> order(ceilings.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (ceilings[a].ceiling.memory != ceilings[b].ceiling.memory) return !ceilings[a].ceiling.memory;
    return ceilings[a].ceiling.value > ceilings[b].ceiling.value;
  });
  // The slanted lines' angle on the page (every memory roof has slope 1 in log-log).
  const double dx_per_decade = (L.x1() - L.x0()) / std::log10(xhi / xlo);
  const double dy_per_decade = (L.y1() - L.y0()) / std::log10(yhi / ylo);
  const double angle_rad = -std::atan(dy_per_decade / dx_per_decade);
  for (std::size_t i : order) {
    const Ceiling& c = ceilings[i].ceiling;
    const std::string text = ceilings[i].label();
    const double w = svg::text_width(text, label_size);
    svg::Font f = font(label_size, "start", c.memory ? line_colour[i] : compute_colour);
    f.background = "#ffffff";
    std::vector<LabelPlacer::Candidate> candidates;
    if (!c.memory) {
      // Just above the flat line, else just below it: at the right edge, right of the ridge, or in between;
      // else left of where the line starts, on its height (the empty space above the slanted roofs).
      const double line_y = Y.to_px(c.value), start = X.to_px(line_span[i].first) + 10, end = L.x1() - 6;
      svg::Font right = f;
      right.anchor = "end";
      for (const double y : {line_y - 4, line_y + label_size + 3}) {
        candidates.push_back({end, y, right});
        candidates.push_back({start, y, f});
        for (double x = end - w - 40; x > start; x -= 40) candidates.push_back({x, y, f});
      }
      candidates.push_back({start - 24, line_y + 0.35 * label_size, right});
    } else {
      // Along the slanted line, above it (else below), starting where the lines leave the crowded lower left.
      f.rotate_deg = angle_rad * 180.0 / M_PI;
      const double cos_a = std::cos(angle_rad), sin_a = std::sin(angle_rad);
      const double x_end = X.to_px(line_span[i].second) - w * cos_a - 6;   // the text ends before the line does
      const double x_start = std::max(L.x0() + 10, X.to_px(ylo * 1.6 * 1000.0 / c.value));
      const double preferred = x_start + 0.25 * std::max(0.0, x_end - x_start);
      std::vector<double> xs;
      for (double step = 0; step < L.x1() - L.x0(); step += 14) {
        if (preferred + step <= x_end) xs.push_back(preferred + step);
        if (step > 0 && preferred - step >= x_start) xs.push_back(preferred - step);
      }
      for (const double offset : {4.0 + 0.3 * label_size, -(4.0 + 0.85 * label_size)})   // above, below
        for (const double x : xs) {
          const double line_y = Y.to_px(c.value * X.from_px(x) / 1000.0);
          // The normal pointing above the line: (sin a, -cos a) for the page angle a.
          candidates.push_back({x + offset * sin_a, line_y - offset * cos_a, f});
        }
    }
    if (const auto spot = placer.place(text, candidates)) doc.text(spot->x, spot->y, text, spot->font);
  }
  doc.end_group();

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
                   "% of roof, " + p.binding + "-bound)" + (p.note.empty() ? "" : "; " + p.note));
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
  for (std::size_t i : order) {
    doc.line(lx, ly - 4, lx + 14, ly - 4, line_stroke(i));
    doc.text(lx + 18, ly, ceilings[i].label(), font(11));
    ly += 18;
  }
  if (hidden > 0) {
    doc.text(lx, ly, std::to_string(hidden) + " more in roofline.json (all_ceilings: true draws them)",
             font(10, "start", "#666666"));
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
