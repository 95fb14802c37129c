// `aispflow report`: the HTML page of one run, or two runs compared record by record. The work is in reports/;
// this file only maps the arguments onto it and prints where the output went.
#include <cstdio>
#include <filesystem>

#include "pipeline/cache.hpp"
#include "pipeline/cli/commands.hpp"
#include "pipeline/errors.hpp"
#include "reports/html_page.hpp"
#include "reports/run_data.hpp"
#include "reports/run_diff.hpp"

namespace aispflow::cli {

namespace fs = std::filesystem;

int report_command(const ReportArgs& args) {
  if (args.runs.size() < 2) {
    const fs::path dir = args.runs.empty() ? reports::latest_run_dir() : reports::run_dir_of(args.runs[0]);
    std::printf("%s\n", reports::write_run_report_html(dir, args.out).string().c_str());
    return kExitOk;
  }
  reports::DiffOptions options;
  options.metric = args.metric;
  options.tolerance = args.tolerance_pct / 100.0;
  const reports::RunDiff diff = reports::diff_runs(args.runs[0], args.runs[1], options);
  std::fputs(reports::diff_markdown(diff, args.all).c_str(), stdout);
  const fs::path out = args.out.empty() ? fs::path(diff.b_dir) / "diff.html" : fs::path(args.out);
  if (out.extension() == ".md")
    atomic_write_file(out, reports::diff_markdown(diff, true));
  else
    atomic_write_file(out, reports::render_html(reports::diff_document(diff), "aispflow: run comparison"));
  std::printf("\n%s: %s\n", diff.exit_code() == kExitOk ? "no regression" : "REGRESSION", out.string().c_str());
  return diff.exit_code();
}

}  // namespace aispflow::cli
