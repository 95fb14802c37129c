// The cpu.blocked fp32 GEMM. See blocked_gemm.hpp for the structure; the comments here say why each
// piece looks the way it does.
#include "kernels/cpu/blocked_gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels/common/fingerprint.hpp"
#include "kernels/cpu/simd.hpp"

namespace aispflow::kernels {

namespace {

// ---- register tile ------------------------------------------------------------------------------------
using Vec = simd::VecF;
// AVX-512 (32 registers): 12 x 2 accumulators + 2 B vectors + 1 broadcast leaves room to spare, and 24
// independent FMA chains cover the FMA latency on two pipes several times over.
// AVX2 (16 registers): 6 x 2 accumulators + 2 B vectors + 1 broadcast = 15, the classic Haswell tile.
constexpr int kMR = simd::kRegisters >= 32 ? 12 : (Vec::width >= 8 ? 6 : 4);
constexpr int kNV = 2;                   // vectors per micro-tile row
constexpr int kNR = kNV * Vec::width;    // micro-tile columns
constexpr std::size_t kAlign = 64;

// ---- micro-kernel ------------------------------------------------------------------------------------
// c[MR x NR] (+)= ap[kc x MR] (packed: MR values of A per k step) * bp[kc x NR] (packed: NR per k step).
// The accumulators live in registers for the whole kc loop; C is touched once at the end.
inline void micro_kernel(std::int64_t kc, const float* __restrict ap, const float* __restrict bp,
                         float* __restrict c, std::int64_t ldc, bool accumulate) {
  typename Vec::T acc[kMR][kNV];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) acc[i][v] = Vec::zero();

  for (std::int64_t p = 0; p < kc; ++p) {
    typename Vec::T b[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) b[v] = Vec::load(bp + v * Vec::width);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const typename Vec::T a = Vec::broadcast(ap + i);
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) acc[i][v] = Vec::fma(a, b[v], acc[i][v]);
    }
    ap += kMR;
    bp += kNR;
  }

#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) {
      float* cp = c + i * ldc + v * Vec::width;
      Vec::storeu(cp, accumulate ? Vec::add(acc[i][v], Vec::loadu(cp)) : acc[i][v]);
    }
}

// ---- packing -----------------------------------------------------------------------------------------
// Packing turns strided row-major blocks into exactly the order the micro-kernel reads them, so its inner
// loop walks memory sequentially. Edges are padded with zeros: the micro-kernel always runs on a full
// tile and the padded rows/columns are simply never stored (see macro_kernel).

// A[mc x kc] (row-major, lda) -> panels of MR rows: panel r holds, for each p, A[r*MR + 0..MR-1][p].
void pack_a(std::int64_t mc, std::int64_t kc, const float* a, std::int64_t lda, float* out) {
  for (std::int64_t r = 0; r < mc; r += kMR) {
    const int rows = int(std::min<std::int64_t>(kMR, mc - r));
    for (std::int64_t p = 0; p < kc; ++p) {
      int i = 0;
      for (; i < rows; ++i) out[i] = a[(r + i) * lda + p];
      for (; i < kMR; ++i) out[i] = 0.0f;
      out += kMR;
    }
  }
}

// B[kc x nc] (row-major, ldb) -> panels of NR columns: panel s holds, for each p, B[p][s*NR + 0..NR-1].
void pack_b(std::int64_t kc, std::int64_t nc, const float* b, std::int64_t ldb, float* out) {
  for (std::int64_t s = 0; s < nc; s += kNR) {
    const int cols = int(std::min<std::int64_t>(kNR, nc - s));
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* row = b + p * ldb + s;
      int j = 0;
      for (; j < cols; ++j) out[j] = row[j];
      for (; j < kNR; ++j) out[j] = 0.0f;
      out += kNR;
    }
  }
}

// C block [mc x nc] (+)= packed A block * packed B panel. The B micro-panel (kc x NR) is reused across
// all A micro-panels of the block, so it stays in L1 while A streams from L2.
void macro_kernel(std::int64_t mc, std::int64_t nc, std::int64_t kc, const float* ap, const float* bp,
                  float* c, std::int64_t ldc, bool accumulate) {
  alignas(kAlign) float edge[kMR * kNR];
  for (std::int64_t j = 0; j < nc; j += kNR) {
    const float* b_panel = bp + j * kc;
    const std::int64_t cols = std::min<std::int64_t>(kNR, nc - j);
    for (std::int64_t i = 0; i < mc; i += kMR) {
      const float* a_panel = ap + i * kc;
      const std::int64_t rows = std::min<std::int64_t>(kMR, mc - i);
      float* ct = c + i * ldc + j;
      if (rows == kMR && cols == kNR) {
        micro_kernel(kc, a_panel, b_panel, ct, ldc, accumulate);
      } else {
        // Partial tile: compute the full tile into a scratch buffer, store only the valid part.
        micro_kernel(kc, a_panel, b_panel, edge, kNR, false);
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t s = 0; s < cols; ++s)
            ct[r * ldc + s] = accumulate ? ct[r * ldc + s] + edge[r * kNR + s] : edge[r * kNR + s];
      }
    }
  }
}

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

