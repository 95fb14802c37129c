#include "kernels/cuda/cublaslt_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <stdexcept>

#include "kernels/common/verify.hpp"

namespace aispflow::kernels::cuda {

namespace {

// The dtypes the cuBLASLt providers offer. Verification tolerances come from kernels::default_tolerance,
// the bound the CPU providers use, applied with the same error metric (see gemm_data.hpp).
const std::vector<LtDtype>& dtype_table() {
  static const std::vector<LtDtype> table = {
      {"fp32", Elem::f32, Elem::f32, CUBLAS_COMPUTE_32F, false, 0},
      {"tf32", Elem::f32, Elem::f32, CUBLAS_COMPUTE_32F_FAST_TF32, false, 80},
      {"fp16", Elem::f16, Elem::f16, CUBLAS_COMPUTE_32F, false, 0},
      {"bf16", Elem::bf16, Elem::bf16, CUBLAS_COMPUTE_32F, false, 80},
      {"fp8_e4m3", Elem::e4m3, Elem::bf16, CUBLAS_COMPUTE_32F, true, 89},
  };
  return table;
}

cudaDataType_t cuda_type(Elem e) {
  switch (e) {
    case Elem::f32: return CUDA_R_32F;
    case Elem::f16: return CUDA_R_16F;
    case Elem::bf16: return CUDA_R_16BF;
    case Elem::e4m3: return CUDA_R_8F_E4M3;
  }
  throw std::invalid_argument("unknown element type");
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  AISPFLOW_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

// A column-major rows x cols layout with leading dimension ld, `batch` matrices back to back.
cublasLtMatrixLayout_t make_layout(Elem type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                   std::int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  AISPFLOW_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, cuda_type(type), std::uint64_t(rows), std::uint64_t(cols), ld));
  if (batch > 1) {
    const std::int32_t count = std::int32_t(batch);
    const std::int64_t stride = rows * cols;
    AISPFLOW_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    AISPFLOW_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

enum class LtEnum { MATMUL_TILE, MATMUL_STAGES, CLUSTER_SHAPE };
struct LtEnumName {
  LtEnum kind;
  unsigned id;
  const char* name;
};
constexpr LtEnumName kLtEnumNames[] = {
#define AISPFLOW_LT_ENUM(kind, id, name) {LtEnum::kind, id, name},
#include "cublaslt_enum_names.inc"
#undef AISPFLOW_LT_ENUM
};

std::string enum_name(LtEnum kind, unsigned id) {
  if (id == 0) return kind == LtEnum::CLUSTER_SHAPE ? "auto" : "undefined";
  for (const auto& e : kLtEnumNames)
    if (e.kind == kind && e.id == id) return e.name;
  return "id" + std::to_string(id);
}

template <class T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS)
    return T{};
  return value;
}

const char* reduction_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return "other";
  }
}

}  // namespace

std::optional<LtDtype> lt_dtype(const std::string& dtype) {
  for (const auto& d : dtype_table())
    if (d.name == dtype) return d;
  return std::nullopt;
}

std::vector<std::string> lt_dtype_names() {
  std::vector<std::string> names;
  for (const auto& d : dtype_table()) names.push_back(d.name);
  return names;
}

double GemmProblem::device_bytes(const GemmShape& s, const LtDtype& d) {
  const double mk = double(s.m) * double(s.k), kn = double(s.k) * double(s.n), mn = double(s.m) * double(s.n);
  return double(s.batch) * ((mk + kn) * elem_bytes(d.ab) + mn * (elem_bytes(d.c) + 2 * sizeof(float)));
}

int GemmProblem::copies_for_cold_l2(const GemmShape& s, const LtDtype& d, double l2_bytes, int max_copies) {
  const double per_copy = double(s.batch) * (double(s.m) * double(s.k) * elem_bytes(d.ab) +
                                             double(s.k) * double(s.n) * elem_bytes(d.ab) +
                                             double(s.m) * double(s.n) * elem_bytes(d.c));
  if (per_copy >= 2.0 * l2_bytes) return 1;
  return std::clamp(int(std::ceil(2.0 * l2_bytes / std::max(per_copy, 1.0))) + 1, 1, std::max(1, max_copies));
}

