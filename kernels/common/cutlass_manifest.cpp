#include "kernels/common/cutlass_manifest.hpp"

#include <algorithm>
#include <stdexcept>

namespace aispflow::kernels {

namespace {

// CUTLASS's element names in kernel names.
std::string element_name(const std::string& dtype) {
  if (dtype == "bf16") return "bf16";
  if (dtype == "fp8_e4m3") return "e4m3";
  if (dtype == "mxfp8") return "ue8m0xe4m3";   // E8M0 scale per 32 elements x e4m3
  if (dtype == "nvfp4") return "ue4m3xe2m1";   // E4M3 scale per 16 elements x e2m1
  throw std::logic_error("cutlass manifest: unknown dtype " + dtype);
}

int element_bits(const std::string& dtype) {
  if (dtype == "bf16") return 16;
  if (dtype == "nvfp4") return 4;
  return 8;   // fp8_e4m3, mxfp8
}

std::string schedule_suffix(const std::string& schedule) {
  if (schedule == "cooperative") return "warpspecialized_cooperative_epi_tma";
  if (schedule == "pingpong") return "warpspecialized_pingpong_epi_tma";
  if (schedule == "stream_k") return "warpspecialized_cooperative_epi_tma_stream_k";
  if (schedule == "tcgen05_1sm") return "1sm";
  if (schedule == "tcgen05_2sm") return "2sm";
  throw std::logic_error("cutlass manifest: unknown schedule " + schedule);
}

constexpr const char* kSwapSuffix = "_swap";

}  // namespace

bool CutlassInstance::swap_ab() const {
  const std::string suffix = kSwapSuffix;
  return schedule.size() > suffix.size() && schedule.compare(schedule.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string CutlassInstance::base_schedule() const {
  return swap_ab() ? schedule.substr(0, schedule.size() - std::string(kSwapSuffix).size()) : schedule;
}

namespace {

// The layouts of CUTLASS's A, B and D in generator letters (t = row-major, n = column-major).
std::string layout_letters(const CutlassInstance& i) {
  // A row-major (t), B row-major K x N (t, layout nn) or column-major K x N (n, layout nt), C row-major (t).
  if (!i.swap_ab()) return std::string("t") + (i.layout == "nn" ? "t" : "n") + "t";
  // Swapped: CUTLASS's A is our B as N x K (row-major when K-major, layout nt), its B our A as column-major
  // K x M, its D our C as column-major N x M.
  return std::string(i.layout == "nt" ? "t" : "n") + "nn";
}

}  // namespace

std::string CutlassInstance::name() const {
  const std::string e = element_name(dtype);
  const std::string op = block_scaled() ? "bstensorop" : "tensorop";
  const std::string layouts = layout_letters(*this);
  return "cutlass3x_sm" + std::to_string(arch) + "_" + op + "_gemm_" + e + "_" + e + "_f32_void_bf16_" +
         std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" + std::to_string(tile_k) + "_" +
         std::to_string(cluster_m) + "x" + std::to_string(cluster_n) + "x1_0_" + layouts + "_align" +
         std::to_string(128 / element_bits(dtype)) + "_" + schedule_suffix(base_schedule());
}

std::string CutlassInstance::symbol() const {
  return "aispflow_cutlass_sm" + std::to_string(arch) + "_" + dtype + "_" + layout + "_" + std::to_string(tile_m) +
         "x" + std::to_string(tile_n) + "x" + std::to_string(tile_k) + "_" + std::to_string(cluster_m) + "x" +
         std::to_string(cluster_n) + "_" + schedule;
}

bool CutlassInstance::in_build_set(const std::string& build_set) const {
  if (build_set == "all") return true;
  if (build_set == "pick") return set == "pick";
  return set == "pick" || set == "default";
}

const std::vector<CutlassInstance>& cutlass_manifest() {
  static const std::vector<CutlassInstance> table = [] {
    std::vector<CutlassInstance> rows;
#define AISPFLOW_CUTLASS_INSTANCE(arch, dtype, layout, tm, tn, tk, cm, cn, schedule, set) \
  rows.push_back({arch, #dtype, #layout, tm, tn, tk, cm, cn, #schedule, #set});
#include "kernels/cuda/cutlass/manifest.def"
#undef AISPFLOW_CUTLASS_INSTANCE
    return rows;
  }();
  return table;
}

std::vector<int> cutlass_split_counts(const CutlassInstance& inst, const GemmShape& s, int sm_count) {
  std::vector<int> out{1};
  if (!inst.stream_k() || sm_count <= 0 || inst.tile_m <= 0 || inst.tile_n <= 0 || inst.tile_k <= 0) return out;
  const std::int64_t rows = inst.swap_ab() ? s.n : s.m, cols = inst.swap_ab() ? s.m : s.n;
  auto up = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const std::int64_t tiles = up(rows, inst.tile_m) * up(cols, inst.tile_n) * std::max<std::int64_t>(s.batch, 1);
  const std::int64_t k_tiles = up(s.k, inst.tile_k);
  // Tiles that already fill at least half the SMs gain less from a K split than its partial-sum traffic costs;
  // CUTLASS's stream-K heuristic (split 1) covers the last wave there.
  if (2 * tiles > sm_count) return out;
  const std::int64_t fill = std::min<std::int64_t>(sm_count / tiles, k_tiles / kMinKTilesPerSplit);
  for (const std::int64_t split : {fill, fill / 2})
    if (split > 1 && std::find(out.begin(), out.end(), int(split)) == out.end()) out.push_back(int(split));
  return out;
}

std::vector<int> cutlass_promotion_intervals(const CutlassInstance& inst) {
  if (inst.arch == 90 && inst.dtype == "fp8_e4m3") return {4, 8, 16};
  return {0};
}

std::vector<CutlassVariant> cutlass_variants(const CutlassInstance& inst, const GemmShape& s, int sm_count, bool search) {
  const std::vector<int> promotions = cutlass_promotion_intervals(inst);
  if (!search) return {CutlassVariant{1, 1, promotions.front()}};
  std::vector<CutlassVariant> out;
  const std::vector<bool> reductions = inst.stream_k() ? std::vector<bool>{false, true} : std::vector<bool>{false};
  for (const int promotion : promotions)
    for (const int splits : cutlass_split_counts(inst, s, sm_count))
      for (const bool nondeterministic : reductions)
        for (const int swizzle : kCutlassSwizzles)
          out.push_back(CutlassVariant{swizzle, splits, promotion, nondeterministic});
  return out;
}

std::string cutlass_storage_layout(const GemmCase& c) { return c.dtype == "bf16" ? c.layout : "nt"; }

std::vector<const CutlassInstance*> cutlass_instances_for(const GemmCase& c) {
  std::vector<const CutlassInstance*> out;
  if (c.epilogue != "none") return out;
  const std::string layout = cutlass_storage_layout(c);
  for (const auto& inst : cutlass_manifest())
    if (inst.dtype == c.dtype && inst.layout == layout) out.push_back(&inst);
  return out;
}

std::optional<std::string> cutlass_alignment_problem(const CutlassInstance& inst, const GemmShape& s) {
  const int align = 128 / element_bits(inst.dtype);   // elements per 16 bytes
  auto bad = [&](const char* what, std::int64_t v) -> std::optional<std::string> {
    return std::string(what) + " = " + std::to_string(v) + " is not a multiple of " + std::to_string(align) +
           " (TMA needs 16-byte aligned rows of " + inst.dtype + ")";
  };
  if (s.k % align) return bad("K", s.k);               // A's rows (and B's when K-major)
  if (inst.layout == "nn" && s.n % align) return bad("N", s.n);   // B's rows when N-major
  if (s.n % 8) return std::string("N = ") + std::to_string(s.n) + " is not a multiple of 8 (16-byte bf16 rows of C)";
  return std::nullopt;
}

}  // namespace aispflow::kernels
