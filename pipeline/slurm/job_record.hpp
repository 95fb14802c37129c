#pragma once
// The files one Slurm job leaves in the shared cache, per request key (pipeline/remote_launcher.hpp):
//
//   <cache>/slurm/<key[0:2]>/<request key>/request.json   what to run (the driver writes it before sbatch)
//                                          job.json       the job id and when it was submitted (driver)
//                                          result.json    how it ended and under which key (the job)
//                                          job-<id>.log   the job's stdout and stderr (Slurm)
//
// Every file is written atomically (temporary file, rename). Because the record is found by request key,
// not by run, a re-run after the driver crashed finds what its jobs did: a result names the cache entry
// to adopt, and a job.json whose job Slurm still knows is a job to watch instead of submitting again.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "pipeline/remote_launcher.hpp"

namespace aispflow::slurm {

std::filesystem::path record_dir(const std::filesystem::path& cache_root, const std::string& request_key);

json request_to_json(const RemoteRequest& request);
RemoteRequest request_from_json(const json& j);

// What the job writes when it ends (also when its node failed or was skipped on the compute node).
struct JobResult {
  std::string job_id;
  std::string status;          // ran | cached | skipped | failed
  std::string key;             // ran / cached: the entry in the cache
  std::string reason, error;
  std::string host;            // the compute node's hostname
  std::chrono::system_clock::time_point started_at, finished_at;
  json to_json() const;
  static JobResult from_json(const json& j);
};
std::optional<JobResult> read_result(const std::filesystem::path& dir);   // nullopt when absent or unreadable

struct JobSubmission {
  std::string job_id;
  std::chrono::system_clock::time_point submitted_at;
};
std::optional<JobSubmission> read_submission(const std::filesystem::path& dir);
void write_submission(const std::filesystem::path& dir, const JobSubmission& submission);

std::chrono::system_clock::time_point parse_time_ms(const std::string& iso);   // iso8601_utc_ms's format

}  // namespace aispflow::slurm