GemmProblem::GemmProblem(const GemmShape& shape, const LtDtype& dtype, std::uint64_t seed, cudaStream_t stream,
                         int copies, const GemmVariant& variant)
    : shape_(shape),
      dtype_(dtype),
      b_transposed_(dtype.b_transposed || variant.b_transposed),
      epilogue_(variant.epilogue),
      seed_(seed),
      copies_(std::max(1, copies)) {
  const std::int64_t a_count = shape.m * shape.k * shape.batch, b_count = shape.k * shape.n * shape.batch;
  auto round_up = [](std::size_t bytes) { return (bytes + 255) / 256 * 256; };
  a_stride_ = round_up(std::size_t(a_count) * elem_bytes(dtype.ab));
  b_stride_ = round_up(std::size_t(b_count) * elem_bytes(dtype.ab));
  c_bytes_ = std::size_t(c_count()) * elem_bytes(dtype.c);
  c_guard_ = round_up(variant.c_guard_bytes);
  c_stride_ = round_up(c_bytes_) + c_guard_;
  a_ = DeviceBuffer(a_stride_ * std::size_t(copies_));
  b_ = DeviceBuffer(b_stride_ * std::size_t(copies_));
  c_ = DeviceBuffer(c_guard_ + c_stride_ * std::size_t(copies_));
  if (c_guard_ > 0) AISPFLOW_CUDA_CHECK(cudaMemsetAsync(c_.get(), kGuardByte, c_.bytes(), stream));
  const std::size_t references = copies_ > 1 ? 2 : 1;   // the first and the last copy
  ref_ = DeviceBuffer(references * std::size_t(c_count()) * sizeof(float));
  floor_ = DeviceBuffer(references * std::size_t(c_count()) * sizeof(float));
  scales_ = DeviceBuffer(2 * kScaleSlotFloats * sizeof(float));
  // |x| in [1/64, 1]: never zeros, and no magnitudes that overflow fp16 at large K. Every copy its own values
  // (the raw addresses here: the test hook must not make copies share their fill).
  for (int i = 0; i < copies_; ++i) {
    const std::uint64_t s = seed_for_copy(seed, i);
    fill_random(a_.as<char>() + std::size_t(i) * a_stride_, dtype.ab, a_count, s * 2 + 1, stream);
    fill_random(b_.as<char>() + std::size_t(i) * b_stride_, dtype.ab, b_count, s * 2 + 2, stream);
  }
  if (epilogue_ != Epilogue::none) {   // a bias of the same magnitude as the products' spread, never zero
    bias_ = DeviceBuffer(std::size_t(shape.n) * elem_bytes(dtype.c));
    fill_random(bias_.get(), dtype.c, shape.n, seed * 2 + 3, stream);
  }
  if (dtype.ab == Elem::e4m3) {
    // Distinct, non-unit scales: a kernel that ignores either scale, or applies one twice, fails verification.
    scale_a_ = 0.5f;
    scale_b_ = 0.25f;
  }
  float host_scales[2 * kScaleSlotFloats] = {};
  host_scales[0] = scale_a_;
  host_scales[kScaleSlotFloats] = scale_b_;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(scales_.get(), host_scales, sizeof host_scales, cudaMemcpyHostToDevice, stream));
  // The host array goes out of scope: wait for the copy (this constructor synchronises below anyway).
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));

  // One reference per verifiable copy, each from that copy's own operands.
  for (int copy : {0, copies_ - 1}) {
    RefGemm g;
    g.m = shape.m;
    g.n = shape.n;
    g.k = shape.k;
    g.batch = shape.batch;
    g.ab_type = dtype.ab;
    g.b_transposed = b_transposed_;   // B's random values are drawn in storage order either way
    g.epilogue = epilogue_;
    g.bias = bias();
    g.bias_type = dtype.c;
    g.a = a_.as<char>() + std::size_t(copy) * a_stride_;
    g.b = b_.as<char>() + std::size_t(copy) * b_stride_;
    g.scale = scale_a_ * scale_b_;
    g.c = const_cast<float*>(reference(copy));
    g.floor = const_cast<float*>(error_floor(copy));
    reference_gemm(g, stream);
    if (copies_ == 1) break;
  }
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Set last: the fills and references above use the real addresses of every copy.
  operands_from_copy0_ = OperandCopySabotage::active();
}

std::uint64_t GemmProblem::seed_for_copy(std::uint64_t seed, int copy) {
  // Far apart in the generator's counter space (fill_random hashes seed * golden + index): no two copies, and
  // no copy and the bias, draw the same stream.
  return copy == 0 ? seed : seed + 0x1000003ULL * std::uint64_t(copy);
}

