#include "reports/html_page.hpp"

#include <string_view>

#include "pipeline/cache.hpp"
#include "reports/page_assets.hpp"
#include "reports/run_data.hpp"

namespace aispflow::reports {

namespace fs = std::filesystem;

namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

std::string escape_html(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Puts `value` where `marker` stands in `page`, once. Markers are replaced in a fixed order and values are
// never searched again, so data that happens to contain a marker's text stays data.
void fill(std::string& page, std::size_t& from, std::string_view marker, const std::string& value) {
  const std::size_t pos = page.find(marker, from);
  if (pos == std::string::npos) throw std::logic_error("report template has no " + std::string(marker));
  page.replace(pos, marker.size(), value);
  from = pos + value.size();
}

}  // namespace

std::string embeddable_json(const nlohmann::json& document) {
  std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // '<' occurs only inside JSON strings, where "\/" and "\u003c" are ordinary escapes.
  replace_all(text, "<!--", "\\u003c!--");
  replace_all(text, "</", "<\\/");
  return text;
}

std::string render_html(const nlohmann::json& document, const std::string& title) {
  std::string page(page_html());
  std::size_t from = 0;
  // In template order: title, style, data, script.
  fill(page, from, "{{TITLE}}", escape_html(title));
  fill(page, from, "/*{{STYLE}}*/", std::string(page_css()));
  fill(page, from, "{{DATA}}", embeddable_json(document));
  fill(page, from, "/*{{SCRIPT}}*/", std::string(page_js()));
  return page;
}

fs::path write_run_report_html(const fs::path& run_dir, const fs::path& out) {
  json doc = report_document(run_dir);
  const fs::path file = out.empty() ? run_dir / "report.html" : out;
  // The run's folder as seen from the page, so it can link each node's files (relative: no network, file:// works).
  doc["run_href"] = fs::absolute(run_dir).lexically_normal().lexically_relative(
                        fs::absolute(file).parent_path().lexically_normal()).generic_string();
  const std::string workflow = doc["run"].value("workflow", std::string("run"));
  atomic_write_file(file, render_html(doc, "aispflow report: " + workflow));
  return file;
}

}  // namespace aispflow::reports
