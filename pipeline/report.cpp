#include "pipeline/report.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "pipeline/cache.hpp"
#include "pipeline/build_id.hpp"

namespace aispflow {

namespace fs = std::filesystem;

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

// "2026-11-23T21:04:05.123Z": UTC with milliseconds (run.json's per-node started_at / finished_at).
std::string iso8601_utc_ms(std::chrono::system_clock::time_point t) {
  const std::string seconds = iso8601_utc(t);   // "...T21:04:05Z"
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, ".%03dZ", int(ms));
  return seconds.substr(0, seconds.size() - 1) + buffer;
}

namespace {

// Seconds rounded to the microsecond: run.json stays readable and diffable.
double round_seconds(double s) { return std::round(s * 1e6) / 1e6; }

std::string seconds_text(double s) {
  char buffer[32];
  if (s < 10)
    std::snprintf(buffer, sizeof buffer, "%.2f s", s);
  else
    std::snprintf(buffer, sizeof buffer, "%.1f s", s);
  return buffer;
}

}  // namespace

// The report is written by hand rather than through a json tree: for a 1,000-node run, building the
// tree costs more than the rest of a fully cached run. One node per line keeps it readable and diffable;
// every value still goes through nlohmann's serializer, so escaping and numbers are exactly JSON's.
std::string run_report_text(const RunSummary& summary) {
  auto str = [](const std::string& s) {
    // Plain printable ASCII needs no escaping (node names, digests, most reasons); anything else goes
    // through nlohmann's serializer, which escapes and replaces invalid UTF-8.
    const bool plain = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    return plain ? "\"" + s + "\"" : json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto num = [](double v) { return json(round_seconds(v)).dump(); };
  std::string out;
  out.reserve(256 + summary.nodes.size() * 200);
  out += "{\n";
  out += "  \"workflow\": " + str(summary.workflow) + ",\n";
  out += "  \"file\": " + str(summary.file.string()) + ",\n";
  out += "  \"started\": " + str(iso8601_utc(summary.started)) + ",\n";
  out += "  \"seconds\": " + num(summary.seconds) + ",\n";
  out += "  \"exit_code\": " + std::to_string(summary.exit_code) + ",\n";
  out += "  \"backend\": " + str(summary.backend) + ",\n";
  out += "  \"aispflow_version\": " + str(std::string(AISPFLOW_VERSION) + "+" + build_id()) + ",\n";
  out += "  \"nodes\": [";
  bool first = true;
  for (const auto& n : summary.nodes) {
    out += first ? "\n    {" : ",\n    {";
    first = false;
    out += "\"name\": " + str(n.name);
    out += ", \"type\": " + str(n.type);
    out += ", \"status\": " + str(to_string(n.status));
    out += ", \"reason\": " + str(n.reason);
    out += ", \"seconds\": " + num(n.seconds);
    if (n.started_at) out += ", \"started_at\": " + str(iso8601_utc_ms(*n.started_at));
    if (n.finished_at) out += ", \"finished_at\": " + str(iso8601_utc_ms(*n.finished_at));
    out += ", \"digest\": " + str(n.digest);
    out += ", \"inputs\": [";
    for (std::size_t k = 0; k < n.inputs.size(); ++k) out += (k ? ", " : "") + str(n.inputs[k]);
    out += "]";
    if (n.exclusive) out += ", \"exclusive\": true";
    if (!n.error.empty()) out += ", \"error\": " + str(n.error);
    if (n.verdict) out += ", \"verdict\": " + str(to_string(*n.verdict));
    if (!n.executor.empty()) {   // started by a remote launcher: "executor": "slurm", "slurm": {job id, ...}
      out += ", \"executor\": " + str(n.executor);
      if (n.remote.is_object() && !n.remote.empty())
        out += ", " + str(n.executor) + ": " + n.remote.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    out += "}";
  }
  out += summary.nodes.empty() ? "]" : "\n  ]";
  if (!summary.warnings.empty()) {
    out += ",\n  \"warnings\": [";
    for (std::size_t k = 0; k < summary.warnings.size(); ++k) out += (k ? ", " : "") + str(summary.warnings[k]);
    out += "]";
  }
  if (!summary.fingerprint.is_null())
    out += ",\n  \"fingerprint\": " + summary.fingerprint.dump(-1, ' ', false, json::error_handler_t::replace);
  out += "\n}\n";
  return out;
}

json run_report_json(const RunSummary& summary) { return json::parse(run_report_text(summary)); }

fs::path write_run_report(const fs::path& out_dir, const RunSummary& summary) {
  fs::path file = out_dir / "run.json";
  atomic_write_file(file, run_report_text(summary));
  return file;
}

std::string format_node_line(const NodeResult& r) {
  std::string line = "[" + to_string(r.status) + "] " + r.name;
  if (r.status == NodeStatus::ran || r.status == NodeStatus::failed) line += " (" + seconds_text(r.seconds) + ")";
  if (r.status == NodeStatus::failed) {
    line += " " + (r.error.empty() ? r.reason : r.error);
  } else if (!r.reason.empty() && !(r.status == NodeStatus::cached && r.reason.rfind("cached", 0) == 0)) {
    line += " " + r.reason;  // ("[cached] x cached (same inputs)" would say it twice)
  }
  if (r.verdict == Verdict::expectations_not_met) line += " [expectations not met]";
  return line;
}

std::string format_summary(const RunSummary& s) {
  std::size_t counts[4] = {0, 0, 0, 0};
  for (const auto& n : s.nodes) ++counts[static_cast<int>(n.status)];
  std::string text = s.workflow + ": " + std::to_string(s.nodes.size()) + " node" +
                     (s.nodes.size() == 1 ? "" : "s") + ": " + std::to_string(counts[0]) + " ran, " +
                     std::to_string(counts[1]) + " cached, " + std::to_string(counts[2]) + " failed, " +
                     std::to_string(counts[3]) + " skipped in " + seconds_text(s.seconds);
  if (s.interrupted) text += " (interrupted)";
  return text;
}

// ---------------------------------------------------------------------------------------------------

ConsoleReporter::ConsoleReporter(std::FILE* out, std::FILE* err, bool live) : out_(out), err_(err), live_(live) {}

ConsoleReporter::~ConsoleReporter() { stop_ticker(); }

void ConsoleReporter::run_started(std::size_t total_nodes) {
  std::lock_guard lock(mutex_);
  total_ = total_nodes;
  started_ = std::chrono::steady_clock::now();
  if (!live_ || ticker_.joinable()) return;
  draw_progress_locked();
  ticker_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      ticker_cv_.wait_for(lock, std::chrono::milliseconds(250));
      if (!stopping_) draw_progress_locked();
    }
  });
}