std::int64_t GemmProblem::ref_slot(int copy) const {
  if (!verifiable(copy))
    throw std::invalid_argument("operand copy " + std::to_string(copy) + " of " + std::to_string(copies_) +
                                " has no reference (the first and the last have)");
  return copy == 0 ? 0 : 1;
}

namespace {
std::atomic<int> g_operand_copy_sabotage{0};
}
OperandCopySabotage::OperandCopySabotage() { ++g_operand_copy_sabotage; }
OperandCopySabotage::~OperandCopySabotage() { --g_operand_copy_sabotage; }
bool OperandCopySabotage::active() { return g_operand_copy_sabotage.load() > 0; }

void GemmProblem::reset_guards(cudaStream_t stream) {
  if (c_guard_ == 0) return;
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(c_.get(), kGuardByte, c_guard_, stream));
  for (int copy = 0; copy < copies_; ++copy) {
    const std::size_t begin = c_guard_ + std::size_t(copy) * c_stride_ + c_bytes_;
    AISPFLOW_CUDA_CHECK(cudaMemsetAsync(c_.as<char>() + begin, kGuardByte, c_stride_ - c_bytes_, stream));
  }
}

std::optional<std::string> GemmProblem::check_guards(cudaStream_t stream) const {
  if (c_guard_ == 0) return std::nullopt;
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Every byte of the buffer outside the copies' C: the guard before copy 0, then after each copy its padding and
  // the guard that follows (which is the next copy's leading guard).
  std::vector<unsigned char> host;
  std::size_t bad = 0;
  std::string first;
  for (int copy = -1; copy < copies_; ++copy) {
    const std::size_t begin = copy < 0 ? 0 : c_guard_ + std::size_t(copy) * c_stride_ + c_bytes_;
    const std::size_t end = c_guard_ + std::size_t(copy + 1) * c_stride_;
    host.resize(end - begin);
    AISPFLOW_CUDA_CHECK(cudaMemcpy(host.data(), c_.as<char>() + begin, host.size(), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (host[i] == kGuardByte) continue;
      if (bad++ == 0)
        first = copy < 0 ? std::to_string(host.size() - i) + " bytes before the start of C (operand copy 0)"
                         : "at byte " + std::to_string(i) + " past the end of C (operand copy " + std::to_string(copy) + ")";
    }
  }
  if (bad == 0) return std::nullopt;
  return "wrote " + std::to_string(bad) + " guard bytes outside C; the first " + first;
}

// kernels::default_tolerance is the bound the CPU providers use, with the same error metric. tf32 gets a
// floor of 8 * 2^-11: rounding both operands to 10-bit mantissas makes each product off by up to 2^-10,
// the per-element error is a random walk of those, and the maximum over the 10^7-10^8 elements of a large
// GEMM lands several standard deviations out, close to default_tolerance's 4 * 2^-11, which leaves no
// margin (an 8192^3 tf32 ceiling on an H100 came out unverified once). A wrong kernel still errs by order 1.
double GemmProblem::tolerance() const {
  const double base = default_tolerance(dtype_.name, shape_.k);
  return dtype_.name == "tf32" ? std::max(base, 8.0 * 0x1p-11) : base;
}

LtPlan::LtPlan(GpuContext& ctx, const GemmProblem& problem, bool fuse_epilogue) : ctx_(ctx), problem_(problem) {
  const auto& s = problem.shape();
  const auto& d = problem.dtype();
  AISPFLOW_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, d.compute, CUDA_R_32F));
  const bool b_transposed = problem.b_transposed();
  const cublasOperation_t op_a = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  if (d.ab == Elem::e4m3) {
    // cuBLASLt's A is our B and vice versa (see the header), so the scales swap places too.
    set_desc(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, problem.device_scale_b());
    set_desc(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, problem.device_scale_a());
  }
  if (fuse_epilogue && problem.epilogue() != Epilogue::none) {
    // cuBLASLt computes our C transposed (N x M column-major), so our per-column bias[N] is its per-row bias:
    // exactly the vector its BIAS epilogues take. GELU_BIAS applies GELU (tanh form) after the bias.
    const cublasLtEpilogue_t epilogue =
        problem.epilogue() == Epilogue::bias_gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, problem.bias());
    const cudaDataType_t bias_type = cuda_type(d.c);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
  }
  // cuBLASLt's A = our B: N x K column-major (ld N) when B is row-major K x N; stored K x N column-major
  // (ld K, op T) when we keep B as row-major N x K.
  lt_a_ = b_transposed ? make_layout(d.ab, s.k, s.n, s.k, s.batch) : make_layout(d.ab, s.n, s.k, s.n, s.batch);
  lt_b_ = make_layout(d.ab, s.k, s.m, s.k, s.batch);   // our A, row-major M x K = column-major K x M
  lt_c_ = make_layout(d.c, s.n, s.m, s.n, s.batch);    // our C, row-major M x N = column-major N x M
  AISPFLOW_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference_));
  const std::uint64_t workspace = ctx.workspace_bytes();
  AISPFLOW_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &workspace, sizeof workspace));
}

