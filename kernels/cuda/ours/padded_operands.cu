// The copies of the unaligned path (padded_operands.hpp): rows into 16-byte aligned buffers before the GEMM,
// and the valid part of C out of its padded buffer after it.
#include "kernels/cuda/ours/padded_operands.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"

namespace aispflow::kernels::cuda::ours {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 132 * 8;   // enough to fill an H100; the loops are grid-stride past that

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One matrix of `rows` rows (batch folded in: the batches of a row-major [batch][rows][cols] tensor are its
// consecutive rows) of `cols` elements, copied into rows of `dst_cols` (a multiple of 16 bytes).
struct PadJob {
  const void* src = nullptr;
  void* dst = nullptr;
  std::int64_t rows = 0, cols = 0, dst_cols = 0;
  int elem_bytes = 2;
};

struct PadJobs {
  PadJob job[3];   // A, B, bias: blockIdx.y picks one
  bool zero_pad = true;
};

// Each thread fills 16 aligned bytes of a destination row: it gathers their elements from the (unaligned)
// source row, zeros those past `cols`, and stores them at once. The source reads of a warp fall on the same few
// cache lines, so they cost L1 hits, not extra DRAM traffic.
template <class T>
__device__ void pad_rows(const PadJob& job, bool zero_pad) {
  constexpr int kVec = 16 / sizeof(T);
  const auto* src = static_cast<const T*>(job.src);
  auto* dst = static_cast<T*>(job.dst);
  const std::int64_t chunks_per_row = job.dst_cols / kVec;
  const std::int64_t total = job.rows * chunks_per_row;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / chunks_per_row;
    const std::int64_t col0 = (i - row * chunks_per_row) * kVec;
    const T* in = src + row * job.cols;
    T* out = dst + row * job.dst_cols + col0;
    if (col0 + kVec <= job.cols || zero_pad) {
      __align__(16) T v[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[e] = col0 + e < job.cols ? in[col0 + e] : T(0);
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(v);
    } else {   // the test hook's keep_pad: the valid elements only, the pad keeps what it held
      for (int e = 0; col0 + e < job.cols; ++e) out[e] = in[col0 + e];
    }
  }
}

__global__ void pad_kernel(const PadJobs jobs) {
  const PadJob& job = jobs.job[blockIdx.y];
  if (job.rows == 0) return;
  if (job.elem_bytes == 1)
    pad_rows<std::uint8_t>(job, jobs.zero_pad);
  else
    pad_rows<std::uint16_t>(job, jobs.zero_pad);
}

// C (bf16) back out of its padded rows. The destination rows are not 16-byte aligned, so no vector stores: instead
// consecutive threads take consecutive elements of a row, and every warp load and store covers 64 contiguous bytes.
// (The first version stored 8 consecutive elements per thread: a warp's store then touched 16 sectors for 64
// useful bytes, and the copy ran at ~0.64 TB/s on an H100, bench/results/h100/unaligned.) Each thread holds
// kCopyUnroll loads in flight before it stores.
constexpr int kCopyUnroll = 8;
__global__ void copy_back_kernel(const std::uint16_t* __restrict__ padded, std::uint16_t* __restrict__ c,
                                 std::int64_t rows, std::int64_t cols, std::int64_t padded_cols) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::uint16_t* in = padded + row * padded_cols;
    std::uint16_t* out = c + row * cols;
    for (std::int64_t col0 = threadIdx.x; col0 < cols; col0 += std::int64_t(kCopyUnroll) * blockDim.x) {
      std::uint16_t v[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const std::int64_t col = col0 + std::int64_t(u) * blockDim.x;
        if (col < cols) v[u] = in[col];
      }
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const std::int64_t col = col0 + std::int64_t(u) * blockDim.x;
        if (col < cols) out[col] = v[u];
      }
    }
  }
}

unsigned blocks_for(std::int64_t chunks) {
  return unsigned(std::clamp<std::int64_t>(ceil_div(chunks, kThreads), 1, kMaxBlocks));
}

std::atomic<int> g_sabotage{PadSabotage::none};

}  // namespace

RowPadding row_padding(const GemmShape& s, int ab_bytes, bool b_k_major) {
  RowPadding p;
  p.k = round_up(s.k, 16 / ab_bytes);
  p.n = round_up(s.n, 8);   // C is bf16 (and an MN-major B is bf16: fp8 only runs K-major B)
  p.a = p.k != s.k;
  p.b = b_k_major ? p.k != s.k : p.n != s.n;
  p.c = p.n != s.n;
  return p;
}

