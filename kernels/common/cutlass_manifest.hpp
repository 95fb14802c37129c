#pragma once
// The table of aispflow's CUTLASS instances (kernels/cuda/cutlass/manifest.def), readable without CUDA or
// CUTLASS: the providers pick candidates from it, `aispflow hw` counts it, CPU unit tests check it.
// docs/cutlass.md describes the instances, the build sets and the naming.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/gemm.hpp"

namespace aispflow::kernels {

struct CutlassInstance {
  int arch = 90;               // 90: sm_90a; 100: sm_100a
  std::string dtype;           // bf16 | fp8_e4m3 | mxfp8 | nvfp4
  std::string layout;          // how B is stored: nn (K x N) | nt (N x K, K-major)
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int cluster_m = 1, cluster_n = 1;
  std::string schedule;        // cooperative | pingpong | stream_k (+ _swap) | tcgen05_1sm | tcgen05_2sm
  std::string set;             // pick | default | all (manifest.def)

  // The name CUTLASS's generator would give this kernel (arch, operand/accumulator/output types, tile,
  // cluster, layouts of A/B/C as t = row-major / n = column-major, alignment, schedule); the record's `kernel`.
  std::string name() const;
  // The C symbol of the instance's entry points; kernels/cuda/cutlass/cutlass.cmake builds the same string.
  std::string symbol() const;
  // Built with AISPFLOW_CUTLASS_INSTANCES=`build_set` ("pick" builds the pick rows, "default" pick + default rows,
  // "all" every row).
  bool in_build_set(const std::string& build_set) const;
  bool block_scaled() const { return dtype == "mxfp8" || dtype == "nvfp4"; }
  // `_swap` rows compute C^T = B * A^T (docs/cutlass.md): tile_m runs along the case's N, tile_n along its M.
  bool swap_ab() const;
  // The schedule without `_swap`: cooperative | pingpong | stream_k | tcgen05_1sm | tcgen05_2sm.
  std::string base_schedule() const;
  // Built with CUTLASS's stream-K tile scheduler, which also runs split-K with a run-time split count.
  bool stream_k() const { return base_schedule() == "stream_k"; }
};

// The split counts cutlass.select tries for a stream-K instance on `s` with `sm_count` SMs (docs/cutlass.md,
// "Split-K"): always 1 (CUTLASS's own heuristic: stream-K, split-K or data-parallel), plus, when the output
// tiles cover at most half of the SMs, the split-K count that fills them once, floor(sm_count / tiles), and
// half of it (each > 1), each K range keeping at least kMinKTilesPerSplit K tiles. Other instances: {1}.
inline constexpr int kMinKTilesPerSplit = 4;
std::vector<int> cutlass_split_counts(const CutlassInstance& inst, const GemmShape& s, int sm_count);

// The fp8 promotion intervals cutlass.select tries (wgmma k-blocks of 32 between additions into the fp32
// accumulator; CUTLASS's default is 4, one 128-deep K tile): {4, 8, 16} for sm_90a fp8 instances, whose exact
// mainloop waits for every wgmma in flight at each promotion; {0} (not applicable) for the rest. A longer
// interval accumulates more products in the tensor core's reduced-precision accumulator: verification decides.
std::vector<int> cutlass_promotion_intervals(const CutlassInstance& inst);

// The scheduler swizzles cutlass.select tries (the profiler's --swizzle_size; docs/cutlass.md, "Search").
inline constexpr std::array<int, 4> kCutlassSwizzles{1, 2, 4, 8};

// One run-time configuration of an instance: scheduler swizzle, split count (stream-K instances; 1 = CUTLASS's
// heuristic), the stream-K reduction (false: deterministic, a chain in K order; true: nondeterministic, every K
// range adds into the workspace once the first has stored), fp8 promotion interval (0: not applicable).
struct CutlassVariant {
  int swizzle = 1, splits = 1, promotion = 0;
  bool nondeterministic = false;
};
// What a provider runs of `inst` on `s`: `search` false (the `cutlass` provider) one variant with CUTLASS's
// defaults; true (cutlass.select) every swizzle x split count x reduction (stream-K instances) x promotion
// interval, the defaults first.
std::vector<CutlassVariant> cutlass_variants(const CutlassInstance& inst, const GemmShape& s, int sm_count, bool search);

const std::vector<CutlassInstance>& cutlass_manifest();

// The layout an instance must have been built for to run `c`: fp8 and the block-scaled formats read B K-major
// only (Hopper's wgmma takes 8-bit operands K-major), and GemmProblem stores their B as N x K whatever the
// case's layout says (as the cuBLASLt provider does), so they always use an `nt` instance.
std::string cutlass_storage_layout(const GemmCase& c);

// The manifest rows that compute `c` at all: same dtype, the storage layout above, epilogue none.
// Shape constraints are CUTLASS's can_implement answer, asked at run time.
std::vector<const CutlassInstance*> cutlass_instances_for(const GemmCase& c);

// The operand alignment CUTLASS's TMA kernels need (every row stride a multiple of 16 bytes): nullopt when
// the shape satisfies it, else which dimension breaks it. A documented mirror of can_implement's main rule,
// used to say *why* an instance cannot implement a shape.
std::optional<std::string> cutlass_alignment_problem(const CutlassInstance& inst, const GemmShape& s);

}  // namespace aispflow::kernels
