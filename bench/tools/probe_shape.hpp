#pragma once
// PROBE_SHAPE, the one-case override of the developer probes (hopper_probe, hopper_timeline):
// "MxNxK[xBATCH] dtype layout", e.g. "1000x896x1008 bf16 nn" or "512x2880x2880x32 fp8_e4m3 nt". Host-only and
// free of CUDA, so that tests/unit/test_probe_shape.cpp checks it without a GPU. The dtype is the caller's to
// check (lt_dtype); the layout must be nn or nt.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "kernels/common/gemm.hpp"

namespace aispflow::bench {

struct ProbeShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype, layout;
};

inline std::optional<ProbeShape> parse_probe_shape(const char* text) {
  ProbeShape s;
  char dims[64] = {}, dtype[32] = {}, layout[8] = {}, rest = 0;
  if (std::sscanf(text, "%63s %31s %7s %c", dims, dtype, layout, &rest) != 3) return std::nullopt;
  // The dimensions must be the whole first word: %n records where the three or four numbers ended.
  int end3 = -1, end4 = -1;
  std::sscanf(dims, "%" SCNd64 "x%" SCNd64 "x%" SCNd64 "%n", &s.m, &s.n, &s.k, &end3);
  std::int64_t m, n, k, batch = 1;
  std::sscanf(dims, "%" SCNd64 "x%" SCNd64 "x%" SCNd64 "x%" SCNd64 "%n", &m, &n, &k, &batch, &end4);
  const int length = int(std::strlen(dims));
  if (end4 == length) s.batch = batch;
  else if (end3 != length) return std::nullopt;
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return std::nullopt;
  if (std::string(layout) != "nn" && std::string(layout) != "nt") return std::nullopt;
  s.dtype = dtype;
  s.layout = layout;
  return s;
}

// The probes' GemmShape of a case, named as PROBE_SHAPE spells it: "MxNxK", and "xBATCH" when batched.
inline kernels::GemmShape probe_gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
  kernels::GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  s.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           (batch > 1 ? "x" + std::to_string(batch) : "");
  return s;
}

}  // namespace aispflow::bench