std::string RowPadding::describe() const {
  if (!any()) return "";
  std::string copied;
  if (a) copied += "A";
  if (b) copied += copied.empty() ? "B" : ", B";
  if (a || b) copied += " in";
  if (c) copied += copied.empty() ? "C out" : ", C out";
  return "; padded to K=" + std::to_string(k) + ", N=" + std::to_string(n) + " (pad copies timed: " + copied + ")";
}

PaddedOperands::PaddedOperands(const GemmProblem& problem, const RowPadding& pad, int ab_bytes, bool with_bias)
    : problem_(problem), pad_(pad), ab_bytes_(ab_bytes), with_bias_(with_bias && pad.c), sabotage_(PadSabotage::active()) {
  const auto& s = problem.shape();
  const bool b_k_major = problem.b_transposed();
  if (pad_.a) a_ = DeviceBuffer(std::size_t(s.batch * s.m * pad_.k) * ab_bytes);
  if (pad_.b) b_ = DeviceBuffer(std::size_t(s.batch * (b_k_major ? s.n * pad_.k : s.k * pad_.n)) * ab_bytes);
  if (pad_.c) c_ = DeviceBuffer(std::size_t(s.batch * s.m * pad_.n) * 2);
  if (with_bias_) bias_ = DeviceBuffer(std::size_t(pad_.n) * 2);
  // NaN in bf16 and e4m3 alike: any element the copies should have written and did not shows in the check.
  for (const DeviceBuffer* buffer : {&a_, &b_, &c_, &bias_})
    if (buffer->bytes() > 0) AISPFLOW_CUDA_CHECK(cudaMemset(buffer->get(), 0xFF, buffer->bytes()));
  // The fill runs on the legacy stream; the launches use the problem's (possibly non-blocking) stream.
  if (pad_.any()) AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
}

const void* PaddedOperands::a(int copy) const { return pad_.a ? a_.get() : problem_.a(copy); }
const void* PaddedOperands::b(int copy) const { return pad_.b ? b_.get() : problem_.b(copy); }
void* PaddedOperands::c(int copy) const { return pad_.c ? c_.get() : problem_.c(copy); }
const void* PaddedOperands::bias() const { return with_bias_ ? bias_.get() : problem_.bias(); }

void PaddedOperands::pad_inputs(cudaStream_t stream, int copy) const {
  const auto& s = problem_.shape();
  PadJobs jobs;
  jobs.zero_pad = sabotage_ != PadSabotage::keep_pad;
  std::int64_t chunks = 0;
  if (pad_.a) {
    jobs.job[0] = {problem_.a(copy), a_.get(), s.batch * s.m, s.k, pad_.k, ab_bytes_};
    chunks = std::max(chunks, jobs.job[0].rows * pad_.k * ab_bytes_ / 16);
  }
  if (pad_.b) {
    jobs.job[1] = problem_.b_transposed() ? PadJob{problem_.b(copy), b_.get(), s.batch * s.n, s.k, pad_.k, ab_bytes_}
                                          : PadJob{problem_.b(copy), b_.get(), s.batch * s.k, s.n, pad_.n, ab_bytes_};
    chunks = std::max(chunks, jobs.job[1].rows * jobs.job[1].dst_cols * ab_bytes_ / 16);
  }
  if (with_bias_) jobs.job[2] = {problem_.bias(), bias_.get(), 1, s.n, pad_.n, 2};
  if (!pad_.a && !pad_.b && !with_bias_) return;
  pad_kernel<<<dim3(blocks_for(std::max<std::int64_t>(chunks, 1)), 3), kThreads, 0, stream>>>(jobs);
  AISPFLOW_CUDA_CHECK_LAUNCH();
}

void PaddedOperands::copy_back(cudaStream_t stream, int copy) const {
  if (!pad_.c) return;
  const auto& s = problem_.shape();
  std::int64_t rows = s.batch * s.m;
  if (sabotage_ == PadSabotage::half_c) rows /= 2;
  // One block per row (grid-stride over rows); at least one block, so the hook's rows = 0 still launches.
  const unsigned blocks = unsigned(std::clamp<std::int64_t>(rows, 1, kMaxBlocks));
  copy_back_kernel<<<blocks, kThreads, 0, stream>>>(c_.as<std::uint16_t>(),
                                                    static_cast<std::uint16_t*>(problem_.c(copy)), rows, s.n, pad_.n);
  AISPFLOW_CUDA_CHECK_LAUNCH();
}

PadSabotage::PadSabotage(Mode mode) { g_sabotage.store(mode); }
PadSabotage::~PadSabotage() { g_sabotage.store(none); }
PadSabotage::Mode PadSabotage::active() { return Mode(g_sabotage.load()); }

}  // namespace aispflow::kernels::cuda::ours
