#include "pipeline/slurm/launcher.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "pipeline/node_type.hpp"
#include "pipeline/report.hpp"
#include "pipeline/slurm/process.hpp"
#include "pipeline/workflow.hpp"

namespace aispflow::slurm {

namespace fs = std::filesystem;
using SystemClock = std::chrono::system_clock;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && s[start] == ' ') ++start;
  return s.substr(start);
}

std::string joined(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
  return out;
}

// States after which a job does nothing more (squeue's long names).
bool is_terminal(const std::string& state) {
  static const std::set<std::string> kTerminal = {"COMPLETED", "FAILED",    "CANCELLED", "TIMEOUT",
                                                  "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
                                                  "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"};
  return kTerminal.count(state) > 0;
}

struct QueueRow {
  std::string state, node, partition;
};

// One squeue for every id: id -> state and node. nullopt when squeue itself failed (controller away).
std::optional<std::map<std::string, QueueRow>> query_queue(const std::vector<std::string>& ids, std::string& error) {
  std::map<std::string, QueueRow> rows;
  if (ids.empty()) return rows;
  auto r = run_process({"squeue", "--noheader", "--states=all", "--jobs=" + joined(ids), "--format=%i|%T|%P|%N"});
  if (r.exit_code != 0) {
    if (r.err.find("Invalid job id") != std::string::npos) return rows;   // none of them is known any more
    error = trim(r.err.empty() ? r.out : r.err);
    return std::nullopt;
  }
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> parts;
    std::size_t start = 0, bar;
    while ((bar = line.find('|', start)) != std::string::npos) {
      parts.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    parts.push_back(line.substr(start));
    if (parts.size() != 4) continue;
    rows[trim(parts[0])] = QueueRow{parts[1], trim(parts[3]), trim(parts[2])};
  }
  return rows;
}

// "Key=value" from `scontrol show job -o` or a jobcomp line.
std::string field(const std::string& text, const std::string& key) {
  const std::string needle = key + "=";
  std::size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == ' ') {
      const std::size_t start = pos + needle.size();
      return text.substr(start, text.find(' ', start) - start);
    }
    pos += needle.size();
  }
  return "";
}

// The final state of a job squeue no longer lists: scontrol first; a job already purged from the
// controller's memory (MinJobAge) is looked up in the jobcomp file, where the cluster keeps one.
std::string final_state(const std::string& id, std::string& exit_code) {
  auto r = run_process({"scontrol", "--oneliner", "show", "job", id});
  if (r.exit_code == 0) {
    exit_code = field(r.out, "ExitCode");
    std::string state = field(r.out, "JobState");
    if (!state.empty()) return state;
  }
  auto config = run_process({"scontrol", "show", "config"});
  std::istringstream lines(config.out);
  std::string line, comp_type, comp_loc;
  while (std::getline(lines, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "JobCompType") comp_type = value;
    if (key == "JobCompLoc") comp_loc = value;
  }
  if (comp_type == "jobcomp/filetxt" && !comp_loc.empty()) {
    std::ifstream in(comp_loc);
    std::string found;
    while (std::getline(in, line))
      if (line.rfind("JobId=" + id + " ", 0) == 0) found = line;
    if (!found.empty()) {
      exit_code = field(found, "ExitCode");
      return field(found, "JobState");
    }
  }
  return "UNKNOWN";
}

std::string log_tail(const fs::path& log, std::size_t lines_wanted = 15) {
  std::ifstream in(log);
  if (!in) return "(no log at " + log.string() + ")";
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > lines_wanted) lines.erase(lines.begin());
  }
  if (lines.empty()) return "(the log " + log.string() + " is empty)";
  std::string out;
  for (const auto& l : lines) out += "\n  | " + l;
  return out;
}

}  // namespace

std::optional<std::string> cluster_problem() {
  for (const char* tool : {"sbatch", "squeue", "scancel", "scontrol"})
    if (find_in_path(tool).empty())
      return std::string(tool) + " is not installed or not in PATH (the Slurm client tools are needed to submit jobs)";
  auto ping = run_process({"scontrol", "ping"});
  if (ping.exit_code != 0 || ping.out.find("is UP") == std::string::npos)
    return "the Slurm controller does not answer (`scontrol ping`: " +
           trim(ping.out.empty() ? ping.err : ping.out + " " + ping.err) + ")";
  return std::nullopt;
}

Launcher::Launcher(LauncherOptions options) : opt_(std::move(options)) {
  if (auto problem = cluster_problem())
    throw InputError(SourceLoc{"<command line>", 0, 0}, "", "--executor", "cannot use Slurm: " + *problem);
  fs::create_directories(opt_.cache_root / "slurm");
  poller_ = std::thread([this] { poll_loop(); });
}

