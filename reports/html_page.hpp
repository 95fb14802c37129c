#pragma once
// The report as one self-contained HTML file: the page template, its CSS and its script (reports/page/,
// embedded into the binary at build time) around ONE JSON document (reports/run_data.hpp,
// reports/run_diff.hpp) in a <script type="application/json" id="aispflow-data">. No network, no other file:
// it opens from file://, and a test can read the DOM the script drew.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace aispflow::reports {

// The complete page for `document`, titled `title`.
std::string render_html(const nlohmann::json& document, const std::string& title);

// `document` as the text of a <script type="application/json">: JSON whose text never closes the script
// element ("</" is written "<\/", "<!--" as "\u003c!--"; both mean the same to JSON.parse).
std::string embeddable_json(const nlohmann::json& document);

// The report of the run in `run_dir`, written atomically to `out` (default run_dir/report.html). Returns its path.
std::filesystem::path write_run_report_html(const std::filesystem::path& run_dir, const std::filesystem::path& out = {});

}  // namespace aispflow::reports
