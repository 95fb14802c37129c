#include "nodes/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace aispflow::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;   // never write "nan" into coordinates: renderers reject the file
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

Marker marker_for_index(std::size_t i) {
  static const Marker order[] = {Marker::circle, Marker::square, Marker::triangle, Marker::diamond};
  return order[i % 4];
}

namespace {

std::string stroke_attrs(const Stroke& s) {
  std::string a = " stroke=\"" + escape(s.color) + "\" stroke-width=\"" + num(s.width) + "\"";
  if (!s.dash.empty()) a += " stroke-dasharray=\"" + escape(s.dash) + "\"";
  if (s.opacity < 1.0) a += " stroke-opacity=\"" + num(s.opacity) + "\"";
  return a;
}

}  // namespace

Document::Document(double width, double height, std::string background)
    : width_(width), height_(height), background_(std::move(background)) {}

void Document::line(double x1, double y1, double x2, double y2, const Stroke& stroke) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\"" +
           stroke_attrs(stroke) + "/>\n";
}

void Document::polyline(const std::vector<std::pair<double, double>>& points, const Stroke& stroke) {
  std::string pts;
  for (const auto& [x, y] : points) pts += (pts.empty() ? "" : " ") + num(x) + "," + num(y);
  body_ += "<polyline points=\"" + pts + "\" fill=\"none\"" + stroke_attrs(stroke) + "/>\n";
}

void Document::rect(double x, double y, double w, double h, const std::string& fill, const Stroke* stroke) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
           "\" fill=\"" + escape(fill) + "\"" + (stroke ? stroke_attrs(*stroke) : std::string()) + "/>\n";
}

void Document::marker(Marker kind, double cx, double cy, double size, const std::string& fill,
                      const std::string& outline, const std::string& tooltip) {
  const double r = size / 2;
  const std::string paint = " fill=\"" + escape(fill) + "\" stroke=\"" + escape(outline) + "\" stroke-width=\"0.8\"";
  std::string shape;
  switch (kind) {
    case Marker::circle:
      shape = "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\"" + paint;
      break;
    case Marker::square:
      shape = "<rect x=\"" + num(cx - r * 0.9) + "\" y=\"" + num(cy - r * 0.9) + "\" width=\"" + num(1.8 * r) +
              "\" height=\"" + num(1.8 * r) + "\"" + paint;
      break;
    case Marker::triangle:
      shape = "<polygon points=\"" + num(cx) + "," + num(cy - 1.15 * r) + " " + num(cx - r) + "," +
              num(cy + 0.85 * r) + " " + num(cx + r) + "," + num(cy + 0.85 * r) + "\"" + paint;
      break;
    case Marker::diamond:
      shape = "<polygon points=\"" + num(cx) + "," + num(cy - 1.2 * r) + " " + num(cx + r) + "," + num(cy) + " " +
              num(cx) + "," + num(cy + 1.2 * r) + " " + num(cx - r) + "," + num(cy) + "\"" + paint;
      break;
  }
  if (tooltip.empty())
    body_ += shape + "/>\n";
  else   // a <title> child shows as a tooltip in browsers: hover a point to see which record it is
    body_ += shape + "><title>" + escape(tooltip) + "</title></" +
             (kind == Marker::circle ? "circle" : kind == Marker::square ? "rect" : "polygon") + ">\n";
}

void Document::text(double x, double y, std::string_view content, const Font& font) {
  const std::string rotation =
      font.rotate_deg != 0 ? " transform=\"rotate(" + num(font.rotate_deg) + " " + num(x) + " " + num(y) + ")\"" : "";
  if (!font.background.empty()) {   // no font metrics here: the box uses the estimated width
    const double w = text_width(content, font.size) + 6;
    const double left = font.anchor == "end" ? x - w + 3 : font.anchor == "middle" ? x - w / 2 : x - 3;
    body_ += "<rect x=\"" + num(left) + "\" y=\"" + num(y - font.size * 0.85) + "\" width=\"" + num(w) +
             "\" height=\"" + num(font.size * 1.15) + "\" fill=\"" + escape(font.background) +
             "\" fill-opacity=\"0.88\"" + rotation + "/>\n";
  }
  std::string a = "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(font.size) +
                  "\" text-anchor=\"" + escape(font.anchor) + "\" fill=\"" + escape(font.color) + "\"";
  if (font.bold) a += " font-weight=\"bold\"";
  if (font.halo) a += " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
  if (!font.baseline.empty()) a += " dominant-baseline=\"" + escape(font.baseline) + "\"";
  body_ += a + rotation + ">" + escape(content) + "</text>\n";
}

void Document::begin_clip(double x, double y, double w, double h) {
  const std::string id = "clip" + std::to_string(++clip_count_);
  defs_ += "<clipPath id=\"" + id + "\"><rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) +
           "\" height=\"" + num(h) + "\"/></clipPath>\n";
  body_ += "<g clip-path=\"url(#" + id + ")\">\n";
  ++open_groups_;
}

void Document::end_clip() { end_group(); }

void Document::begin_group(std::string_view id) {
  body_ += "<g id=\"" + escape(id) + "\">\n";
  ++open_groups_;
}

void Document::end_group() {
  if (open_groups_ == 0) return;   // unbalanced calls must never produce malformed XML
  body_ += "</g>\n";
  --open_groups_;
}

std::string Document::str() const {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" + num(height_) +
       "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  if (!defs_.empty()) s += "<defs>\n" + defs_ + "</defs>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width_) + "\" height=\"" + num(height_) + "\" fill=\"" +
       escape(background_) + "\"/>\n";
  s += body_;
  for (int i = 0; i < open_groups_; ++i) s += "</g>\n";
  s += "</svg>\n";
  return s;
}

