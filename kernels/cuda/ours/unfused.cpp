// cublaslt.unfused: the pair a framework without epilogue fusion runs: cuBLASLt's heuristic-top GEMM writes C,
// then a separate elementwise kernel reads C back, adds the bias, applies GELU and writes C again. Both launches
// are timed together as one record, so it prices exactly what fusing the epilogue saves (one round trip of C
// through HBM and a launch).
#include <memory>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/unfused.hpp"

namespace aispflow::kernels::cuda::ours {

namespace {

class UnfusedPair final : public OurKernel {
 public:
  explicit UnfusedPair(std::function<GpuContext&()> context) : context_(std::move(context)) {}

  std::string identity(const GemmCase& c) const override {
    return "cuBLASLt " + cublaslt_version_string() + " heuristic top algorithm (no epilogue), then a separate " +
           c.epilogue + " kernel (16-byte vectors, in place)";
  }
  nlohmann::json config() const override { return {{"name", "lt_then_elementwise"}}; }
  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (c.epilogue == "none") return std::string("the unfused pair exists for epilogues (bias, bias_gelu); not none");
    if (c.dtype != "bf16" && c.dtype != "fp8_e4m3")
      return "cublaslt.unfused writes bf16 (bf16 or fp8_e4m3 inputs); not " + c.dtype;
    if (c.shape.n % 8 != 0) return "the elementwise kernel takes rows of whole 16-byte vectors: N % 8 != 0";
    if (c.dtype == "fp8_e4m3" && (c.shape.k % 16 != 0 || c.shape.n % 16 != 0))
      return std::string("fp8_e4m3 in cuBLASLt needs K and N to be multiples of 16");
    if (system_info().devices.empty()) return std::string("no CUDA device");
    return std::nullopt;
  }
  // The GEMM's result is rounded to bf16 before the bias and GELU are applied and rounded again: one more
  // rounding of the bf16 unit (2^-8 relative) than the fused computation the reference models.
  double extra_rounding() const override { return 0x1p-8; }
  BoundLaunch bind(const GemmProblem& problem, Epilogue epilogue_asked) const override {
    auto plan = std::make_shared<LtPlan>(context_(), problem, /*fuse_epilogue=*/false);
    const auto candidates = plan->candidates(1);
    if (candidates.empty()) throw CudaError("cuBLASLt's heuristic returned no algorithm for this problem");
    const cublasLtMatmulAlgo_t algo = candidates.front().algo;
    const auto s = problem.shape();
    const void* bias = problem.bias();
    const int epilogue = int(epilogue_asked);
    const GemmProblem* p = &problem;
    return [plan, algo, s, bias, epilogue, p](cudaStream_t stream, int copy) {
      plan->run(algo, stream, copy);
      if (epilogue != 0) launch_bias_epilogue(p->c(copy), bias, s.m * s.n * s.batch, s.n, epilogue, stream);
    };
  }

 private:
  std::function<GpuContext&()> context_;
};

}  // namespace

std::vector<std::unique_ptr<OurKernel>> unfused_pair(std::function<GpuContext&()> context) {
  std::vector<std::unique_ptr<OurKernel>> out;
  out.push_back(std::make_unique<UnfusedPair>(std::move(context)));
  return out;
}

}  // namespace aispflow::kernels::cuda::ours
