#include "nodes/heatmap_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nodes/record_match.hpp"
#include "nodes/svg.hpp"

// Fonts and strokes are written as designated initializers naming only what differs from the defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace aispflow {

namespace {

// Red -> amber -> green, t in [0, 1] (1 = best).
std::string scale_colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double r = t < 0.5 ? 220 : 220 - (t - 0.5) * 2 * (220 - 46);
  const double g = t < 0.5 ? 60 + t * 2 * (190 - 60) : 190 - (t - 0.5) * 2 * (190 - 160);
  const double b = t < 0.5 ? 60 : 60 + (t - 0.5) * 2 * (90 - 60);
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", int(r), int(g), int(b));
  return buffer;
}

}  // namespace

std::string render_heatmap_svg(const HeatmapSpec& spec) {
  const std::size_t rows = spec.y_ticks.size(), cols = spec.x_ticks.size();
  const double cell_w = 96, cell_h = 44, font = 12;
  double ytick_w = 0, xtick_w = 0;
  for (const auto& t : spec.y_ticks) ytick_w = std::max(ytick_w, svg::text_width(t, font));
  for (const auto& t : spec.x_ticks) xtick_w = std::max(xtick_w, svg::text_width(t, font));
  const bool rotate = xtick_w > cell_w - 8;   // long column labels turn 45 degrees instead of overlapping
  const double left = 40 + ytick_w + 12, top = 84;
  const double plot_w = cell_w * double(cols), plot_h = cell_h * double(rows);
  const double bottom = 30 + (rotate ? xtick_w * 0.72 + 10 : font + 10) + 24;
  const double legend_w = 110;
  // Wide enough for the title (bold: about 12% wider than the estimate) and the subtitle, however few cells.
  const double width = std::max({left + plot_w + legend_w + 30, 40 + svg::text_width(spec.title, 16) * 1.12,
                                 40 + svg::text_width(spec.subtitle, 11)});
  const double height = top + plot_h + bottom;
  svg::Document doc(width, height);

  doc.text(20, 26, spec.title, {.size = 16, .bold = true});
  if (!spec.subtitle.empty()) doc.text(20, 46, spec.subtitle, {.size = 11, .color = "#555555"});

  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : spec.values)
    for (double v : row)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const bool have = std::isfinite(lo);
  if (have && std::isfinite(spec.scale_min)) lo = std::min(lo, spec.scale_min);   // e.g. bandwidth from 0
  auto quality = [&](double v) {
    const double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
    return spec.higher_is_better ? t : 1.0 - t;
  };

  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = left + cell_w * double(c), y = top + cell_h * double(r);
      const double v = r < spec.values.size() && c < spec.values[r].size() ? spec.values[r][c] : std::nan("");
      const svg::Stroke border{.color = "#ffffff", .width = 2};
      const std::string note = r < spec.notes.size() && c < spec.notes[r].size() ? spec.notes[r][c] : "";
      if (!std::isfinite(v)) {   // no value: the note says why ("no peer", "FAILED"), else n/a
        doc.rect(x, y, cell_w, cell_h, "#e6e6e6", &border);
        doc.text(x + cell_w / 2, y + cell_h / 2 + 4, note.empty() ? "n/a" : note,
                 {.size = font, .anchor = "middle", .color = "#777777"});
        continue;
      }
      doc.rect(x, y, cell_w, cell_h, scale_colour(quality(v)), &border);
      doc.text(x + cell_w / 2, y + cell_h / 2 + (note.empty() ? 4 : -2), records::format_number(v),
               {.size = font, .anchor = "middle", .color = "#111111", .bold = true});
      if (!note.empty())
        doc.text(x + cell_w / 2, y + cell_h / 2 + 13, note, {.size = 10, .anchor = "middle", .color = "#111111"});
    }
  for (std::size_t r = 0; r < rows; ++r)
    doc.text(left - 8, top + cell_h * (double(r) + 0.5) + 4, spec.y_ticks[r], {.size = font, .anchor = "end"});
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = left + cell_w * (double(c) + 0.5), y = top + plot_h + 16;
    if (rotate)
      doc.text(x, y, spec.x_ticks[c], {.size = font, .anchor = "end", .rotate_deg = -45});
    else
      doc.text(x, y, spec.x_ticks[c], {.size = font, .anchor = "middle"});
  }
  doc.text(left + plot_w / 2, height - 12, spec.x_label, {.size = 13, .anchor = "middle"});
  doc.text(16, top + plot_h / 2, spec.y_label, {.size = 13, .anchor = "middle", .rotate_deg = -90});

  // Colour scale with its values.
  const double lx = left + plot_w + 30, lh = std::max(plot_h, 120.0);
  const int steps = 20;
  for (int i = 0; i < steps; ++i) {
    const double t = 1.0 - double(i) / (steps - 1);   // top = best
    doc.rect(lx, top + lh * double(i) / steps, 18, lh / steps + 0.5, scale_colour(t));
  }
  if (have) {
    const double best = spec.higher_is_better ? hi : lo, worst = spec.higher_is_better ? lo : hi;
    doc.text(lx + 24, top + 10, records::format_number(best) + " " + spec.unit, {.size = 11});
    doc.text(lx + 24, top + lh, records::format_number(worst) + " " + spec.unit, {.size = 11});
    doc.text(lx + 24, top + lh / 2 + 4, spec.higher_is_better ? "higher is better" : "lower is better",
             {.size = 10, .color = "#555555"});
  }
  return doc.str();
}

HeatmapSpec heatmap_spec_of(const nlohmann::json& h) {
  HeatmapSpec spec;
  spec.title = h.value("title", std::string());
  spec.subtitle = h.value("subtitle", std::string());
  spec.x_label = h.value("x_label", std::string());
  spec.y_label = h.value("y_label", std::string());
  for (const auto& t : h.at("x_ticks")) spec.x_ticks.push_back(t.get<std::string>());
  for (const auto& t : h.at("y_ticks")) spec.y_ticks.push_back(t.get<std::string>());
  for (const auto& row : h.at("values")) {
    std::vector<double> r;
    for (const auto& v : row) r.push_back(v.is_number() ? v.get<double>() : std::nan(""));
    spec.values.push_back(r);
  }
  if (h.contains("cell_notes"))
    for (const auto& row : h["cell_notes"]) {
      std::vector<std::string> r;
      for (const auto& v : row) r.push_back(v.is_string() ? v.get<std::string>() : std::string());
      spec.notes.push_back(r);
    }
  spec.unit = h.value("unit", std::string());
  spec.higher_is_better = h.value("higher_is_better", true);
  if (h.contains("scale_min") && h["scale_min"].is_number()) spec.scale_min = h["scale_min"].get<double>();
  return spec;
}

}  // namespace aispflow