LtPlan::~LtPlan() {
  if (preference_) cublasLtMatmulPreferenceDestroy(preference_);
  if (lt_c_) cublasLtMatrixLayoutDestroy(lt_c_);
  if (lt_b_) cublasLtMatrixLayoutDestroy(lt_b_);
  if (lt_a_) cublasLtMatrixLayoutDestroy(lt_a_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
}

std::vector<cublasLtMatmulHeuristicResult_t> LtPlan::candidates(int max_count) const {
  std::vector<cublasLtMatmulHeuristicResult_t> results(std::size_t(std::max(1, max_count)));
  int returned = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(ctx_.lt(), desc_, lt_a_, lt_b_, lt_c_, lt_c_, preference_, int(results.size()),
                                     results.data(), &returned);
  // NOT_SUPPORTED means "no algorithm for this problem": an empty list, not an error.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  AISPFLOW_CUBLAS_CHECK(status);
  results.resize(std::size_t(returned));
  std::erase_if(results, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
  return results;
}

void LtPlan::run(const cublasLtMatmulAlgo_t& algo, cudaStream_t stream, int copy) const {
  const float alpha = 1.0f, beta = 0.0f;
  AISPFLOW_CUBLAS_CHECK(cublasLtMatmul(ctx_.lt(), desc_, &alpha, problem_.b(copy), lt_a_, problem_.a(copy), lt_b_,
                                       &beta, problem_.c(copy), lt_c_, problem_.c(copy), lt_c_, &algo, ctx_.workspace(),
                                       ctx_.workspace_bytes(), stream));
}

bool LtPlan::supports(const cublasLtMatmulAlgo_t& algo) const {
  cublasLtMatmulHeuristicResult_t result{};
  const cublasStatus_t status =
      cublasLtMatmulAlgoCheck(ctx_.lt(), desc_, lt_a_, lt_b_, lt_c_, lt_c_, &algo, &result);
  return status == CUBLAS_STATUS_SUCCESS && result.state == CUBLAS_STATUS_SUCCESS &&
         result.workspaceSize <= ctx_.workspace_bytes();
}

nlohmann::json lt_algo_identity(const cublasLtMatmulHeuristicResult_t& result) {
  const auto& algo = result.algo;
  return {
      {"algo_id", algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID)},
      {"tile", enum_name(LtEnum::MATMUL_TILE, algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID))},
      {"stages", enum_name(LtEnum::MATMUL_STAGES, algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID))},
      {"split_k", algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
      {"reduction", reduction_name(algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))},
      {"swizzle", algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
      {"custom_option", algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)},
      {"inner_shape", algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)},
      {"cluster",
       enum_name(LtEnum::CLUSTER_SHAPE, algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID))},
      {"workspace_bytes", result.workspaceSize},
      {"waves", result.wavesCount},
  };
}

std::string lt_kernel_name(const nlohmann::json& id) {
  std::string s = "cublasLt algo " + std::to_string(id.value("algo_id", -1)) + " tile " + id.value("tile", "?") +
                  " stages " + id.value("stages", "?") + " split-k " + std::to_string(id.value("split_k", 0));
  if (id.value("split_k", 0) > 1) s += " (" + id.value("reduction", std::string("?")) + ")";
  s += " swizzle " + std::to_string(id.value("swizzle", 0u)) + " cluster " + id.value("cluster", "?");
  if (id.value("custom_option", 0u) != 0) s += " option " + std::to_string(id.value("custom_option", 0u));
  s += " workspace " + std::to_string(id.value("workspace_bytes", std::size_t(0))) + " B";
  return s;
}

std::string cublaslt_version_string() {
  const std::size_t v = cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace aispflow::kernels::cuda
