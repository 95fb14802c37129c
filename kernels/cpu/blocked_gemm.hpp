#pragma once
// aispflow's own fp32 GEMM for the CPU: packed, cache-blocked, register-blocked and TBB-parallel.
//
//   C[m x n] = A[m x k] * B[k x n], row-major with leading dimensions lda, ldb, ldc.
//
// The classic three-level blocking: a KC x NC panel of B is packed to sit in L2/L3, an MC x KC block of
// A is packed next to it, and a register-resident MR x NR micro-kernel runs over both packed buffers,
// each step doing MR*NR fused multiply-adds for MR + NR/width loads. The output is cut into rectangular
// tiles that TBB runs in parallel; each tile packs its own panels, so threads never wait on each other.
// A with at most MR rows (decode GEMMs) takes a skinny path instead: B streamed once, unpacked.
#include <cstdint>
#include <string>

namespace aispflow::kernels {

struct BlockedGemmConfig {
  int mc = 0, nc = 0, kc = 0;   // cache blocks (rows of A, columns of B, depth); 0 = derive from caches
  int tiles_per_thread = 4;     // parallel granularity: at least this many output tiles per thread, so a thread
                                // delayed by another process leaves tiles for the others to take
};

// Register tile of the micro-kernel built into this binary, and its vector ISA ("avx512f", "avx2+fma", ...).
int blocked_gemm_mr();
int blocked_gemm_nr();
std::string blocked_gemm_isa();

// Block sizes derived from this machine's L1/L2 sizes (fields left 0 in `requested` are filled in).
BlockedGemmConfig resolve_blocked_config(BlockedGemmConfig requested = {});
// "cpu.blocked mc=... nc=... kc=... micro=12x32 isa=avx512f threads=2": what identifies a result. Given the
// rows `m` of a problem with m <= MR, the skinny path's identity ("cpu.blocked skinny rows=1 (B streamed by rows, unpacked) ...").
std::string blocked_gemm_identity(const BlockedGemmConfig& config, int threads, std::int64_t m = 0);

void blocked_sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                   const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                   const BlockedGemmConfig& config = resolve_blocked_config());

}  // namespace aispflow::kernels
