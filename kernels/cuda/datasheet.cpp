// Datasheet ceilings. Only figures we can attribute to a public NVIDIA document are listed; a dtype the
// document does not give (or that we could not pin down) is simply absent. NVIDIA's datasheets print
// tensor-core figures "with sparsity"; their footnotes say dense is one half, which is what we list.
#include "kernels/cuda/datasheet.hpp"

#include <optional>

namespace aispflow::kernels::cuda {

namespace {

struct DatasheetEntry {
  const char* match;          // substring of the CUDA device name
  const char* label;          // what the figures are for
  const char* document;       // where they come from
  double hbm_gb_s;
  std::optional<double> fp8, bf16, fp16, tf32, fp32;   // dense TFLOP/s
  // Tensor memory (sm_100's TMEM) bandwidth, GB/s: a `datasheet.tmem` ceiling (level tmem) for the dual
  // roofline. No public NVIDIA document we know gives it, so no entry has one yet; add it with its source.
  std::optional<double> tmem_gb_s = std::nullopt;
};

// Order matters: more specific names first ("H100 NVL" before "H100").
const DatasheetEntry kTable[] = {
    // NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column: FP8 3,341 / BF16 1,671 / TF32 835 TFLOPS with
    // sparsity, FP32 60 TFLOPS, 3.9 TB/s.
    {"H100 NVL", "H100 NVL", "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL)", 3900, 1670.5, 835.5, 835.5, 417.5,
     60.0},
    // NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 PCIe column: FP8 1513, FP16/BF16 756, TF32 378
    // dense TFLOPS, FP32 51.2 TFLOPS, 2039 GB/s (80 GB HBM2e).
    {"H100 PCIe", "H100 PCIe", "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 PCIe)", 2039, 1513, 756,
     756, 378, 51.2},
    // Same whitepaper, H100 SXM5 column: FP8 1978.9, FP16/BF16 989.4, TF32 494.7 dense TFLOPS, FP32 66.9
    // TFLOPS; H100 datasheet: 3.35 TB/s. The SXM part reports itself as "NVIDIA H100 80GB HBM3".
    {"H100", "H100 SXM", "NVIDIA H100 Tensor Core GPU Architecture whitepaper and datasheet (H100 SXM5)", 3350,
     1978.9, 989.4, 989.4, 494.7, 66.9},
    // NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column: FP8 3,341 / BF16 1,671 / TF32 835 TFLOPS with
    // sparsity, FP32 60 TFLOPS, 4.8 TB/s.
    {"H200 NVL", "H200 NVL", "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL)", 4800, 1670.5, 835.5, 835.5, 417.5,
     60.0},
    // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: FP8 3,958 / BF16 1,979 / TF32 989 TFLOPS with
    // sparsity, FP32 67 TFLOPS, 4.8 TB/s.
    {"H200", "H200 SXM", "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)", 4800, 1979, 989.5, 989.5, 494.5, 67.0},
    // NVIDIA HGX B200 datasheet, eight-GPU figures with sparsity divided by 8 and halved: FP8 72 PFLOPS ->
    // 4.5 PFLOPS dense per GPU, BF16 36 PFLOPS -> 2.25 PFLOPS; HBM3e 64 TB/s -> 8 TB/s per GPU.
    {"B200", "B200", "NVIDIA HGX B200 datasheet (per GPU)", 8000, 4500, 2250, 2250, std::nullopt, std::nullopt},
};

Ceiling compute(const DatasheetEntry& e, const char* dtype, double value) {
  return {{"name", std::string("datasheet.") + dtype},
          {"kind", "compute"},
          {"unit", "TFLOP/s"},
          {"dtype", dtype},
          {"value", value},
          {"source", "datasheet"},
          {"method", std::string(e.document) + ": dense " + dtype + (std::string(dtype) == "fp32" ? " (CUDA cores)" : "")},
          {"device", e.label}};
}

}  // namespace

std::vector<Ceiling> datasheet_ceilings_for(const std::string& device_name) {
  // GH200's GPU differs from both H100 SXM and H200 in memory; rather no figures than wrong ones.
  if (device_name.find("GH200") != std::string::npos) return {};
  for (const auto& e : kTable) {
    if (device_name.find(e.match) == std::string::npos) continue;
    std::vector<Ceiling> out;
    out.push_back({{"name", "datasheet.hbm"},
                   {"kind", "memory"},
                   {"level", "hbm"},
                   {"unit", "GB/s"},
                   {"value", e.hbm_gb_s},
                   {"source", "datasheet"},
                   {"method", std::string(e.document) + ": HBM bandwidth"},
                   {"device", e.label}});
    if (e.tmem_gb_s)
      out.push_back({{"name", "datasheet.tmem"},
                     {"kind", "memory"},
                     {"level", "tmem"},
                     {"unit", "GB/s"},
                     {"value", *e.tmem_gb_s},
                     {"source", "datasheet"},
                     {"method", std::string(e.document) + ": tensor memory bandwidth"},
                     {"device", e.label}});
    if (e.fp8) out.push_back(compute(e, "fp8_e4m3", *e.fp8));
    if (e.bf16) out.push_back(compute(e, "bf16", *e.bf16));
    if (e.fp16) out.push_back(compute(e, "fp16", *e.fp16));
    if (e.tf32) out.push_back(compute(e, "tf32", *e.tf32));
    if (e.fp32) out.push_back(compute(e, "fp32", *e.fp32));
    return out;
  }
  return {};
}

}  // namespace aispflow::kernels::cuda
