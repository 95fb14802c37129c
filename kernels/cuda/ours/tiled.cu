// ours.tiled: the classical "optimized" GEMM of the pre-Hopper era, the ladder's second rung.
//
// A 256-thread block computes a 128 x 128 output tile; each of its 8 warps a 64 x 32 piece, as 4 x 4
// mma.sync.m16n8k16 bf16 tensor-core operations per 16-wide k-step with fp32 accumulators in registers.
// Operands reach the tensor cores through shared memory: cp.async copies 16-byte chunks of the next k-tiles
// (32 wide) from global memory into a ring of 4 stages while the current one is computed, and ldmatrix loads
// the fragments (ldmatrix.trans for the nn layout's B, whose rows run along N). Shared-memory rows are XOR-
// swizzled in 16-byte chunks so that the 8 rows one ldmatrix reads sit in 8 different bank groups.
// Tails: cp.async with a source size of 0 zero-fills chunks past M, N or K; rows whose stride is not a multiple of
// 16 bytes (K or, for nn, N not a multiple of 8) take a scalar load path into the same layout; stores are
// predicated per element.
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/epilogue.cuh"
#include "kernels/cuda/ours/simple_kernels.hpp"

namespace aispflow::kernels::cuda::ours {

namespace {

constexpr int kTileM = 128, kTileN = 128, kTileK = 32, kStages = 4, kThreads = 256;
constexpr int kABytes = kTileM * kTileK * 2;   // 8 KB: 128 rows x 4 chunks of 16 bytes
constexpr int kBBytes = kTileN * kTileK * 2;   // 8 KB: nt 128 n-rows x 4 chunks; nn 32 k-rows x 16 chunks
constexpr int kSmemBytes = kStages * (kABytes + kBBytes);

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of 4-chunk rows (A; B in layout nt).
__device__ __forceinline__ int offset_k_rows(int row, int chunk) { return row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4); }
// ... in a tile of 16-chunk rows (B in layout nn: 32 k-rows of 128 n).
__device__ __forceinline__ int offset_n_rows(int row, int chunk) { return row * 256 + ((chunk ^ (row & 7)) << 4); }

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared, asynchronously; past the edge (valid = false) the destination is zero-filled.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Eight consecutive elements of a row, from `src` (element index `first` of a row of `length`), into 16 bytes of
// shared memory: the path for rows whose stride does not allow 16-byte copies.
__device__ __forceinline__ void load_8_scalar(void* dst, const __nv_bfloat16* row, std::int64_t first,
                                              std::int64_t length, bool row_valid) {
  __align__(16) __nv_bfloat16 v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    v[e] = (row_valid && first + e < length) ? row[first + e] : __float2bfloat16_rn(0.0f);
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <bool BTransposed, bool Aligned>
__global__ void __launch_bounds__(kThreads) tiled_gemm_kernel(const __nv_bfloat16* __restrict__ a,
                                                              const __nv_bfloat16* __restrict__ b,
                                                              __nv_bfloat16* __restrict__ c,
                                                              const __nv_bfloat16* __restrict__ bias, int epilogue,
                                                              int m, int n, int k) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  std::uint8_t* smem_a = smem;
  std::uint8_t* smem_b = smem + kStages * kABytes;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / 4, warp_n = warp % 4;   // 2 x 4 warps, each 64 x 32
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  a += std::int64_t(blockIdx.z) * m * k;
  b += std::int64_t(blockIdx.z) * k * n;
  c += std::int64_t(blockIdx.z) * m * n;
  const int k_tiles = (k + kTileK - 1) / kTileK;

  // Each thread copies 2 chunks of A and 2 of B per stage (512 chunks of 16 bytes each).
  auto load_stage = [&](int stage, int kt) {
    std::uint8_t* sa = smem_a + stage * kABytes;
    std::uint8_t* sb = smem_b + stage * kBBytes;
    const int k0 = kt * kTileK;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int idx = tid + i * kThreads;
      {  // A: 128 rows x 4 chunks
        const int row = idx / 4, chunk = idx % 4;
        const int gr = m0 + row, gk = k0 + chunk * 8;
        void* dst = sa + offset_k_rows(row, chunk);
        if constexpr (Aligned)
          cp_async_16(dst, a + std::int64_t(min(gr, m - 1)) * k + min(gk, k - 8), gr < m && gk < k);
        else
          load_8_scalar(dst, a + std::int64_t(min(gr, m - 1)) * k, gk, k, gr < m);
      }
      if constexpr (BTransposed) {  // B stored N x K: 128 n-rows x 4 chunks
        const int row = idx / 4, chunk = idx % 4;
        const int gn = n0 + row, gk = k0 + chunk * 8;
        void* dst = sb + offset_k_rows(row, chunk);
        if constexpr (Aligned)
          cp_async_16(dst, b + std::int64_t(min(gn, n - 1)) * k + min(gk, k - 8), gn < n && gk < k);
        else
          load_8_scalar(dst, b + std::int64_t(min(gn, n - 1)) * k, gk, k, gn < n);
      } else {  // B stored K x N: 32 k-rows x 16 chunks
        const int row = idx / 16, chunk = idx % 16;
        const int gk = k0 + row, gn = n0 + chunk * 8;
        void* dst = sb + offset_n_rows(row, chunk);
        if constexpr (Aligned)
          cp_async_16(dst, b + std::int64_t(min(gk, k - 1)) * n + min(gn, n - 8), gk < k && gn < n);
        else
          load_8_scalar(dst, b + std::int64_t(min(gk, k - 1)) * n, gn, n, gk < k);
      }
    }
  };

  float acc[4][4][4] = {};
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();   // k-tile kt has landed (for this thread's copies) ...
    __syncthreads();                // ... for everyone's, and the stage refilled below is no longer read
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage(next % kStages, next);
    cp_async_commit();

