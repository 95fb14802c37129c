#pragma once
// The unaligned path of ours.wgmma / ours.cluster. TMA addresses rows in 16-byte units, so a row stride that is
// not a multiple of 16 bytes (K * element bytes for A and K-major B, N * 2 for C and an MN-major B) cannot be
// described to it. Such a case runs on padded copies instead:
//   A [M x K]            -> [M x Kp]  (Kp: K rounded up to 16 bytes of elements), columns K..Kp zero
//   B [N x K] (K-major)  -> [N x Kp]  columns K..Kp zero
//   B [K x N] (MN-major) -> [K x Np]  (Np: N rounded up to 8), columns N..Np zero
//   bias [N]             -> [Np]      entries N..Np zero
//   C [M x N]            <- [M x Np]  the kernel writes the padded C; its M x N part is copied back
// A zero column of K adds nothing to any product, so the padded GEMM is exact; the extra columns of N are
// computed and dropped. Only the operands whose rows are unaligned are copied. Every copy runs inside the
// launch (one kernel before the GEMM for A, B and the bias, one after it for C), so the time a record reports
// includes them. Batch is included (every matrix is [batch][rows][cols]).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/common/gemm.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace aispflow::kernels::cuda {
class GemmProblem;
}

namespace aispflow::kernels::cuda::ours {

// What a shape needs: the padded K and N (equal to the shape's when their rows are aligned already), and
// which operands go through a padded buffer.
struct RowPadding {
  std::int64_t k = 0, n = 0;
  bool a = false, b = false, c = false;
  bool any() const { return a || b || c; }
  // For the record's `kernel`: "; padded to K=1008, N=4096 (pad copies timed: A, B in, C out)"; "" when none.
  std::string describe() const;
};
// ab_bytes: bytes per A / B element (2 bf16, 1 fp8); b_k_major: B stored N x K (layout nt, and fp8 always).
RowPadding row_padding(const GemmShape& shape, int ab_bytes, bool b_k_major);

// The padded buffers of one bound launch and the copies into and out of them. One set serves every operand copy
// of the problem: the launch for copy i pads copy i's own A and B, and copies back into copy i's C (launches
// share one stream, so they never overlap). Allocated, and filled with NaN, at construction; the copies are
// capturable into a CUDA graph (kernel launches only).
class PaddedOperands {
 public:
  // with_bias: the launch applies a bias epilogue (the padded GEMM then reads the padded bias).
  PaddedOperands(const GemmProblem& problem, const RowPadding& pad, int ab_bytes, bool with_bias);
  PaddedOperands(const PaddedOperands&) = delete;
  PaddedOperands& operator=(const PaddedOperands&) = delete;

  const RowPadding& padding() const { return pad_; }
  // What the padded GEMM reads and writes for operand copy `copy`: the padded buffer, or the problem's own.
  const void* a(int copy) const;
  const void* b(int copy) const;
  void* c(int copy) const;
  const void* bias() const;

  // Before the GEMM: A, B (those padded) and the bias of `copy` into the padded buffers, pad zeroed.
  void pad_inputs(cudaStream_t stream, int copy) const;
  // After the GEMM: the M x N part of the padded C into the problem's C of `copy` (nothing when C is not padded).
  void copy_back(cudaStream_t stream, int copy) const;

 private:
  const GemmProblem& problem_;
  RowPadding pad_;
  int ab_bytes_;
  bool with_bias_;
  int sabotage_;   // PadSabotage::Mode as it was at construction
  DeviceBuffer a_, b_, c_, bias_;
};

// Test hook (tests only): while one lives, every PaddedOperands constructed breaks its copies on purpose, so a
// test can see verification fail: keep_pad leaves the pad columns holding their NaN fill (what a pad kernel that
// forgot to zero them would leave), half_c copies back only the first half of C's rows.
class PadSabotage {
 public:
  enum Mode { none = 0, keep_pad = 1, half_c = 2 };
  explicit PadSabotage(Mode mode);
  ~PadSabotage();
  PadSabotage(const PadSabotage&) = delete;
  PadSabotage& operator=(const PadSabotage&) = delete;
  static Mode active();
};

}  // namespace aispflow::kernels::cuda::ours
