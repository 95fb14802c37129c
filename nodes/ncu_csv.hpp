#pragma once
// Reading Nsight Compute CSV exports for measured-bytes roofline points.
//
// `ncu --csv --page raw --metrics dram__bytes.sum,gpu__time_duration.sum ...` writes one row per kernel
// launch with one column per metric (and, with units printed, a units row under the header);
// `ncu --csv --page details` writes one row per (launch, metric) with "Metric Name", "Metric Unit" and
// "Metric Value" columns. Both are accepted. A second, hand-written CSV says how many FLOPs each kernel
// does per launch (ncu does not know), so a point is: intensity = FLOPs / DRAM bytes, achieved = FLOPs / time.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace aispflow::ncu {

// RFC 4180 CSV: quoted fields, doubled quotes, CRLF. Throws std::runtime_error on an unterminated quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);
// The same, with a parse error named by the file it came from (`shown`).
std::vector<std::vector<std::string>> parse_csv_of(const std::string& text, const std::string& shown);
// The header row of an Nsight Compute export's kernel table: the first row naming "Kernel Name" (ncu may print
// "==PROF==" log lines, or an empty table, before it). Throws, naming `shown`, where no row does.
std::size_t kernel_header_row(const std::vector<std::vector<std::string>>& rows, const std::string& shown);
// Helpers for reading such tables (also used by nodes/roofline_kernels.cpp and nodes/ncu_profile.cpp): `s`
// without surrounding whitespace; `s` in lower case (ASCII); the index of the header cell equal to `name` once
// trimmed, or -1; a row's cell in column `c`, trimmed, or "" where the column is missing (-1) or the row short.
std::string trim(const std::string& s);
std::string lower(std::string s);
int column(const std::vector<std::string>& header, const std::string& name);
std::string cell(const std::vector<std::string>& row, int c);

// One kernel name's launches, summed.
struct KernelTraffic {
  std::string kernel;
  int launches = 0;
  double dram_bytes = 0;          // read + write
  std::optional<double> seconds;  // summed gpu__time_duration; nullopt when the export has no duration
};

// Per kernel name in first-seen order. Throws std::runtime_error naming the file and what is missing
// (no "Kernel Name" column, no DRAM bytes metric...). `shown` is the file name used in messages.
std::vector<KernelTraffic> read_traffic(const std::string& text, const std::string& shown);

// A row of the FLOPs metadata CSV: columns kernel, flops (per launch), and optional provider, shape, dtype.
struct KernelFlops {
  std::string kernel;     // exact kernel name, or a glob (* ? [..]) matched against it
  double flops = 0;
  std::string provider, shape, dtype;
};
std::vector<KernelFlops> read_flops(const std::string& text, const std::string& shown);

// Scale of a unit ncu prints ("byte", "Kbyte", "MB", "nsecond", "usecond", "ms" ...) to bytes or seconds;
// nullopt for a unit it does not know.
std::optional<double> unit_scale(const std::string& unit);
// "1,234,567.5" -> 1234567.5 (ncu may print thousands separators); nullopt if not a number.
std::optional<double> parse_number(const std::string& text);

}  // namespace aispflow::ncu
