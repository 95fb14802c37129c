#pragma once
// Headless Chromium for the report tests (facts: shared notes on headless Chromium): the DOM after the page's
// script ran, a screenshot, and the checks the tests share. Every check here has a test that feeds it the broken
// case (tests/integration/test_report_html.cpp), so none of them can pass by construction.
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#ifdef AISPFLOW_TEST_HAVE_PNG
#include <png.h>
#endif

#include "support/text_files.hpp"

namespace aispflow::test {

// Debian's `chromium` (or $AISPFLOW_CHROMIUM); "" when there is none.
// Looked up once a process, so that a test which found it goes on with the same browser.
inline std::string chromium_path() {
  static const std::string path = [] {
    if (const char* env = std::getenv("AISPFLOW_CHROMIUM"); env && *env) return std::string(env);
    for (const char* name : {"chromium", "chromium-browser"}) {
      const CommandResult r = run_in(std::filesystem::temp_directory_path(), std::string("command -v ") + name);
      if (r.code == 0 && !r.out.empty()) return r.out.substr(0, r.out.find('\n'));
    }
    return std::string();
  }();
  return path;
}

struct BrowserRun {
  CommandResult result;       // out: the DOM (--dump-dom); err: Chromium's log, console errors included
  bool uncaught_error() const { return result.err.find("Uncaught") != std::string::npos; }
};

// Runs Chromium headless on `page` in a fresh profile; `mode` is "--dump-dom" (with a virtual-time budget
// when `virtual_time`) or "--screenshot=FILE --window-size=W,H".
inline BrowserRun chromium(const std::filesystem::path& work_dir, const std::filesystem::path& page, const std::string& mode,
                           bool virtual_time = true) {
  // One subshell, so that run_in's redirections take all of Chromium's output (and the profile is removed).
  const std::string line = "(profile=$(mktemp -d) && timeout 120 " + quote(chromium_path()) +
                           " --headless --no-sandbox --disable-gpu --user-data-dir=\"$profile\" --enable-logging=stderr --v=0 " +
                           (virtual_time ? "--virtual-time-budget=2000 " : "") + mode + " " +
                           quote("file://" + std::filesystem::absolute(page).string()) + "; rc=$?; rm -rf \"$profile\"; exit $rc)";
  return {run_in(work_dir, line)};
}

// Every http(s) URL in `html` that is not an XML namespace name (the SVG and XLink namespaces are names that
// are never fetched; anything else would be a resource the page depends on).
inline std::vector<std::string> http_resources(const std::string& html) {
  static const std::regex url(R"(https?://[^\s"'<>)\\]*)", std::regex::icase);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), url); it != std::sregex_iterator(); ++it) {
    const std::string u = it->str();
    if (u == "http://www.w3.org/2000/svg" || u == "http://www.w3.org/1999/xlink" || u == "http://www.w3.org/1999/xhtml")
      continue;
    out.push_back(u);
  }
  return out;
}

// The number of times `needle` occurs in `text`.
inline std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

#ifdef AISPFLOW_TEST_HAVE_PNG
struct Image {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;   // 3 bytes a pixel, row by row
  bool empty() const { return rgb.empty(); }
  const unsigned char* at(int x, int y) const { return &rgb[(std::size_t(y) * width + x) * 3]; }
};

inline Image read_png(const std::filesystem::path& file) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Image out;
  if (!png_image_begin_read_from_file(&image, file.c_str())) return out;
  image.format = PNG_FORMAT_RGB;
  out.width = int(image.width);
  out.height = int(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) out = Image{};
  return out;
}

// Pixels within `tolerance` of the colour in every channel.
inline std::size_t count_colour(const Image& img, int r, int g, int b, int tolerance = 6) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 2 < img.rgb.size(); i += 3)
    n += std::abs(img.rgb[i] - r) <= tolerance && std::abs(img.rgb[i + 1] - g) <= tolerance && std::abs(img.rgb[i + 2] - b) <= tolerance;
  return n;
}

// The share of pixels unlike the bottom-right corner's colour, taken as the page background: 0 for a blank page.
inline double drawn_fraction(const Image& img) {
  if (img.empty()) return 0;
  const unsigned char* bg = img.at(img.width - 1, img.height - 1);
  const std::size_t same = count_colour(img, bg[0], bg[1], bg[2], 2);
  return 1.0 - double(same) / double(std::size_t(img.width) * img.height);
}
#endif

}  // namespace aispflow::test