double LogAxis::to_px(double v) const {
  const double l = std::log10(lo), h = std::log10(hi);
  const double t = (std::log10(std::max(v, 1e-300)) - l) / (h - l);
  return px_lo + t * (px_hi - px_lo);
}

double LogAxis::from_px(double px) const {
  const double l = std::log10(lo), h = std::log10(hi);
  return std::pow(10.0, l + (px - px_lo) / (px_hi - px_lo) * (h - l));
}

std::vector<double> LogAxis::decades() const {
  std::vector<double> out;
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  for (int k = first; k <= last; ++k) out.push_back(std::pow(10.0, k));
  return out;
}

std::pair<double, double> LogAxis::decade_range(double min_v, double max_v) {
  if (!(min_v > 0) || !std::isfinite(min_v)) min_v = 1;
  if (!(max_v > 0) || !std::isfinite(max_v)) max_v = min_v * 10;
  if (max_v < min_v) std::swap(min_v, max_v);
  double lo = std::pow(10.0, std::floor(std::log10(min_v) + 1e-9));
  double hi = std::pow(10.0, std::ceil(std::log10(max_v) - 1e-9));
  if (hi <= lo) hi = lo * 10;
  return {lo, hi};
}

std::string decade_label(double v) {
  const int k = static_cast<int>(std::lround(std::log10(v)));
  if (k >= -3 && k <= 5) {
    char buf[32];
    if (k >= 0)
      std::snprintf(buf, sizeof buf, "%.0f", std::pow(10.0, k));
    else
      std::snprintf(buf, sizeof buf, "%.*f", -k, std::pow(10.0, k));
    return buf;
  }
  return "1e" + std::to_string(k);
}

double text_width(std::string_view text, double font_size) { return 0.58 * font_size * double(text.size()); }

TextBox text_box(double x, double y, std::string_view content, const Font& font) {
  // 8 % and 2 px of air over the estimate: the estimate is an average, real glyphs run a little wider.
  const double w = text_width(content, font.size) * 1.08 + 2;
  const double left = font.anchor == "end" ? -w : font.anchor == "middle" ? -w / 2 : 0.0;
  const double top = -0.85 * font.size - 1, bottom = 0.3 * font.size + 1;
  const double a = font.rotate_deg * M_PI / 180.0, c = std::cos(a), s = std::sin(a);
  auto at = [&](double dx, double dy) { return std::pair<double, double>{x + dx * c - dy * s, y + dx * s + dy * c}; };
  return {{at(left, top), at(left + w, top), at(left + w, bottom), at(left, bottom)}};
}

bool TextBox::intersects(const TextBox& other) const {
  // Two convex shapes are apart iff some edge normal of either separates their projections.
  for (const TextBox* box : {this, &other})
    for (std::size_t i = 0; i < 4; ++i) {
      const auto [ax, ay] = box->corners[i];
      const auto [bx, by] = box->corners[(i + 1) % 4];
      const double nx = ay - by, ny = bx - ax;
      double lo1 = 1e300, hi1 = -1e300, lo2 = 1e300, hi2 = -1e300;
      for (const auto& [px, py] : corners) {
        lo1 = std::min(lo1, px * nx + py * ny);
        hi1 = std::max(hi1, px * nx + py * ny);
      }
      for (const auto& [px, py] : other.corners) {
        lo2 = std::min(lo2, px * nx + py * ny);
        hi2 = std::max(hi2, px * nx + py * ny);
      }
      if (hi1 <= lo2 || hi2 <= lo1) return false;
    }
  return true;
}

bool TextBox::inside(double x0, double y0, double x1, double y1) const {
  for (const auto& [px, py] : corners)
    if (px < x0 || px > x1 || py < y0 || py > y1) return false;
  return true;
}

std::vector<double> spread_labels(const std::vector<double>& wanted, double min_gap, double lo, double hi) {
  const std::size_t n = wanted.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return wanted[a] < wanted[b]; });

  // Clusters of labels that would overlap sit evenly spaced around the mean of what they wanted; merging
  // clusters until none overlap moves every label as little as the gap allows.
  struct Cluster {
    std::size_t first, count;
    double sum;
    double gap;
    double start() const { return sum / double(count) - gap * double(count - 1) / 2; }
    double end() const { return start() + gap * double(count - 1); }
  };
  std::vector<Cluster> clusters;
  for (std::size_t i = 0; i < n; ++i) {
    clusters.push_back({i, 1, wanted[order[i]], min_gap});
    while (clusters.size() > 1) {
      Cluster& prev = clusters[clusters.size() - 2];
      const Cluster& last = clusters.back();
      if (prev.end() + min_gap <= last.start()) break;
      prev.count += last.count;
      prev.sum += last.sum;
      clusters.pop_back();
    }
  }
  std::vector<double> sorted_pos(n);
  for (const auto& c : clusters)
    for (std::size_t j = 0; j < c.count; ++j) sorted_pos[c.first + j] = c.start() + min_gap * double(j);

  // Keep inside [lo, hi]: push up from the bottom, then down from the top (the top wins if they do not fit).
  for (std::size_t i = 0; i < n; ++i)
    sorted_pos[i] = std::max(sorted_pos[i], i == 0 ? lo : sorted_pos[i - 1] + min_gap);
  for (std::size_t i = n; i-- > 0;)
    sorted_pos[i] = std::min(sorted_pos[i], i + 1 == n ? hi : sorted_pos[i + 1] - min_gap);

  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[order[i]] = sorted_pos[i];
  return out;
}

}  // namespace aispflow::svg
