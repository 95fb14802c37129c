#pragma once
// How a run is reported while and right after it runs: run.json (a contract used by CI gates and tools; see
// docs/cli.md) and the console (one live progress line on a terminal, otherwise one line per finished node).
// The HTML page and the comparison of two runs (`aispflow report`) are printers over run.json and the
// artifacts, kept apart in reports/.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/executor.hpp"

namespace aispflow {

// "2025-01-31T12:34:56Z"
std::string iso8601_utc(std::chrono::system_clock::time_point t);
// The same with milliseconds: "2026-11-23T21:04:05.123Z".
std::string iso8601_utc_ms(std::chrono::system_clock::time_point t);

// {"workflow", "file", "started", "seconds", "exit_code", "backend", "aispflow_version",
//  "nodes": [{"name", "type", "status", "reason", "seconds", "started_at"?, "finished_at"?, "digest", "error"?,
//             "inputs", "exclusive"?, "verdict"?}], "warnings"?, "fingerprint"?}
//   (started_at / finished_at: nodes that ran or failed, UTC with milliseconds)
std::string run_report_text(const RunSummary& summary);   // the text of run.json
json run_report_json(const RunSummary& summary);          // the same, parsed
// Writes out_dir/run.json atomically (readers never see half a report). Returns its path.
std::filesystem::path write_run_report(const std::filesystem::path& out_dir, const RunSummary& summary);

// "[ran] sweep (2.31 s) params changed: repeats 5 → 10"
std::string format_node_line(const NodeResult& result);
// "demo: 12 nodes: 2 ran, 10 cached, 0 failed, 0 skipped in 0.41 s"
std::string format_summary(const RunSummary& summary);

// Prints the run as it happens. `live` (a terminal): one progress line redrawn in place, plus a line for
// every node that ran, failed or was skipped (cached ones only count). Otherwise one line per node.
// Failures, warnings and node log messages go to `err`.
class ConsoleReporter : public RunObserver {
 public:
  ConsoleReporter(std::FILE* out, std::FILE* err, bool live);
  ~ConsoleReporter() override;

  void run_started(std::size_t total_nodes) override;
  void node_started(const std::string& name) override;
  void node_finished(const NodeResult& result) override;
  void node_log(const std::string& name, const std::string& message) override;
  void warning(const std::string& message) override;
  void remote_progress(const std::string& executor, const RemoteProgress& progress) override;
  void run_finished(const RunSummary& summary) override;

 private:
  void clear_progress_locked();
  void draw_progress_locked();
  void stop_ticker();

  std::FILE* out_;
  std::FILE* err_;
  bool live_;
  std::mutex mutex_;
  std::size_t total_ = 0, done_ = 0;
  std::vector<std::string> running_;     // in start order
  std::chrono::steady_clock::time_point started_;
  bool progress_shown_ = false;
  std::string remote_executor_;          // "slurm" once a remote launcher reported
  RemoteProgress remote_;
  std::chrono::steady_clock::time_point last_remote_line_{};
  std::string remote_text_locked() const;
  // Redraws the elapsed time while long nodes run.
  std::thread ticker_;
  std::condition_variable ticker_cv_;
  bool stopping_ = false;
};

}  // namespace aispflow