Launcher::~Launcher() {
  bool in_flight = false;
  {
    std::lock_guard lock(mutex_);
    in_flight = !active_.empty();
  }
  if (in_flight) cancel_all();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (poller_.joinable()) poller_.join();
}

std::optional<RemoteTarget> Launcher::target(const NodeDecl& decl, const NodeType& type,
                                             const std::map<std::string, int>& resources) const {
  const Settings s = opt_.profile.for_node(decl.name, decl.declared_name, decl.type);
  const std::string where = s.where.value_or(type.traits().hardware_bound ? "slurm" : "local");
  if (where != "slurm") return std::nullopt;
  // What selects the hardware: part of a hardware-bound node's request key, so each partition (or
  // constraint) keeps its own results. Account, QOS and time limit do not change the machine.
  RemoteTarget target;
  json& t = target.where;
  t = {{"partition", s.partition.value_or("")}};
  target.label = s.partition ? "partition " + *s.partition : "the default partition";
  auto gpu = resources.find("gpu");
  if (gpu != resources.end() && gpu->second > 0) {
    t["gpus"] = gpu->second;
    target.label += ", " + std::to_string(gpu->second) + " GPU" + (gpu->second == 1 ? "" : "s");
  }
  if (s.sbatch_args) {
    t["sbatch_args"] = *s.sbatch_args;
    for (const auto& a : *s.sbatch_args) target.label += " " + a;
  }
  if (s.num_nodes) {
    t["nodes"] = *s.num_nodes;
    target.label += ", " + std::to_string(*s.num_nodes) + " nodes";
  }
  if (s.ntasks) {
    t["ntasks"] = *s.ntasks;
    target.label += ", " + std::to_string(*s.ntasks) + " tasks";
  }
  if (s.exclusive.value_or(false)) {
    t["exclusive"] = true;
    target.label += ", exclusive";
  }
  // The rest (account, qos, time, cpus, mem) only shapes the submission.
  json& submit = target.how;
  submit = json::object();
  if (s.account) submit["account"] = *s.account;
  if (s.qos) submit["qos"] = *s.qos;
  if (s.time) submit["time"] = *s.time;
  if (s.cpus) submit["cpus"] = *s.cpus;
  if (s.mem) submit["mem"] = *s.mem;
  return target;
}

std::vector<std::string> Launcher::sbatch_options(const RemoteRequest& request) const {
  std::vector<std::string> args;
  const json& where = request.target.where;
  const json& submit = request.target.how;
  if (auto p = where.value("partition", ""); !p.empty()) args.push_back("--partition=" + p);
  if (submit.contains("account")) args.push_back("--account=" + submit["account"].get<std::string>());
  if (submit.contains("qos")) args.push_back("--qos=" + submit["qos"].get<std::string>());
  if (submit.contains("time")) args.push_back("--time=" + submit["time"].get<std::string>());
  if (submit.contains("cpus")) args.push_back("--cpus-per-task=" + std::to_string(submit["cpus"].get<int>()));
  if (submit.contains("mem")) args.push_back("--mem=" + submit["mem"].get<std::string>());
  if (where.contains("gpus")) args.push_back("--gres=gpu:" + std::to_string(where["gpus"].get<int>()));
  if (where.contains("nodes")) args.push_back("--nodes=" + std::to_string(where["nodes"].get<int>()));
  if (where.contains("ntasks")) args.push_back("--ntasks=" + std::to_string(where["ntasks"].get<int>()));
  if (where.value("exclusive", false)) args.push_back("--exclusive");
  if (where.contains("sbatch_args"))
    for (const auto& a : where["sbatch_args"]) args.push_back(a.get<std::string>());
  return args;
}

std::optional<RemoteOutcome> Launcher::recorded(const std::string& request_key) const {
  auto result = read_result(record_dir(opt_.cache_root, request_key));
  if (!result || (result->status != "ran" && result->status != "cached") || result->key.empty()) return std::nullopt;
  RemoteOutcome o;
  o.status = RemoteOutcome::Status::cached;
  o.key = result->key;
  o.reason = "Slurm job " + result->job_id + " on " + result->host;
  o.started_at = result->started_at;
  o.finished_at = result->finished_at;
  o.info = {{"job_id", result->job_id}, {"host", result->host}, {"state", "COMPLETED"},
            {"started_at", iso8601_utc_ms(result->started_at)}, {"finished_at", iso8601_utc_ms(result->finished_at)}};
  return o;
}

