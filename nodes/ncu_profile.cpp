#include "nodes/ncu_profile.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "nodes/ncu_csv.hpp"

namespace aispflow::ncu {

std::vector<Metric> MetricSet::for_cc(int cc) const {
  std::vector<Metric> out;
  for (const auto& m : metrics)
    if (cc > 0 ? m.applies_to(cc) : (m.min_cc == 0 && m.max_cc == 0)) out.push_back(m);
  return out;
}

const MetricSet& roofline_metric_set() {
  // Throughputs are "percent of the unit's sustained peak": over the elapsed time for the SOL units (as the
  // roofline's binding-resource rule reads them), over active cycles for the tensor pipe, L1 and occupancy (what
  // Nsight Compute's own sections show for those). Version 2 dropped sm__pipe_tensor_op_gmma_cycles_active, which
  // ncu 2025.3.1 does not offer on an H100: there the hmma pipe metric counts the wgmma path too (97% for
  // cuBLASLt's wgmma kernel at 760 TFLOP/s, bench/results/h100/ncu/). TMEM is Blackwell's tensor memory (sm_100):
  // the name follows the study's dual-roofline CSV; a metric the GPU's ncu does not offer is left out and the
  // artifact says so.
  static const MetricSet set{
      "roofline",
      2,
      {
          {"compute", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 0, 0, "SM (compute) throughput, % of peak"},
          {"tensor", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 70, 99,
           "tensor pipe active cycles (mma.sync and, on sm_90, wgmma), % of peak"},
          {"tmem", "tmem__throughput.avg.pct_of_peak_sustained_elapsed", 100, 0, "tensor memory throughput, % of peak"},
          {"l1", "l1tex__throughput.avg.pct_of_peak_sustained_active", 0, 0, "L1/TEX cache throughput, % of peak"},
          {"l2", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 0, 0, "L2 cache throughput, % of peak"},
          {"dram", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 0, 0, "DRAM (HBM) throughput, % of peak"},
          {"occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", 0, 0, "achieved occupancy, % of peak"},
          {"dram_read_bytes", "dram__bytes_read.sum", 0, 0, "bytes read from DRAM"},
          {"dram_write_bytes", "dram__bytes_write.sum", 0, 0, "bytes written to DRAM"},
          {"duration", "gpu__time_duration.sum", 0, 0, "kernel duration"},
          {"sm_clock", "gpc__cycles_elapsed.avg.per_second", 0, 0, "SM clock during the launch"},
      }};
  return set;
}

std::vector<std::string> command_line(const CommandOptions& o) {
  std::string metrics;
  for (const auto& m : o.metrics) metrics += (metrics.empty() ? "" : ",") + m;
  std::vector<std::string> argv = {o.ncu.string(),
                                   "--profile-from-start", "off",
                                   "--clock-control",      o.clock_control,
                                   "--cache-control",      o.cache_control,
                                   "--metrics",            metrics,
                                   "--csv",
                                   "--page",               "raw",
                                   "--print-units",        "base",
                                   "--log-file",           o.log_file.string()};
  argv.insert(argv.end(), o.program.begin(), o.program.end());
  return argv;
}

std::vector<Launch> read_launches(const std::string& text, const std::string& shown) {
  // Only the table: ncu's own messages ("==PROF== Connected ...", "==WARNING== ...") share the log file.
  std::string table;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("==", 0) != 0) table += line + "\n";
  const auto rows = parse_csv_of(table, shown);
  const std::size_t h = kernel_header_row(rows, shown);
  const auto& header = rows[h];
  const int kernel_col = column(header, "Kernel Name"), id_col = column(header, "ID");
  const int name_col = column(header, "Metric Name"), unit_col = column(header, "Metric Unit"),
            value_col = column(header, "Metric Value");

  std::vector<Launch> out;
  auto launch_for = [&](const std::string& id, const std::string& kernel) -> Launch& {
    for (auto& l : out)
      if (l.id == id) return l;
    out.push_back(Launch{id, kernel, {}, {}});
    return out.back();
  };
  if (name_col >= 0 && value_col >= 0) {   // details page: one row per metric
    for (std::size_t r = h + 1; r < rows.size(); ++r) {
      const auto v = parse_number(cell(rows[r], value_col));
      const std::string metric = cell(rows[r], name_col);
      if (metric.empty() || !v) continue;
      std::string id = cell(rows[r], id_col);
      Launch& l = launch_for(id.empty() ? "row" + std::to_string(r) : id, cell(rows[r], kernel_col));
      l.values[metric] = *v;
      l.units[metric] = cell(rows[r], unit_col);
    }
    return out;
  }
  std::size_t first = h + 1;
  std::vector<std::string> units(header.size());
  if (first < rows.size() && cell(rows[first], kernel_col).empty()) {   // the units row names no kernel
    for (std::size_t c = 0; c < header.size(); ++c) units[c] = cell(rows[first], int(c));
    ++first;
  }
  for (std::size_t r = first; r < rows.size(); ++r) {
    const std::string kernel = cell(rows[r], kernel_col);
    if (kernel.empty()) continue;
    std::string id = cell(rows[r], id_col);
    Launch& l = launch_for(id.empty() ? "row" + std::to_string(r) : id, kernel);
    for (std::size_t c = 0; c < header.size(); ++c) {
      const std::string name = trim(header[c]);
      if (name.find("__") == std::string::npos) continue;   // metric names have a "unit__counter" form
      if (const auto v = parse_number(cell(rows[r], int(c)))) {
        l.values[name] = *v;
        l.units[name] = units[c];
      }
    }
  }
  return out;
}

std::optional<std::string> parse_version(const std::string& output) {
  const auto at = output.find("Version ");
  if (at == std::string::npos) return std::nullopt;
  std::string v;
  for (std::size_t i = at + 8; i < output.size() && !std::isspace(static_cast<unsigned char>(output[i])); ++i)
    v += output[i];
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0]))) return std::nullopt;
  return v;
}

std::set<std::string> parse_query_metrics(const std::string& output) {
  std::set<std::string> names;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    // A metric name: lower-case words joined by one "__" (unit__counter), e.g. "lts__t_sectors".
    const auto sep = first.find("__");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= first.size()) continue;
    const bool plain = std::all_of(first.begin(), first.end(), [](char c) {
      return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
    if (plain) names.insert(first);
  }
  return names;
}

std::optional<std::string> profiling_refused(const std::string& output) {
  // A sandbox without access to the counters (gVisor, for one) fails before any kernel: "==ERROR== Failed to
  // initialize the profiler: LibraryNotLoaded". The machine cannot profile; nothing the workflow can fix.
  if (const auto at = output.find("Failed to initialize the profiler"); at != std::string::npos) {
    const auto end = output.find('\n', at);
    return "profiling not possible on this machine: ncu: " + output.substr(at, end == std::string::npos ? end : end - at);
  }
  if (output.find("ERR_NVGPUCTRPERM") == std::string::npos) return std::nullopt;
  return "profiling not permitted: ncu reports ERR_NVGPUCTRPERM (this user may not read the GPU performance "
         "counters; run as root or have the admin set the driver option NVreg_RestrictProfilingToAdminUsers=0, see "
         "https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
}

}  // namespace aispflow::ncu
