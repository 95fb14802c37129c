#pragma once
// The study's dual-roofline input for the `roofline` node: a kernel metadata CSV (where each kernel sits on
// the roofline: kernel,intensity,achieved_tflops[,label]) and an Nsight Compute CSV of the throughput metrics
// that say which resource binds it: sm__throughput (compute), tmem__throughput (Blackwell's tensor memory),
// l2__throughput (or lts__throughput) and dram__throughput (or gpu__dram_throughput), each a percent of its
// peak or a ratio. Each kernel's binding resource is the one with the highest utilisation.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow::roofline {

// One row of the metadata CSV.
struct KernelRow {
  std::string kernel;   // matched against the ncu kernel names: exactly, else as a substring of exactly one
  double intensity = 0, achieved_tflops = 0;
  std::string label;    // optional: how the plot and the CSV call it
  int line = 0;         // in the CSV, for messages
};
// Throws std::runtime_error naming the file, line and column of what is wrong.
std::vector<KernelRow> read_kernel_rows(const std::string& text, const std::string& shown);

// The resources, in the order ties are broken.
const std::vector<std::string>& throughput_resources();   // compute, TMEM, L2, DRAM

// One kernel name's utilisation per resource (0..1, averaged over its launches).
struct KernelThroughput {
  std::string kernel;
  int launches = 0;
  std::map<std::string, double> utilisation;   // resource -> fraction of its peak
};
// Both ncu CSV pages (raw: one column per metric, perhaps a units row; details: Metric Name / Unit / Value).
// A metric is a percent when its unit is "%" or its name says pct, a ratio when its name or unit says ratio;
// otherwise a percent if any of its values exceeds 1. `scales` (optional) gets "<metric>: percent|ratio (why)".
std::vector<KernelThroughput> read_throughput(const std::string& text, const std::string& shown,
                                              std::vector<std::string>* scales = nullptr);

struct KernelBinding {
  KernelRow row;
  std::optional<KernelThroughput> ncu;   // nullopt: no ncu kernel matched
  std::string resource;                  // the binding resource, or "unknown" without ncu data
  std::string describe() const;          // "TMEM-bound (compute 41%, TMEM 88%, L2 30%, DRAM 12%)"
  nlohmann::json to_json() const;
};
// Matches every row to the ncu kernels. A row whose name is a substring of several ncu kernels (and equal to
// none) is an error listing them.
std::vector<KernelBinding> bind_kernels(const std::vector<KernelRow>& rows, const std::vector<KernelThroughput>& ncu,
                                        const std::string& shown);
// kernel,ncu_kernel,label,intensity_flop_per_byte,achieved_tflops,compute_pct,tmem_pct,l2_pct,dram_pct,binding_resource
std::string kernels_csv(const std::vector<KernelBinding>& kernels);

}  // namespace aispflow::roofline
