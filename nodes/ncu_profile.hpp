#pragma once
// What the `ncu` node (nodes/ncu.cpp) asks of Nsight Compute and how it reads the answer: the one metric set,
// named and versioned (its name and version are part of the node's cache key), the ncu command line, the
// `--csv --page raw` table it prints, `--query-metrics` (which metrics this GPU offers) and the refusals that
// make the node skip rather than fail.
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace aispflow::ncu {

struct Metric {
  std::string role;   // compute, tensor, tmem, l1, l2, dram, occupancy, dram_read_bytes, ...
  std::string name;   // the full ncu metric name, e.g. "sm__throughput.avg.pct_of_peak_sustained_elapsed"
  int min_cc = 0;     // compute capability (major*10+minor) range where the GPU has it; 0 = no bound
  int max_cc = 0;
  std::string what;   // one line for the docs and the artifact
  std::string base() const { return name.substr(0, name.find('.')); }   // what --query-metrics lists
  bool applies_to(int cc) const { return (min_cc == 0 || cc >= min_cc) && (max_cc == 0 || cc <= max_cc); }
};

struct MetricSet {
  std::string name;
  int version = 1;   // bump whenever a metric is added, removed or renamed
  std::vector<Metric> metrics;
  std::string id() const { return name + "/" + std::to_string(version); }   // "roofline/2"
  // The metrics of the set that apply to compute capability `cc` (0: unknown, only those without a bound).
  std::vector<Metric> for_cc(int cc) const;
};

// The dual roofline's metric set: SM and tensor-pipe throughput, L1, L2 and DRAM throughput, achieved
// occupancy, TMEM throughput (sm_100), DRAM bytes, duration and SM clock.
const MetricSet& roofline_metric_set();

// Options of one profiled run.
struct CommandOptions {
  std::filesystem::path ncu;
  std::vector<std::string> metrics;
  std::string clock_control = "none";   // ncu --clock-control: none (the GPU's own clocks) | base (locked)
  std::string cache_control = "all";    // ncu --cache-control: all (caches flushed before the launch) | none
  std::filesystem::path log_file;       // ncu's own output, the CSV table included
  std::vector<std::string> program;     // the profiled program and its arguments
};
// ncu --profile-from-start off ... <program>: profiles the launches between the program's cudaProfilerStart and
// cudaProfilerStop, one row per launch, units in base form (byte, nsecond, %).
std::vector<std::string> command_line(const CommandOptions& options);

// One profiled kernel launch of a `--csv --page raw` table (or `--page details`): metric -> value in the unit ncu
// printed; units per metric.
struct Launch {
  std::string id, kernel;
  std::map<std::string, double> values;
  std::map<std::string, std::string> units;
};
// Lines ncu writes around the table ("==PROF==", "==WARNING==") are ignored. Throws std::runtime_error naming
// `shown` when there is no table.
std::vector<Launch> read_launches(const std::string& text, const std::string& shown);

// "Version 2025.2.1.0 (build ...)" in `ncu --version`'s output -> "2025.2.1.0"; nullopt when absent.
std::optional<std::string> parse_version(const std::string& version_output);
// The metric base names `ncu --query-metrics` lists ("dram__bytes", "sm__throughput", ...).
std::set<std::string> parse_query_metrics(const std::string& query_output);
// Why ncu could not profile, when its output says profiling is not permitted (ERR_NVGPUCTRPERM) or the profiler
// cannot start on this machine ("Failed to initialize the profiler", e.g. in a gVisor sandbox); nullopt else.
std::optional<std::string> profiling_refused(const std::string& output);

}  // namespace aispflow::ncu
