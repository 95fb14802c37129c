#pragma once
// What `aispflow report` knows of a finished run: run.json plus the artifacts in its nodes/ folder, read
// into the one JSON document the HTML page draws (reports/page/report.js is its only reader). A printer:
// nothing here runs, measures or probes anything, and the cache is never touched.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::reports {

using json = nlohmann::json;

// A run directory as given on the command line: the folder holding run.json (`aispflow run --out`), or the
// run.json file itself. Throws InputError (exit 2) naming the path when it holds no readable run.json.
std::filesystem::path run_dir_of(const std::filesystem::path& given);
// The most recent run under `runs_root` (default `runs/`, where `aispflow run` writes without --out): the
// sub-folder whose run.json was written last. Throws InputError when there is none.
std::filesystem::path latest_run_dir(const std::filesystem::path& runs_root = "runs");

json read_run_json(const std::filesystem::path& run_dir);
// A node's artifact document (artifact.json's "data"), or null when the node left none (skipped, failed,
// or not selected in that run). Throws InputError for an artifact.json that is not JSON.
json node_data(const std::filesystem::path& run_dir, const std::string& node_name);

// One result record (docs/records.md) of a run, with the node whose artifact holds it.
struct RecordRef {
  std::string node;
  json record;
};
// Every record of every node whose artifact has a "records" array, in run.json's node order.
std::vector<RecordRef> run_records(const std::filesystem::path& run_dir, const json& run);

// A record as the report's tables show it: identity, status, the headline numbers, no env and no candidates
// (they would make a 5,000-record page tens of megabytes).
json record_row(const RecordRef& ref);

// The page's document: {"kind": "run", "run", "device", "warnings", "nodes" (run.json's, plus "files" and "dir"),
// "plots", "records", "compare", "expect", "alltoall"} (docs/cli.md, `aispflow report`).
json report_document(const std::filesystem::path& run_dir);

}  // namespace aispflow::reports