Buffer aligned_floats(std::int64_t count) {
  const std::size_t bytes = (std::size_t(count) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  auto* p = static_cast<float*>(std::aligned_alloc(kAlign, bytes));
  if (!p) throw std::bad_alloc();
  return Buffer(p);
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

// Per-thread packing buffers, sized for the largest blocks.
struct PackBuffers {
  Buffer a, b;
  std::int64_t a_size = 0, b_size = 0;
  void reserve(std::int64_t a_floats, std::int64_t b_floats) {
    if (a_size < a_floats) a = aligned_floats(a_size = a_floats);
    if (b_size < b_floats) b = aligned_floats(b_size = b_floats);
  }
};

// One output tile [m0, m1) x [n0, n1): the full blocked loop nest over its own packed copies.
void run_tile(std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1, std::int64_t k,
              const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
              const BlockedGemmConfig& cfg, PackBuffers& buf) {
  const std::int64_t mc_max = round_up(std::min<std::int64_t>(cfg.mc, m1 - m0), kMR);
  const std::int64_t nc_max = round_up(std::min<std::int64_t>(cfg.nc, n1 - n0), kNR);
  const std::int64_t kc_max = std::min<std::int64_t>(cfg.kc, k);
  buf.reserve(mc_max * kc_max, nc_max * kc_max);
  for (std::int64_t jc = n0; jc < n1; jc += cfg.nc) {
    const std::int64_t nc = std::min<std::int64_t>(cfg.nc, n1 - jc);
    for (std::int64_t pc = 0; pc < k; pc += cfg.kc) {
      const std::int64_t kc = std::min<std::int64_t>(cfg.kc, k - pc);
      pack_b(kc, nc, b + pc * ldb + jc, ldb, buf.b.get());
      for (std::int64_t ic = m0; ic < m1; ic += cfg.mc) {
        const std::int64_t mc = std::min<std::int64_t>(cfg.mc, m1 - ic);
        pack_a(mc, kc, a + ic * lda + pc, lda, buf.a.get());
        macro_kernel(mc, nc, kc, buf.a.get(), buf.b.get(), c + ic * ldc + jc, ldc, /*accumulate=*/pc > 0);
      }
    }
  }
}

// ---- skinny A: at most MR rows -------------------------------------------------------------------------
// Decode GEMMs (one to a few tokens) are matrix-vector products in disguise: every element of B is used
// by m <= MR rows only, so packing B (a read and a write of all of it) costs more than the arithmetic,
// and a packed MR-row micro-tile would compute mostly padding. Here B streams once, row by row: each
// thread owns a column tile of C (m rows x up to 512 floats) and, for every row p of B, reads that row's
// segment sequentially and adds a[i][p] times it into each of the m rows. Walking B down its columns
// instead (register accumulators per narrow strip) jumps a whole row of B per step, one TLB miss each:
// measured 1.6x slower than this order on the decode shapes. The tile is summed in a contiguous buffer,
// not in C: rows of C a multiple of 4 KiB apart land in the same L1 sets and evict each other.
void skinny_sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
                  std::int64_t ldb, float* c, std::int64_t ldc) {
  const std::int64_t threads = tbb::this_task_arena::max_concurrency();
  // 512 floats (2 KiB) per row segment; narrower when that would leave threads without a few tiles.
  const std::int64_t tile =
      std::clamp<std::int64_t>(round_up(n / (4 * threads), Vec::width), 4 * Vec::width, 512);
  const std::int64_t tiles = (n + tile - 1) / tile;
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tiles, 1), [&](const auto& r) {
    alignas(kAlign) float sums[kMR * 512];
    for (std::int64_t t = r.begin(); t != r.end(); ++t) {
      const std::int64_t n0 = t * tile, w = std::min(tile, n - n0);
      const std::int64_t vectors = w / Vec::width * Vec::width;
      std::fill(sums, sums + m * tile, 0.0f);
      for (std::int64_t p = 0; p < k; ++p) {
        const float* brow = b + p * ldb + n0;
        for (std::int64_t i = 0; i < m; ++i) {
          const float scale = a[i * lda + p];
          const typename Vec::T av = Vec::set1(scale);
          float* row = sums + i * tile;
          for (std::int64_t j = 0; j < vectors; j += Vec::width)
            Vec::storeu(row + j, Vec::fma(av, Vec::loadu(brow + j), Vec::loadu(row + j)));
          for (std::int64_t j = vectors; j < w; ++j) row[j] += scale * brow[j];
        }
      }
      for (std::int64_t i = 0; i < m; ++i) std::copy(sums + i * tile, sums + i * tile + w, c + i * ldc + n0);
    }
  });
}

}  // namespace

