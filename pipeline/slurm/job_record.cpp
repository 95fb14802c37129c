#include "pipeline/slurm/job_record.hpp"

#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "pipeline/report.hpp"

namespace aispflow::slurm {

namespace fs = std::filesystem;

fs::path record_dir(const fs::path& cache_root, const std::string& request_key) {
  return cache_root / "slurm" / request_key.substr(0, 2) / request_key;
}

json request_to_json(const RemoteRequest& r) {
  json inputs = json::array();
  for (const auto& in : r.inputs) inputs.push_back({{"alias", in.alias}, {"node", in.node}, {"key", in.key}});
  return {{"workflow", r.workflow},       {"node", r.node},
          {"type", r.type},               {"request_key", r.request_key},
          {"key_inputs", r.key_inputs.to_json()}, {"hardware_bound", r.hardware_bound},
          {"exclusive", r.exclusive},     {"forced", r.forced},
          {"resources", r.resources},     {"inputs", inputs},
          {"workflow_dir", r.workflow_dir},
          {"target", {{"where", r.target.where}, {"how", r.target.how}, {"label", r.target.label}}}};
}

RemoteRequest request_from_json(const json& j) {
  RemoteRequest r;
  r.workflow = j.at("workflow").get<std::string>();
  r.node = j.at("node").get<std::string>();
  r.type = j.at("type").get<std::string>();
  r.request_key = j.at("request_key").get<std::string>();
  r.key_inputs = KeyInputs::from_json(j.at("key_inputs"));
  r.hardware_bound = j.at("hardware_bound").get<bool>();
  r.exclusive = j.at("exclusive").get<bool>();
  r.forced = j.at("forced").get<bool>();
  r.resources = j.at("resources").get<std::map<std::string, int>>();
  for (const auto& in : j.at("inputs"))
    r.inputs.push_back(RemoteInput{in.at("alias").get<std::string>(), in.at("node").get<std::string>(),
                                   in.at("key").get<std::string>()});
  r.workflow_dir = j.at("workflow_dir").get<std::string>();
  r.target = RemoteTarget{j.at("target").at("where"), j.at("target").at("how"), j.at("target").value("label", "")};
  return r;
}

std::chrono::system_clock::time_point parse_time_ms(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.peek() == '.') {
    in.get();
    in >> ms;
  }
  const auto seconds = std::chrono::system_clock::from_time_t(timegm(&tm));
  return seconds + std::chrono::milliseconds(ms);
}

json JobResult::to_json() const {
  return {{"job_id", job_id}, {"status", status}, {"key", key}, {"reason", reason}, {"error", error},
          {"host", host}, {"started_at", iso8601_utc_ms(started_at)}, {"finished_at", iso8601_utc_ms(finished_at)}};
}

JobResult JobResult::from_json(const json& j) {
  JobResult r;
  r.job_id = j.at("job_id").get<std::string>();
  r.status = j.at("status").get<std::string>();
  r.key = j.value("key", "");
  r.reason = j.value("reason", "");
  r.error = j.value("error", "");
  r.host = j.value("host", "");
  r.started_at = parse_time_ms(j.at("started_at").get<std::string>());
  r.finished_at = parse_time_ms(j.at("finished_at").get<std::string>());
  return r;
}

namespace {
std::optional<json> read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    return json::parse(in);
  } catch (const std::exception&) {
    return std::nullopt;   // written atomically, so only a foreign or damaged file lands here: ignore it
  }
}
}  // namespace

std::optional<JobResult> read_result(const fs::path& dir) {
  auto j = read_json(dir / "result.json");
  if (!j) return std::nullopt;
  try {
    return JobResult::from_json(*j);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<JobSubmission> read_submission(const fs::path& dir) {
  auto j = read_json(dir / "job.json");
  if (!j) return std::nullopt;
  try {
    return JobSubmission{j->at("job_id").get<std::string>(), parse_time_ms(j->at("submitted_at").get<std::string>())};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_submission(const fs::path& dir, const JobSubmission& s) {
  atomic_write_file(dir / "job.json",
                    json{{"job_id", s.job_id}, {"submitted_at", iso8601_utc_ms(s.submitted_at)}}.dump() + "\n");
}

}  // namespace aispflow::slurm
