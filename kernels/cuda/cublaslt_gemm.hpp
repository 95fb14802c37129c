#pragma once
// One verified GEMM problem on the GPU and its cuBLASLt plan.
//
// Layouts. aispflow's records say C[M x N] = A[M x K] * B[K x N], all row-major. cuBLASLt is column-major,
// and a row-major matrix is the column-major view of its transpose, so we ask cuBLASLt for
// C^T (N x M) = B^T (N x K) * A^T (K x M): cuBLASLt's "A" operand is our B and its "B" operand is our A,
// with m' = N, n' = M, k' = K, and no data is moved.
// fp8 (e4m3) kernels only exist in the "TN" form (cuBLASLt's A transposed, its B not). We therefore store
// our B transposed, as row-major N x K ("B^T"), which cuBLASLt reads as its A with op T. The numbers in
// the record are unaffected: the same logical product, the same FLOPs and bytes; the reference kernel is
// told about the storage (RefGemm::b_transposed).
// Per-tensor fp8 scales are device scalars (A_SCALE_POINTER / B_SCALE_POINTER); output is bf16.
#include <cublasLt.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/gemm.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/gemm_data.hpp"

namespace aispflow::kernels::cuda {

// How one aispflow dtype maps onto cuBLASLt.
struct LtDtype {
  std::string name;              // "bf16"
  Elem ab;                       // operand storage
  Elem c;                        // output storage
  cublasComputeType_t compute;
  bool b_transposed;             // store B as N x K (fp8's TN requirement)
  int min_compute_capability;    // fp8 tensor cores: sm_89+
};
// nullopt for a dtype the cuBLASLt providers do not offer.
std::optional<LtDtype> lt_dtype(const std::string& dtype);
std::vector<std::string> lt_dtype_names();

// How B is stored and what the epilogue adds, beyond the dtype (kernels::GemmCase's layout and epilogue).
struct GemmVariant {
  bool b_transposed = false;           // layout nt: B stored row-major N x K
  Epilogue epilogue = Epilogue::none;  // bias / bias_gelu: a random bias[N] in the output type
  // Bytes of guard before and after every copy of C (rounded up to 256), filled with a known pattern: code aispflow
  // did not write (plugins) is checked for writes outside C with GemmProblem::check_guards. 0: no guards.
  std::size_t c_guard_bytes = 0;
  static GemmVariant of(const GemmCase& c) { return {c.layout == "nt", epilogue_from_name(c.epilogue)}; }
};

// Random operands, the output buffer and the fp32 reference of one (shape, dtype, variant), on the current GPU.
//
// Copies: short GEMMs are timed as CUDA graphs of many back-to-back launches, and the L2 flush only
// happens between graphs. So that every launch still reads its operands from HBM (a roofline point must
// not ride on a warm L2), the problem can hold several copies of A, B and C, enough that together they
// exceed twice the L2; the launches of a graph rotate over them. Every copy holds different random operands
// (copy 0 those of `seed`, copy i those of seed_for_copy(seed, i)), and the first and the last copy each have
// their own reference: a launch that reads copy 0 whatever copy it is given writes copy 0's product into the
// last copy's output, which its check rejects (with identical copies it would pass, and then read a warm L2
// inside a timing graph while the record says cold).
class GemmProblem {
 public:
  GemmProblem(const GemmShape& shape, const LtDtype& dtype, std::uint64_t seed, cudaStream_t stream, int copies = 1,
              const GemmVariant& variant = {});
  const GemmShape& shape() const { return shape_; }
  const LtDtype& dtype() const { return dtype_; }
  // B is stored row-major N x K: asked for (layout nt) or required by the dtype (fp8's TN form).
  bool b_transposed() const { return b_transposed_; }
  Epilogue epilogue() const { return epilogue_; }
  // bias[N] in the output type (dtype().c); nullptr without an epilogue.
  const void* bias() const { return epilogue_ == Epilogue::none ? nullptr : bias_.get(); }
  std::uint64_t seed() const { return seed_; }
  float scale_a() const { return scale_a_; }
  float scale_b() const { return scale_b_; }
  std::int64_t c_count() const { return shape_.m * shape_.n * shape_.batch; }
  int copies() const { return copies_; }
  double operand_bytes_per_copy() const { return double(a_stride_ + b_stride_ + c_stride_); }

  // Device bytes one copy needs (operands, output, reference and its error floor), for the memory check.
  static double device_bytes(const GemmShape& shape, const LtDtype& dtype);
  // Copies needed so that their operands together exceed twice `l2_bytes` (1 when one copy already does),
  // at most max_copies.
  static int copies_for_cold_l2(const GemmShape& shape, const LtDtype& dtype, double l2_bytes, int max_copies);

  // C's own bytes only: the guard bytes that follow it stay as they are.
  void poison_output(cudaStream_t stream, int copy = 0) { poison(c(copy), c_bytes_, stream); }
  // The copies that have a reference, hence can be verified: the first and the last.
  bool verifiable(int copy) const { return copy == 0 || copy == copies_ - 1; }
  // C of `copy` against that copy's own reference; throws std::invalid_argument for a copy without one.
  Comparison check_output(cudaStream_t stream, int copy = 0) const {
    return check_output_range(stream, 0, c_count(), copy);
  }
  // Elements [first, first + count) of C only: a grouped GEMM writes the first m_g rows of each expert's
  // slot of the padded layout (batch = experts, m = the largest group), so it is checked group by group.
  Comparison check_output_range(cudaStream_t stream, std::int64_t first, std::int64_t count, int copy = 0) const {
    return compare_to_reference(static_cast<char*>(c(copy)) + std::size_t(first) * std::size_t(elem_bytes(dtype_.c)), dtype_.c,
                                reference(copy) + first, error_floor(copy) + first, count, stream);
  }
  bool has_guards() const { return c_guard_ > 0; }
  // nullopt when every guard byte around every copy of C still holds its pattern; else what was overwritten,
  // e.g. "wrote 128 bytes outside C: the first 0 bytes after the end of C (operand copy 0)". Synchronises.
  std::optional<std::string> check_guards(cudaStream_t stream) const;
  // Writes the pattern into every guard again (before each verification, so one candidate's stray write is never
  // blamed on the next).
  void reset_guards(cudaStream_t stream);
  // The tolerance verification applies (see cublaslt_gemm.cpp).
  double tolerance() const;