int blocked_gemm_mr() { return kMR; }
int blocked_gemm_nr() { return kNR; }
std::string blocked_gemm_isa() { return simd::kIsa; }

BlockedGemmConfig resolve_blocked_config(BlockedGemmConfig c) {
  const std::int64_t l1 = cpu_cache_bytes(1, 32 << 10);
  const std::int64_t l2 = cpu_cache_bytes(2, 512 << 10);
  // kc: a packed B micro-panel (kc x NR floats) the size of L1. It is read once per A micro-panel, in
  // order, so the hardware prefetcher keeps up even though it does not all stay resident; larger kc means
  // fewer passes over C. Measured on Zen 4 (2048^3): kc = L1/2 ran ~15% slower than kc = L1.
  if (c.kc <= 0) c.kc = int(std::clamp<std::int64_t>(l1 / (kNR * 4) / 16 * 16, 64, 512));
  // mc: the packed A block (mc x kc) takes about a quarter of L2, leaving room for the B micro-panel
  // passing through and for C's lines; a multiple of MR so no micro-panel is partial.
  if (c.mc <= 0) c.mc = int(std::max<std::int64_t>(kMR, l2 / 4 / (std::int64_t(c.kc) * 4) / kMR * kMR));
  // nc: the packed B panel (kc x nc, 4 MiB) is reused by every A block of a tile from L2/L3.
  if (c.nc <= 0) c.nc = int(std::max<std::int64_t>(kNR, (std::int64_t(4) << 20) / (std::int64_t(c.kc) * 4) / kNR * kNR));
  c.mc = int(round_up(c.mc, kMR));
  c.nc = int(round_up(c.nc, kNR));
  c.tiles_per_thread = std::max(1, c.tiles_per_thread);
  return c;
}

std::string blocked_gemm_identity(const BlockedGemmConfig& c, int threads, std::int64_t m) {
  if (m > 0 && m <= kMR)
    return "cpu.blocked skinny rows=" + std::to_string(m) + " (B streamed by rows, unpacked) isa=" + simd::kIsa + " threads=" + std::to_string(threads) + " tbb";
  return "cpu.blocked mc=" + std::to_string(c.mc) + " nc=" + std::to_string(c.nc) + " kc=" +
         std::to_string(c.kc) + " micro=" + std::to_string(kMR) + "x" + std::to_string(kNR) +
         " isa=" + simd::kIsa + " threads=" + std::to_string(threads) + " tbb";
}

void blocked_sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                   const float* b, std::int64_t ldb, float* c, std::int64_t ldc, const BlockedGemmConfig& requested) {
  if (m <= 0 || n <= 0) return;
  const BlockedGemmConfig cfg = resolve_blocked_config(requested);
  if (k <= 0) {   // an empty sum: C = 0
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  if (m <= kMR) {
    skinny_sgemm(m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  // Cut the output into tiles, halving the longer side until every thread has a few tiles. Tile edges
  // stay multiples of the micro-tile, so only the matrix edges produce partial micro-tiles.
  const int threads = tbb::this_task_arena::max_concurrency();
  const std::int64_t wanted = std::int64_t(threads) * cfg.tiles_per_thread;
  std::int64_t tile_m = round_up(m, kMR), tile_n = round_up(n, kNR);
  auto count = [&] { return ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n); };
  while (count() < wanted) {
    const bool can_split_m = tile_m > kMR, can_split_n = tile_n > kNR;
    if (!can_split_m && !can_split_n) break;
    if (can_split_m && (tile_m >= tile_n || !can_split_n)) tile_m = round_up(tile_m / 2, kMR);
    else tile_n = round_up(tile_n / 2, kNR);
  }
  const std::int64_t tiles_m = (m + tile_m - 1) / tile_m, tiles_n = (n + tile_n - 1) / tile_n;

  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tiles_m * tiles_n, 1), [&](const auto& r) {
    // Kept per thread across calls: TBB's worker threads live on, and re-allocating a few MiB each call
    // would page-fault them in again every time, a visible cost on small GEMMs.
    thread_local PackBuffers buf;
    for (std::int64_t t = r.begin(); t != r.end(); ++t) {
      const std::int64_t tm = t / tiles_n, tn = t % tiles_n;
      const std::int64_t m0 = tm * tile_m, n0 = tn * tile_n;
      run_tile(m0, std::min(m, m0 + tile_m), n0, std::min(n, n0 + tile_n), k, a, lda, b, ldb, c, ldc, cfg, buf);
    }
  });
}

}  // namespace aispflow::kernels