// The batch script every job runs: it only execs its arguments (aispflow run-node ...), so nothing
// needs quoting and the job's command line is visible in `squeue -o %o`.
const fs::path& Launcher::script() {
  std::call_once(script_once_, [this] {
    script_ = opt_.cache_root / "slurm" / "run-node.sh";
    atomic_write_file(script_, "#!/bin/sh\n# Written by aispflow: runs one node of a workflow (docs/slurm.md).\nexec \"$@\"\n");
    ::chmod(script_.c_str(), 0755);
  });
  return script_;
}

std::optional<std::string> Launcher::submit(const RemoteRequest& request, const fs::path& dir, std::string& error) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=aispflow:" + request.node,
                                   "--output=" + (dir / "job-%j.log").string()};
  for (auto& a : sbatch_options(request)) argv.push_back(std::move(a));
  argv.push_back(script().string());
  for (const std::string& a : {opt_.executable.string(), std::string("run-node"), (dir / "request.json").string(),
                               std::string("--cache"), opt_.cache_root.string(), std::string("--backend"), opt_.backend})
    argv.push_back(a);
  auto r = run_process(argv);
  std::string id = trim(r.out.substr(0, r.out.find(';')));
  if (r.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    error = trim(r.err.empty() ? r.out : r.err);
    if (error.empty()) error = "exit code " + std::to_string(r.exit_code);
    return std::nullopt;
  }
  return id;
}

void Launcher::start(RemoteRequest request, std::function<void(RemoteOutcome)> done) {
  const fs::path dir = record_dir(opt_.cache_root, request.request_key);
  Job job;
  job.node = request.node;
  job.dir = dir;
  job.done = std::move(done);
  job.target = request.target;
  try {
    fs::create_directories(dir);
    // A job of an earlier driver (crashed, or killed) still working on this very request: watch it
    // rather than submit the same work again.
    if (auto earlier = request.forced ? std::nullopt : read_submission(dir)) {
      std::string error;
      auto rows = query_queue({earlier->job_id}, error);
      if (rows && rows->count(earlier->job_id)) {
        job.id = earlier->job_id;
        job.submitted_at = earlier->submitted_at;
        job.adopted = true;
      }
    }
    if (job.id.empty()) {
      atomic_write_file(dir / "request.json", request_to_json(request).dump() + "\n");
      std::string error;
      auto id = submit(request, dir, error);
      if (!id) {
        RemoteOutcome o;
        o.error = "sbatch refused the job: " + error;
        o.finished_at = SystemClock::now();
        o.info = {{"state", "NOT_SUBMITTED"}, {"partition", request.target.where.value("partition", "")}};
        job.done(std::move(o));
        return;
      }
      job.id = *id;
      job.submitted_at = SystemClock::now();
      write_submission(dir, JobSubmission{job.id, job.submitted_at});
    }
  } catch (const std::exception& e) {
    RemoteOutcome o;
    o.error = std::string("cannot submit the job: ") + e.what();
    job.done(std::move(o));
    return;
  }
  bool cancel_now = false;
  {
    std::lock_guard lock(mutex_);
    cancel_now = cancelled_;   // Ctrl-C came while sbatch ran: this one is cancelled too
    active_.emplace(job.id, std::move(job));
  }
  if (cancel_now) run_process({"scancel", job.id});
  wake_.notify_all();
}

void Launcher::cancel_all() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mutex_);
    // Once, and again every few seconds while jobs remain: a busy controller can drop a request, and the
    // driver waits for every job it cancelled to leave the queue.
    const auto now = std::chrono::steady_clock::now();
    if (cancelled_ && now - last_cancel_ < std::chrono::seconds(3)) return;
    cancelled_ = true;
    last_cancel_ = now;
    for (const auto& [id, _] : active_) ids.push_back(id);
  }
  if (ids.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  run_process(argv);
  wake_.notify_all();
}

RemoteProgress Launcher::progress() const {
  std::lock_guard lock(mutex_);
  RemoteProgress p;
  p.done = done_;
  for (const auto& [_, job] : active_) (job.state == "PENDING" ? p.pending : p.running)++;
  return p;
}

void Launcher::poll_loop() {
  const auto interval = std::chrono::duration<double>(opt_.profile.poll_interval_s);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (active_.empty()) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      continue;
    }
    lock.unlock();
    if (opt_.cancel && opt_.cancel->load()) cancel_all();
    poll_once();
    auto p = progress();
    if (opt_.observer && (p.pending != last_reported_.pending || p.running != last_reported_.running ||
                          p.done != last_reported_.done)) {
      last_reported_ = p;
      opt_.observer->remote_progress(name(), p);
    }
    lock.lock();
    wake_.wait_for(lock, std::chrono::duration_cast<std::chrono::milliseconds>(interval),
                   [this] { return stopping_; });
  }
}

