// Developer probe: how fast HBM serves a GEMM operand to TMA, by access pattern, with no math in the way.
//
// Decode GEMMs (M = 64) are a stream of B (N x K, K-major) from HBM. ours.cluster streams it at about 1.4 TB/s
// where cuBLASLt reaches about 2.1 TB/s (NOTES.md, steps 24-27), with the same bytes. This probe asks whether the
// access pattern itself (rows per TMA box, bytes of K per row and stage, K split across CTAs, stages in flight)
// decides the rate, by streaming B with exactly the GEMM's loads and nothing else: one thread per CTA keeps
// `stages` stages in flight (TMA loads completing on an mbarrier with a transaction count) and refills each as
// soon as it lands. Every launch reads a different copy of B (enough copies that each is cold in L2), like the
// workflows' timing.
//
//   stream_probe [n k]      B of n x k bf16 (default 2880 x 4096, the decode shape of kernel_selector.yaml)
//
// Prints one line per pattern: CTAs, bytes per stage, stages, median time and GB/s over the launches, and the
// bytes the mbarriers counted (each stage's transaction count must add up to B's size, or the line says FAILED).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/ours/hopper_ptx.cuh"

using namespace aispflow::kernels::cuda::ours;

namespace {

constexpr std::uint32_t kATileBytes = 64 * 64 * 2;   // one k-tile of A's 64 rows: 64 x 64 bf16

#define PROBE_CHECK(call)                                                                          \
  do {                                                                                             \
    const cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(e_)); \
  } while (0)

// One CTA streams rows [band * band_rows, + band_rows) of B over k-tiles [split * tiles_per_split, ...): a stage
// is `row_boxes` boxes of box_rows rows times `k_boxes` boxes of box_k elements along K.
struct StreamParams {
  int bands = 0, splits = 1;
  int band_rows = 0, box_rows = 0, row_boxes = 1;
  int box_k = 64, k_boxes = 1;            // elements of K per box, boxes of K per stage
  int k_tiles = 0, tiles_per_split = 0;   // stages' worth of K in B, per split
  int stages = 0;
  std::uint32_t stage_bytes = 0;
  bool along_rows = false;                // a contiguous stream: stage i is the band's i-th box of rows
  int rotate = 0;                         // band b starts its k-range at k-tile b x rotate (mod its length)
  int a_rows = 0;                         // and per stage a box of this many rows of A (M = 64 x K, from L2)
  int a_batch = 1;                        // ... or every a_batch-th stage one 3-D box of A's next a_batch k-tiles
                                          // (64 rows each, into a region of its own after the stages)
  unsigned long long* landed = nullptr;   // bytes the barriers counted, summed over CTAs
};

__global__ void __launch_bounds__(32, 1) stream_kernel(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap map_a,
                                                         const StreamParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                                       ~std::uintptr_t(1023));
  std::uint8_t* a_region = smem + std::size_t(p.stages) * p.stage_bytes;   // batched A: one k-tile slot per stage
  auto* full = reinterpret_cast<std::uint64_t*>(a_region + (p.a_batch > 1 ? std::size_t(p.stages) * kATileBytes : 0));
  if (threadIdx.x != 0) return;
  const int band = int(blockIdx.x) % p.bands, split = int(blockIdx.x) / p.bands;
  const int k_begin = split * p.tiles_per_split;
  const int k_end = min(p.k_tiles, k_begin + p.tiles_per_split);
  for (int s = 0; s < p.stages; ++s) mbar_init(&full[s], 1);
  fence_mbarrier_init();
  const std::uint32_t box_bytes = std::uint32_t(p.box_rows) * std::uint32_t(p.box_k) * 2;
  // Bytes stage i of this CTA's range receives: its B boxes (and A's rows), plus a batch of A at every a_batch-th.
  auto stage_bytes_of = [&](int i) {
    return p.stage_bytes + (p.a_batch > 1 && i % p.a_batch == 0 ? std::uint32_t(p.a_batch) * kATileBytes : 0u);
  };
  auto issue = [&](int kt, int s) {
    const int i = kt - k_begin;
    if (p.rotate != 0) kt = k_begin + (kt - k_begin + band * p.rotate) % (k_end - k_begin);
    mbar_arrive_expect_tx(&full[s], stage_bytes_of(i));
    // A's k-tiles kt .. kt + a_batch - 1, rows 0-63, in one load, into slots s .. s + a_batch - 1 (the host keeps
    // the stage count a multiple of a_batch, so a batch never wraps).
    if (p.a_batch > 1 && i % p.a_batch == 0) tma_load(a_region + std::size_t(s) * kATileBytes, &map_a, &full[s], 0, 0, kt);
    std::uint8_t* dst = smem + std::size_t(s) * p.stage_bytes;
    if (p.along_rows) {
      tma_load(dst, &map, &full[s], 0, band * p.band_rows + kt * p.box_rows, 0);
      return;
    }
    for (int kb = 0; kb < p.k_boxes; ++kb)
      for (int rb = 0; rb < p.row_boxes; ++rb, dst += box_bytes)
        tma_load(dst, &map, &full[s], (kt * p.k_boxes + kb) * p.box_k, band * p.band_rows + rb * p.box_rows, 0);
    for (int kb = 0; kb < p.k_boxes && p.a_rows > 0 && p.a_batch == 1; ++kb, dst += p.a_rows * p.box_k * 2)
      tma_load(dst, &map_a, &full[s], (kt * p.k_boxes + kb) * p.box_k, 0, 0);
  };
  int issued = k_begin;
  for (int s = 0; s < p.stages && issued < k_end; ++s) issue(issued++, s);
  unsigned long long landed = 0;
  for (int kt = k_begin, i = 0; kt < k_end; ++kt, ++i) {
    const int s = i % p.stages;
    mbar_wait(&full[s], std::uint32_t(i / p.stages) & 1);
    landed += stage_bytes_of(i);
    if (issued < k_end) issue(issued++, s);
  }
  atomicAdd(p.landed, landed);
