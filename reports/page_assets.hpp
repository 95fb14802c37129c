#pragma once
// The page's template, style and script (reports/page/), compiled into the binary by reports/embed_page.cmake.
#include <string_view>

namespace aispflow::reports {

std::string_view page_html();   // the template: {{TITLE}}, /*{{STYLE}}*/, {{DATA}}, /*{{SCRIPT}}*/ in that order
std::string_view page_css();
std::string_view page_js();

}  // namespace aispflow::reports