void Launcher::poll_once() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, _] : active_) ids.push_back(id);
  }
  std::string error;
  auto rows = query_queue(ids, error);
  if (!rows) {
    // The controller may be away for a while (a restart): keep asking, but say so at most every 30 s.
    const auto now = std::chrono::steady_clock::now();
    if (opt_.observer && now - last_squeue_warning_ > std::chrono::seconds(30)) {
      last_squeue_warning_ = now;
      opt_.observer->warning("squeue failed (asking again every poll): " + error);
    }
    return;
  }
  std::vector<std::pair<Job, std::pair<std::optional<JobResult>, std::string>>> ended;
  for (const auto& id : ids) {
    Job* job = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = active_.find(id);
      if (it == active_.end()) continue;
      job = &it->second;
      if (auto row = rows->find(id); row != rows->end()) {
        job->state = row->second.state;
        if (!row->second.node.empty()) job->host = row->second.node;
        if (!row->second.partition.empty()) job->partition = row->second.partition;
      }
    }
    // The job's own result file says how it ended; it is written before the job exits.
    auto result = read_result(job->dir);
    std::string state;
    bool finished = false;
    if (result && result->job_id == id) {
      finished = true;
      state = result->status == "failed" ? "FAILED" : "COMPLETED";
    } else if (!rows->count(id) || is_terminal(job->state)) {
      std::string exit_code;
      state = rows->count(id) ? job->state : final_state(id, exit_code);
      if (rows->count(id) && state != "COMPLETED") final_state(id, exit_code);
      bool cancelled;
      {
        std::lock_guard lock(mutex_);
        cancelled = cancelled_;
      }
      // A job that completed normally writes its result first; on a shared filesystem with attribute
      // caching the file can show up a little later, so wait a moment before calling it lost.
      const auto now = std::chrono::steady_clock::now();
      if (state == "COMPLETED" && !cancelled) {
        if (!job->ended_without_result) job->ended_without_result = now;
        if (now - *job->ended_without_result < std::chrono::seconds(10)) continue;
      }
      if (!exit_code.empty() && exit_code != "0:0") state += " (exit code " + exit_code + ")";
      finished = true;
      result.reset();
    }
    if (!finished) continue;
    std::lock_guard lock(mutex_);
    auto it = active_.find(id);
    Job done_job = std::move(it->second);
    active_.erase(it);
    ++done_;
    ended.push_back({std::move(done_job), {std::move(result), state}});
  }
  for (auto& [job, how] : ended) complete(job, how.first, how.second);
}

void Launcher::complete(Job& job, const std::optional<JobResult>& result, const std::string& slurm_state) {
  RemoteOutcome o;
  const fs::path log = job.dir / ("job-" + job.id + ".log");
  o.info = {{"job_id", job.id},
            {"partition", job.partition.empty() ? job.target.where.value("partition", "") : job.partition},
            {"host", job.host},
            {"submitted_at", iso8601_utc_ms(job.submitted_at)},
            {"state", slurm_state},
            {"log", log.string()}};
  if (job.adopted) o.info["adopted"] = true;   // submitted by an earlier driver
  bool cancelled;
  {
    std::lock_guard lock(mutex_);
    cancelled = cancelled_;
  }
  if (result) {
    o.key = result->key;
    o.started_at = result->started_at;
    o.finished_at = result->finished_at;
    o.info["host"] = result->host;
    o.info["started_at"] = iso8601_utc_ms(result->started_at);
    o.info["finished_at"] = iso8601_utc_ms(result->finished_at);
    if (result->status == "ran") {
      o.status = RemoteOutcome::Status::ran;
    } else if (result->status == "cached") {
      o.status = RemoteOutcome::Status::cached;
      o.reason = result->reason;
    } else if (result->status == "skipped") {
      o.status = RemoteOutcome::Status::skipped;
      o.reason = result->reason + " (on " + result->host + ")";
    } else {
      o.status = RemoteOutcome::Status::failed;
      o.error = result->error + " (Slurm job " + job.id + " on " + result->host + ")";
    }
  } else if (cancelled) {
    o.status = RemoteOutcome::Status::skipped;
    o.reason = "interrupted (Slurm job " + job.id + " cancelled)";
    o.finished_at = SystemClock::now();
  } else {
    o.status = RemoteOutcome::Status::failed;
    o.finished_at = SystemClock::now();
    o.error = "Slurm job " + job.id + " ended in state " + slurm_state + " without a result; last lines of its log:" +
              log_tail(log);
  }
  job.done(std::move(o));
}

}  // namespace aispflow::slurm