  // Operands of `copy`. Under the test hook (OperandCopySabotage) every copy's operands are copy 0's: what a
  // launch bound to copy 0 would read.
  void* a(int copy = 0) const { return a_.as<char>() + std::size_t(read_copy(copy)) * a_stride_; }
  void* b(int copy = 0) const { return b_.as<char>() + std::size_t(read_copy(copy)) * b_stride_; }
  // C of `copy`, after the guard that precedes it (when the problem has guards).
  void* c(int copy = 0) const { return c_.as<char>() + c_guard_ + std::size_t(copy) * c_stride_; }
  // The fp32 reference and its error floor of a verifiable copy (see verifiable()).
  const float* reference(int copy = 0) const { return ref_.as<float>() + std::size_t(ref_slot(copy) * c_count()); }
  const float* error_floor(int copy = 0) const { return floor_.as<float>() + std::size_t(ref_slot(copy) * c_count()); }
  // The seed of copy i's operands (copy 0: the problem's seed).
  static std::uint64_t seed_for_copy(std::uint64_t seed, int copy);
  // Each scale in its own 256-byte slot: cuBLASLt checks the alignment of every pointer it is given.
  const float* device_scale_a() const { return scales_.as<float>(); }
  const float* device_scale_b() const { return scales_.as<float>() + kScaleSlotFloats; }

 private:
  static constexpr int kScaleSlotFloats = 64;
  int read_copy(int copy) const { return operands_from_copy0_ ? 0 : copy; }
  std::int64_t ref_slot(int copy) const;
  static constexpr unsigned char kGuardByte = 0xA5;   // the guard pattern (poison is 0xFF)
  GemmShape shape_;
  LtDtype dtype_;
  bool b_transposed_ = false;
  Epilogue epilogue_ = Epilogue::none;
  std::uint64_t seed_;
  int copies_ = 1;
  std::size_t a_stride_ = 0, b_stride_ = 0, c_stride_ = 0;   // bytes per copy, rounded up to 256 (C: + its guard)
  bool operands_from_copy0_ = false;                           // the test hook, as it was at construction
  std::size_t c_bytes_ = 0, c_guard_ = 0;                     // C's own bytes; guard before each copy and after the last
  float scale_a_ = 1, scale_b_ = 1;
  DeviceBuffer a_, b_, c_, ref_, floor_, scales_, bias_;
};

// Test hook (tests only): while one of these lives, every GemmProblem constructed reads copy 0's operands
// whatever copy a launch asks for (a(copy), b(copy)); outputs still go to C of the copy asked for. It makes
// every provider family's launches do what a launch bound to copy 0 would, so a test can see that
// verification fails. Not thread-safe against problems constructed concurrently on other threads.
class OperandCopySabotage {
 public:
  OperandCopySabotage();
  ~OperandCopySabotage();
  OperandCopySabotage(const OperandCopySabotage&) = delete;
  OperandCopySabotage& operator=(const OperandCopySabotage&) = delete;
  static bool active();
};

// The cuBLASLt descriptors for one problem; asks the heuristic for candidates and runs them.
class LtPlan {
 public:
  // fuse_epilogue = false runs the bare GEMM even when the problem has an epilogue (the unfused pair adds it
  // with a separate kernel).
  LtPlan(GpuContext& ctx, const GemmProblem& problem, bool fuse_epilogue = true);
  ~LtPlan();
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;

  // Up to max_count algorithms, best first as the heuristic ranks them (may be empty).
  std::vector<cublasLtMatmulHeuristicResult_t> candidates(int max_count) const;
  // Enqueues the GEMM on operand copy `copy` on `stream`. Capturable into a CUDA graph. Throws CudaError
  // on a cuBLASLt error.
  void run(const cublasLtMatmulAlgo_t& algo, cudaStream_t stream, int copy = 0) const;
  // Whether cuBLASLt accepts `algo` for this plan's descriptors (cublasLtMatmulAlgoCheck).
  bool supports(const cublasLtMatmulAlgo_t& algo) const;

 private:
  GpuContext& ctx_;
  const GemmProblem& problem_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t lt_a_ = nullptr, lt_b_ = nullptr, lt_c_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
};

// The identity of a cuBLASLt algorithm: {"algo_id", "tile", "stages", "split_k", "reduction", "swizzle",
// "custom_option", "inner_shape", "cluster", "workspace_bytes", "waves"}.
nlohmann::json lt_algo_identity(const cublasLtMatmulHeuristicResult_t& result);
// One line for a record's "kernel" field: "cublasLt algo 66 tile 128x256 stages 64x4 split-k 1 ...".
std::string lt_kernel_name(const nlohmann::json& identity);
// "cuBLASLt 13.0.0 (130000)".
std::string cublaslt_version_string();

}  // namespace aispflow::kernels::cuda
