// ours.naive: the lab's baseline. One thread computes one output element with an fp32 running sum over K; the
// threads of a warp take consecutive columns, so B's rows (layout nn) and C are read and written coalesced, and
// A's element is a broadcast. No shared memory, no tensor cores: plain, not deliberately slowed.
#include <cuda_bf16.h>

#include <cstdio>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/epilogue.cuh"
#include "kernels/cuda/ours/simple_kernels.hpp"

namespace aispflow::kernels::cuda::ours {

namespace {

template <bool BTransposed>
__global__ void naive_gemm_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                  __nv_bfloat16* __restrict__ c, const __nv_bfloat16* __restrict__ bias, int epilogue,
                                  std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t col = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t row = blockIdx.y;
  const std::int64_t batch = blockIdx.z;
  if (col >= n) return;
  a += batch * m * k + row * k;
  b += batch * k * n;
  float sum = 0.0f;
  for (std::int64_t p = 0; p < k; ++p) {
    const float bv = BTransposed ? __bfloat162float(b[col * k + p]) : __bfloat162float(b[p * n + col]);
    sum = fmaf(__bfloat162float(a[p]), bv, sum);
  }
  if (epilogue != 0) sum += __bfloat162float(bias[col]);
  if (epilogue == 2) sum = gelu_tanh(sum);
  c[batch * m * n + row * n + col] = __float2bfloat16_rn(sum);
}

class NaiveKernel final : public OurKernel {
 public:
  std::string identity(const GemmCase& c) const override {
    return "ours.naive " + c.dtype + " " + c.layout +
           ": one thread per output element, fp32 sum over K, 256 threads along N, no shared memory";
  }
  nlohmann::json config() const override { return {{"name", "naive_256"}, {"threads", 256}}; }
  std::optional<std::string> unsupported(const GemmCase& c) const override {
    if (c.dtype != "bf16") return "ours.naive runs bf16 (the lab's baseline); not " + c.dtype;
    if (c.shape.m > 65535 || c.shape.batch > 65535) return std::string("M or batch above 65535 (grid limit)");
    if (system_info().devices.empty()) return std::string("no CUDA device");
    return std::nullopt;
  }
  BoundLaunch bind(const GemmProblem& problem, Epilogue epilogue_asked) const override {
    const auto s = problem.shape();
    const bool bt = problem.b_transposed();
    const auto* bias = static_cast<const __nv_bfloat16*>(problem.bias());
    const int epilogue = int(epilogue_asked);
    const GemmProblem* p = &problem;
    return [s, bt, bias, epilogue, p](cudaStream_t stream, int copy) {
      const dim3 grid(unsigned((s.n + 255) / 256), unsigned(s.m), unsigned(s.batch));
      const auto* a = static_cast<const __nv_bfloat16*>(p->a(copy));
      const auto* b = static_cast<const __nv_bfloat16*>(p->b(copy));
      auto* c = static_cast<__nv_bfloat16*>(p->c(copy));
      if (bt)
        naive_gemm_kernel<true><<<grid, 256, 0, stream>>>(a, b, c, bias, epilogue, s.m, s.n, s.k);
      else
        naive_gemm_kernel<false><<<grid, 256, 0, stream>>>(a, b, c, bias, epilogue, s.m, s.n, s.k);
      AISPFLOW_CUDA_CHECK_LAUNCH();
    };
  }
};

}  // namespace

std::vector<std::unique_ptr<OurKernel>> naive_kernels() {
  std::vector<std::unique_ptr<OurKernel>> out;
  out.push_back(std::make_unique<NaiveKernel>());
  return out;
}

std::size_t pick_first(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!list[i]->unsupported(c)) return i;
  return 0;
}

}  // namespace aispflow::kernels::cuda::ours
