#pragma once
// A small SVG writer for the plots analysis nodes draw: shapes, text, clipping, log axes and label
// de-overlap. It writes well-formed, escaped XML and nothing more; layout decisions stay in the node.
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aispflow::svg {

// Escapes text for XML content and attribute values (& < > " ').
std::string escape(std::string_view text);
// A number as SVG wants it: fixed, at most 2 decimals, no trailing zeros ("12.5", "3", "-0.25").
std::string num(double v);

struct Stroke {
  std::string color = "#000000";
  double width = 1.0;
  std::string dash;          // e.g. "6 4" for dashed; empty = solid
  double opacity = 1.0;
};

struct Font {
  double size = 12;
  std::string anchor = "start";   // start | middle | end
  std::string color = "#222222";
  bool bold = false;
  double rotate_deg = 0;          // rotation about the text's anchor point
  std::string baseline;           // e.g. "middle", "hanging"; empty = alphabetic
  bool halo = false;              // a white outline behind the glyphs: readable where the text crosses lines
  std::string background;         // a box of this colour behind the text (estimated size); empty = none
};

enum class Marker { circle, square, triangle, diamond };
Marker marker_for_index(std::size_t i);   // a distinct shape per index, cycling

class Document {
 public:
  Document(double width, double height, std::string background = "#ffffff");

  void line(double x1, double y1, double x2, double y2, const Stroke& stroke);
  void polyline(const std::vector<std::pair<double, double>>& points, const Stroke& stroke);
  void rect(double x, double y, double w, double h, const std::string& fill, const Stroke* stroke = nullptr);
  void marker(Marker kind, double cx, double cy, double size, const std::string& fill,
              const std::string& outline = "#ffffff", const std::string& tooltip = "");
  void text(double x, double y, std::string_view content, const Font& font);

  // Everything drawn between begin_clip and end_clip is clipped to the rectangle (e.g. the plot area).
  void begin_clip(double x, double y, double w, double h);
  void end_clip();
  // A named group (e.g. "points"), handy for tests and for people editing the SVG by hand.
  void begin_group(std::string_view id);
  void end_group();

  std::string str() const;   // the complete document

 private:
  double width_, height_;
  std::string background_;
  std::string defs_;
  std::string body_;
  int clip_count_ = 0;
  int open_groups_ = 0;
};

// Maps values onto pixels on a base-10 logarithmic scale: lo -> px_lo, hi -> px_hi (px_hi may be smaller,
// as for a y axis growing upwards).
struct LogAxis {
  double lo = 1, hi = 10;       // data range, both > 0, whole decades
  double px_lo = 0, px_hi = 1;
  double to_px(double v) const;
  double from_px(double px) const;       // the inverse of to_px
  std::vector<double> decades() const;   // 10^k for every k with lo <= 10^k <= hi
  // The smallest whole-decade range holding every positive value in [min_v, max_v], at least one decade.
  static std::pair<double, double> decade_range(double min_v, double max_v);
};

// A decade as a tick label: "0.01", "1", "100", "1e+06" for very large or small ones.
std::string decade_label(double v);

// Rough rendered width of text in a sans-serif font (no font metrics available: 0.58 em per character).
double text_width(std::string_view text, double font_size);

// The area a text element covers on the page: its estimated box (text_width, plus a little air; from 0.85 em
// above the baseline to 0.3 em below), rotated with the text about its anchor point. Corners in order.
struct TextBox {
  std::array<std::pair<double, double>, 4> corners;
  bool intersects(const TextBox& other) const;   // separating axis test of the two rotated rectangles
  bool inside(double x0, double y0, double x1, double y1) const;
};
TextBox text_box(double x, double y, std::string_view content, const Font& font);

// Moves label positions apart so neighbours are at least `min_gap` apart, keeping their order, moving each
// as little as possible and staying within [lo, hi] when they fit. `wanted` in any order; the result is
// in the same order as `wanted`.
std::vector<double> spread_labels(const std::vector<double>& wanted, double min_gap, double lo, double hi);

}  // namespace aispflow::svg