void ConsoleReporter::node_started(const std::string& name) {
  std::lock_guard lock(mutex_);
  running_.push_back(name);
  if (live_) draw_progress_locked();
}

void ConsoleReporter::node_finished(const NodeResult& result) {
  std::lock_guard lock(mutex_);
  ++done_;
  std::erase(running_, result.name);
  const bool failed = result.status == NodeStatus::failed;
  if (!live_ || result.status != NodeStatus::cached) {
    clear_progress_locked();
    std::FILE* stream = failed ? err_ : out_;
    std::fprintf(stream, "%s\n", format_node_line(result).c_str());
    // Cached nodes finish in bursts of microseconds: their lines are flushed with the next real event
    // (or at the end) rather than one write each.
    if (result.status != NodeStatus::cached) std::fflush(stream);
  }
  if (live_) draw_progress_locked();
}

void ConsoleReporter::node_log(const std::string& name, const std::string& message) {
  std::lock_guard lock(mutex_);
  clear_progress_locked();
  std::fprintf(err_, "  %s: %s\n", name.c_str(), message.c_str());
  std::fflush(err_);
  if (live_) draw_progress_locked();
}

void ConsoleReporter::warning(const std::string& message) {
  std::lock_guard lock(mutex_);
  clear_progress_locked();
  std::fprintf(err_, "warning: %s\n", message.c_str());
  std::fflush(err_);
  if (live_) draw_progress_locked();
}

void ConsoleReporter::remote_progress(const std::string& executor, const RemoteProgress& progress) {
  std::lock_guard lock(mutex_);
  remote_executor_ = executor;
  remote_ = progress;
  if (live_) {
    draw_progress_locked();
    return;
  }
  // Without a live line: one line when the counts settle into something new, at most every 5 s.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_remote_line_ < std::chrono::seconds(5)) return;
  last_remote_line_ = now;
  std::fprintf(out_, "%s\n", remote_text_locked().c_str());
  std::fflush(out_);
}

std::string ConsoleReporter::remote_text_locked() const {
  return remote_executor_ + " jobs: " + std::to_string(remote_.pending) + " pending, " +
         std::to_string(remote_.running) + " running, " + std::to_string(remote_.done) + " done";
}

void ConsoleReporter::run_finished(const RunSummary&) {
  stop_ticker();
  std::lock_guard lock(mutex_);
  clear_progress_locked();
  std::fflush(out_);
}

void ConsoleReporter::stop_ticker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ticker_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void ConsoleReporter::clear_progress_locked() {
  if (!progress_shown_) return;
  std::fputs("\r\033[K", out_);  // carriage return + erase to the end of the line
  progress_shown_ = false;
}

void ConsoleReporter::draw_progress_locked() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string line = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " + seconds_text(elapsed);
  if (!remote_executor_.empty()) line += "  " + remote_text_locked();
  if (!running_.empty()) {
    line += "  running: ";
    constexpr std::size_t kShown = 3;
    for (std::size_t i = 0; i < running_.size() && i < kShown; ++i) line += (i ? ", " : "") + running_[i];
    if (running_.size() > kShown) line += " (+" + std::to_string(running_.size() - kShown) + ")";
  }
  constexpr std::size_t kWidth = 100;  // keep to one terminal line, or \r cannot redraw it
  if (line.size() > kWidth) line = line.substr(0, kWidth - 3) + "...";
  std::fputs(("\r\033[K" + line).c_str(), out_);
  std::fflush(out_);
  progress_shown_ = true;
}

}  // namespace aispflow