#endif
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  PROBE_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (!fn || q != cudaDriverEntryPointSuccess) throw std::runtime_error("cuTensorMapEncodeTiled not found");
  return reinterpret_cast<EncodeTiled>(fn);
}

// A bf16 view (inner x outer x 1: tma_load is the kernel's 3-D load, with batch 1; rows of `inner` elements) with boxes of box_k x box_rows; 128-byte swizzle for
// 128-byte boxes as the GEMM loads them, none for wider ones (the swizzle does not change what HBM sees).
CUtensorMap view(void* base, std::int64_t inner, std::int64_t outer, int box_k, int box_rows) {
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), 1};
  const cuuint64_t strides[2] = {cuuint64_t(inner * 2), cuuint64_t(inner * outer * 2)};
  const cuuint32_t box[3] = {cuuint32_t(box_k), cuuint32_t(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dims, strides, box, element_strides,
                               CU_TENSOR_MAP_INTERLEAVE_NONE,
                               box_k * 2 == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: " + std::to_string(int(r)));
  return map;
}

// A (64 x k bf16) as a 3-D view for batched loads: 64 elements of K (128 bytes, swizzled) x 64 rows x k/64 blocks of
// K, so that one box of 64 x 64 x `blocks` lands as `blocks` consecutive 8 KB k-tiles, each the layout one 2-D box
// gives. The blocks' stride (128 bytes) is below the rows' (k x 2): dimensions need not be nested.
CUtensorMap batched_view(void* base, std::int64_t k, int blocks) {
  const cuuint64_t dims[3] = {64, 64, cuuint64_t(k / 64)};
  const cuuint64_t strides[2] = {cuuint64_t(k * 2), 128};
  const cuuint32_t box[3] = {64, 64, cuuint32_t(blocks)};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dims, strides, box, element_strides,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled (batched A view) failed: " + std::to_string(int(r)));
  return map;
}

struct Pattern {
  const char* what;
  std::int64_t row_elems;   // the view's row length: k (B as stored), or 256 for a contiguous stream
  int band_rows, box_rows, box_k, k_boxes, splits, stages;
  bool along_rows = false;
  int rotate = 0;
  int a_rows = 0;
  int a_batch = 1;
};

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: nothing to probe\n");
    return 0;
  }
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::printf("requires sm_90 (TMA); found sm_%d%d on %s\n", prop.major, prop.minor, prop.name);
    return 0;
  }
  const std::int64_t n = argc > 2 ? std::stoll(argv[1]) : 2880, k = argc > 2 ? std::stoll(argv[2]) : 4096;
  const std::size_t b_bytes = std::size_t(n * k * 2);
  const int copies = int(std::max<std::size_t>(4, 3 * std::size_t(prop.l2CacheSize) / b_bytes + 2));
  // `copies` buffers of `bytes` each, filled with a nonzero bf16 pattern.
  auto allocate_copies = [&](std::size_t bytes) {
    std::vector<void*> out(std::size_t(copies), nullptr);
    for (auto& p : out) {
      PROBE_CHECK(cudaMalloc(&p, bytes));
      PROBE_CHECK(cudaMemset(p, 0x3c, bytes));
    }
    return out;
  };
  const std::vector<void*> b = allocate_copies(b_bytes);
  const std::vector<void*> a = allocate_copies(std::size_t(64 * k * 2));   // A: 64 x k bf16 per copy
  unsigned long long* landed = nullptr;
  PROBE_CHECK(cudaMalloc(&landed, sizeof(unsigned long long)));
  std::printf("== B %lld x %lld bf16 (%.1f MB), %d copies rotated (L2 %d MB): %s, %d SMs\n", (long long)n,
              (long long)k, b_bytes / 1e6, copies, prop.l2CacheSize >> 20, prop.name, prop.multiProcessorCount);

  // The contiguous streams view B as rows of 512 bytes; each CTA reads a run of whole rows, 32 rows (16 KB) per
  // stage: the best case HBM can do for the same bytes and CTAs.
  const int rows_512 = int(b_bytes / 512);
  const Pattern patterns[] = {
      {"ours 128x64 split 2 (64 rows x 128 B)", k, 64, 64, 64, 1, 2, 8},
      {"ours 128x64 split 2, 16 stages", k, 64, 64, 64, 1, 2, 16},
      {"ours 128x64 split 2, 24 stages", k, 64, 64, 64, 1, 2, 24},
      {"ours 128x128 split 4 (128 rows x 128 B)", k, 128, 128, 64, 1, 4, 8},
      {"32-row bands, no split (cuBLASLt's 64x32)", k, 32, 32, 64, 1, 1, 8},
      {"32-row bands, no split, 16 stages", k, 32, 32, 64, 1, 1, 16},
      {"32-row bands, no split, 32 stages", k, 32, 32, 64, 1, 1, 32},
      // Partition camping? With rows 8 KB apart, every CTA at the same k offset hits the same low address bits;
      // starting each band at another k-tile spreads them.
      {"32-row bands, no split, k start rotated", k, 32, 32, 64, 1, 1, 8, false, 5},
      {"ours 128x64 split 2, k start rotated", k, 64, 64, 64, 1, 2, 8, false, 5},
      // The GEMM also loads A's rows each stage (L2-resident): all 64 (1x1), or a half or quarter of them, as a
      // 1x2 or 1x4 cluster that multicasts A would.
      {"ours 128x64 split 2 + A 64 rows", k, 64, 64, 64, 1, 2, 8, false, 0, 64},
      {"ours 128x64 split 2 + A 32 rows (1x2 share)", k, 64, 64, 64, 1, 2, 8, false, 0, 32},
      {"ours 128x64 split 2 + A 16 rows (1x4 share)", k, 64, 64, 64, 1, 2, 8, false, 0, 16},
      {"ours 128x128 split 4 + A 64 rows", k, 128, 128, 64, 1, 4, 8, false, 0, 64},
      // A's rows loaded 4 or 8 k-tiles at a time (one 3-D box every 4th or 8th stage): is it A's bytes or its
      // second load per stage that costs the stream (NOTES.md step 54)?
      {"ours 128x64 split 2 + A 64 rows, 4 k-tiles a load", k, 64, 64, 64, 1, 2, 8, false, 0, 64, 4},
      {"ours 128x64 split 2 + A 64 rows, 8 k-tiles a load", k, 64, 64, 64, 1, 2, 8, false, 0, 64, 8},
      {"ours 128x64 no split + A 64 rows", k, 64, 64, 64, 1, 1, 8, false, 0, 64},
      {"ours 128x64 no split + A 64 rows, 4 k-tiles a load", k, 64, 64, 64, 1, 1, 8, false, 0, 64, 4},
      {"64 rows x 256 B, split 2", k, 64, 64, 64, 2, 2, 8},
      {"64 rows x 512 B, split 2", k, 64, 64, 64, 4, 2, 6},
      {"64 rows x 1 KB, split 2", k, 64, 64, 64, 8, 2, 3},
      {"32 rows x 512 B, no split", k, 32, 32, 64, 4, 1, 8},
      {"32 rows x 1 KB, no split", k, 32, 32, 64, 8, 1, 6},
      {"16-row bands, no split (180 CTAs)", k, 16, 16, 64, 1, 1, 16},
      {"contiguous, 90 CTAs x 16 KB stages", 256, (rows_512 / 90 + 31) / 32 * 32, 32, 256, 1, 1, 8, true},
      {"contiguous, 132 CTAs x 16 KB stages", 256, (rows_512 / 132 + 31) / 32 * 32, 32, 256, 1, 1, 8, true},
  };
  cudaEvent_t start, stop;
  PROBE_CHECK(cudaEventCreate(&start));
  PROBE_CHECK(cudaEventCreate(&stop));
  for (const Pattern& pat : patterns) {
    const std::int64_t outer = std::int64_t(b_bytes / 2) / pat.row_elems;
    StreamParams p;
    p.band_rows = pat.band_rows;
    p.box_rows = pat.box_rows;
    p.row_boxes = pat.along_rows ? 1 : pat.band_rows / pat.box_rows;
    p.along_rows = pat.along_rows;
    p.rotate = pat.rotate;
    p.a_rows = pat.a_rows;
    p.a_batch = pat.a_rows > 0 ? pat.a_batch : 1;
    p.box_k = pat.box_k;
    p.k_boxes = pat.k_boxes;
    p.bands = int((outer + pat.band_rows - 1) / pat.band_rows);
    p.splits = pat.splits;
    p.k_tiles = pat.along_rows ? pat.band_rows / pat.box_rows : int(pat.row_elems / (pat.box_k * pat.k_boxes));
    p.tiles_per_split = (p.k_tiles + pat.splits - 1) / pat.splits;
    p.stages = pat.stages;
    p.stage_bytes = std::uint32_t(p.row_boxes * pat.box_rows + (p.a_batch > 1 ? 0 : pat.a_rows)) *
                    std::uint32_t(pat.box_k * pat.k_boxes) * 2;
    p.landed = landed;
    const std::size_t smem = std::size_t(p.stages) * p.stage_bytes +
                             (p.a_batch > 1 ? std::size_t(p.stages) * kATileBytes : 0) + 1024 + 8 * std::size_t(p.stages);
    const bool tiles_fit = pat.along_rows ? p.k_tiles * pat.box_rows == pat.band_rows
                                          : p.row_boxes * pat.box_rows == pat.band_rows &&
                                                p.k_tiles * pat.box_k * pat.k_boxes == pat.row_elems;
    if (smem > std::size_t(prop.sharedMemPerBlockOptin) || !tiles_fit || p.stages % p.a_batch != 0) {
      std::printf("  %-46s skipped: does not fit (%zu bytes of shared memory)\n", pat.what, smem);
      continue;
    }
    PROBE_CHECK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    std::vector<CUtensorMap> maps, a_maps;
    for (std::size_t c = 0; c < b.size(); ++c) {
      maps.push_back(view(b[c], pat.row_elems, outer, pat.box_k, pat.box_rows));
      a_maps.push_back(p.a_batch > 1 ? batched_view(a[c], k, p.a_batch)
                       : pat.a_rows > 0 ? view(a[c], k, 64, pat.box_k, pat.a_rows)
                                        : maps.back());
    }
    const int ctas = p.bands * p.splits;
    // What the barriers must count: every stage of every CTA, boxes past B's last row included (TMA fills them
    // with zeros and counts their bytes); GB/s below is over B's own bytes.
    std::uint64_t expected = 0;
    for (int split = 0; split < p.splits; ++split) {
      const int len = std::max(0, std::min(p.k_tiles, (split + 1) * p.tiles_per_split) - split * p.tiles_per_split);
      // A batch's box is whole even past K (the TMA zero-fills and counts it).
      const int batches = p.a_batch > 1 ? (len + p.a_batch - 1) / p.a_batch : 0;
      expected += std::uint64_t(p.bands) *
                  (std::uint64_t(len) * p.stage_bytes + std::uint64_t(batches) * std::uint64_t(p.a_batch) * kATileBytes);
    }
    // Each sample times one launch on every copy (so that each launch reads cold data) and divides: a single
    // launch of a few microseconds would be mostly the events' own overhead.
    std::vector<float> ms;
    bool counted = true;
    for (int rep = 0; rep < 8; ++rep) {
      PROBE_CHECK(cudaMemset(landed, 0, sizeof(unsigned long long)));
      PROBE_CHECK(cudaEventRecord(start));
      for (int copy = 0; copy < copies; ++copy)
        stream_kernel<<<ctas, 32, smem>>>(maps[std::size_t(copy)], a_maps[std::size_t(copy)], p);
      PROBE_CHECK(cudaGetLastError());
      PROBE_CHECK(cudaEventRecord(stop));
      PROBE_CHECK(cudaEventSynchronize(stop));
      unsigned long long got = 0;
      PROBE_CHECK(cudaMemcpy(&got, landed, sizeof(got), cudaMemcpyDeviceToHost));
      counted = counted && got == std::uint64_t(copies) * expected;
      float t = 0;
      PROBE_CHECK(cudaEventElapsedTime(&t, start, stop));
      if (rep > 0) ms.push_back(t / float(copies));   // the first batch warms the instruction cache and the maps
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("  %-46s %4d CTAs  %6u B/stage x %2d  %.4f ms (%.4f-%.4f)  %7.1f GB/s  %s\n", pat.what, ctas,
                p.stage_bytes, p.stages, med, ms.front(), ms.back(), b_bytes / med / 1e6,
                counted ? "bytes ok" : "FAILED: the barriers counted other bytes than the stages hold");
  }
  return 0;
}