    const std::uint8_t* sa = smem_a + (kt % kStages) * kABytes;
    const std::uint8_t* sb = smem_b + (kt % kStages) * kBBytes;
#pragma unroll
    for (int ks = 0; ks < kTileK / 16; ++ks) {
      std::uint32_t af[4][4], bf[2][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = warp_m * 64 + i * 16 + lane % 16, chunk = ks * 2 + lane / 16;
        ldmatrix_x4(af[i], sa + offset_k_rows(row, chunk));
      }
#pragma unroll
      for (int p = 0; p < 2; ++p) {   // n-tiles 2p and 2p + 1 of the warp's 32 columns
        if constexpr (BTransposed) {
          const int row = warp_n * 32 + p * 16 + lane % 8 + (lane / 16) * 8, chunk = ks * 2 + (lane / 8) % 2;
          ldmatrix_x4(bf[p], sb + offset_k_rows(row, chunk));
        } else {
          const int row = ks * 16 + lane % 8 + ((lane / 8) % 2) * 8, chunk = (warp_n * 32 + p * 16) / 8 + lane / 16;
          ldmatrix_x4_trans(bf[p], sb + offset_n_rows(row, chunk));
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_bf16(acc[i][j], af[i], bf[j / 2][(j % 2) * 2], bf[j / 2][(j % 2) * 2 + 1]);
    }
  }
  cp_async_wait<0>();

  // Accumulator (i, j): c0, c1 at row g, columns 2t and 2t + 1; c2, c3 at row g + 8 (g = lane / 4, t = lane % 4).
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + warp_m * 64 + i * 16 + g + 8 * h;
        const int col = n0 + warp_n * 32 + j * 8 + 2 * t;
        if (row >= m) continue;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (col + e >= n) continue;
          float v = acc[i][j][2 * h + e];
          if (epilogue != 0) v += __bfloat162float(bias[col + e]);
          if (epilogue == 2) v = gelu_tanh_fast(v);
          c[std::int64_t(row) * n + col + e] = __float2bfloat16_rn(v);
        }
      }
}

class TiledKernel final : public OurKernel {
 public:
  std::string identity(const GemmCase& c) const override {
    return "ours.tiled " + c.dtype + " " + c.layout +
           " tile 128x128x32 stages 4, 8 warps of 64x32, mma.sync m16n8k16 bf16 fed by ldmatrix" +
           std::string(c.layout == "nn" ? " (.trans for B)" : "") + ", cp.async pipeline, XOR-swizzled smem" +
           (aligned(c) ? "" : "; scalar loads (rows not 16-byte aligned)");
  }
  nlohmann::json config() const override {
    return {{"name", "128x128x32_s4"}, {"tile", {kTileM, kTileN, kTileK}}, {"stages", kStages}, {"warps", 8}};
  }
  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (c.dtype != "bf16") return "ours.tiled runs bf16 (mma.sync m16n8k16); not " + c.dtype;
    const auto& sys = system_info();
    if (sys.devices.empty()) return std::string("no CUDA device");
    if (sys.devices.front().compute_capability() < 80)
      return "bf16 mma.sync needs sm_80+; found sm_" + std::to_string(sys.devices.front().compute_capability());
    const auto& s = c.shape;
    if (s.m > (1LL << 31) - 1 || s.n > (1LL << 31) - 1 || s.k > (1LL << 31) - 1 || s.batch > 65535)
      return std::string("dimension above 2^31 or batch above 65535");
    if ((s.m + kTileM - 1) / kTileM > 65535) return std::string("M above 65535 tiles");
    return std::nullopt;
  }
  BoundLaunch bind(const GemmProblem& problem, Epilogue epilogue_asked) const override {
    const auto s = problem.shape();
    const bool bt = problem.b_transposed();
    GemmCase c{s, "bf16", bt ? "nt" : "nn"};
    const bool al = aligned(c);
    auto kernel = bt ? (al ? tiled_gemm_kernel<true, true> : tiled_gemm_kernel<true, false>)
                     : (al ? tiled_gemm_kernel<false, true> : tiled_gemm_kernel<false, false>);
    AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    const auto* bias = static_cast<const __nv_bfloat16*>(problem.bias());
    const int epilogue = int(epilogue_asked);
    const GemmProblem* p = &problem;
    return [=](cudaStream_t stream, int copy) {
      const dim3 grid(unsigned((s.n + kTileN - 1) / kTileN), unsigned((s.m + kTileM - 1) / kTileM), unsigned(s.batch));
      kernel<<<grid, kThreads, kSmemBytes, stream>>>(static_cast<const __nv_bfloat16*>(p->a(copy)),
                                                     static_cast<const __nv_bfloat16*>(p->b(copy)),
                                                     static_cast<__nv_bfloat16*>(p->c(copy)), bias, epilogue, int(s.m),
                                                     int(s.n), int(s.k));
      AISPFLOW_CUDA_CHECK_LAUNCH();
    };
  }

 private:
  // 16-byte copies need every row of A and B to start on a 16-byte boundary (and K, N >= 8 so that the clamped
  // source addresses stay inside the rows).
  static bool aligned(const GemmCase& c) {
    const bool k_ok = c.shape.k % 8 == 0;
    return c.layout == "nt" ? k_ok : (k_ok && c.shape.n % 8 == 0);
  }
};

}  // namespace

std::vector<std::unique_ptr<OurKernel>> tiled_kernels() {
  std::vector<std::unique_ptr<OurKernel>> out;
  out.push_back(std::make_unique<TiledKernel>());
  return out;
}

}  // namespace aispflow::kernels::cuda::ours
