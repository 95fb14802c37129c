// A plugin whose providers misbehave on purpose, so that the GPU tests see aispflow catch each case
// (tests/gpu/test_plugin_provider.cpp):
//   test.correct  a naive bf16 GEMM (the control: it must pass)
//   test.wrong    the same, with one element of C off by 0.5
//   test.past_c   the same, and it also writes 16 bytes past the end of C
//   test.error    returns error code 7 without launching anything
//   test.past_c_late  correct for its first two calls (aispflow's verification, first and last operand copy), then
//                     writes past C like test.past_c: only the guard check after timing can catch it
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "aispflow/provider.h"

namespace {

enum Mode { kCorrect, kWrong, kPastC };

__global__ void naive(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k, int mode) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += __bfloat162float(a[size_t(row) * k + i]) * __bfloat162float(b[size_t(i) * n + col]);
  if (mode == kWrong && row == m / 2 && col == n / 3) acc += 0.5f;
  c[size_t(row) * n + col] = __float2bfloat16_rn(acc);
  if (mode == kPastC && row == m - 1 && col == n - 1)
    for (int i = 1; i <= 8; ++i) c[size_t(m) * n - 1 + i] = __float2bfloat16_rn(1.0f);   // 16 bytes past C
}

template <int Mode>
int run(const aispflow_gemm_case_v1_t* g, int, const void* a, const void* b, void* c, const float*, const float*,
        const void*, void*, void* stream) {
  const dim3 block(16, 16), grid(unsigned((g->n + 15) / 16), unsigned((g->m + 15) / 16));
  naive<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const __nv_bfloat16*>(a),
                                                               static_cast<const __nv_bfloat16*>(b),
                                                               static_cast<__nv_bfloat16*>(c), int(g->m), int(g->n),
                                                               int(g->k), Mode);
  return int(cudaGetLastError());
}

int fail(const aispflow_gemm_case_v1_t*, int, const void*, const void*, void*, const float*, const float*, const void*,
         void*, void*) {
  return 7;
}
// Counts calls on the host; a call made while a CUDA graph is captured bakes the bad mode into the graph's replays.
int late_calls = 0;
int run_late(const aispflow_gemm_case_v1_t* g, int config, const void* a, const void* b, void* c, const float* sa,
             const float* sb, const void* bias, void* ws, void* stream) {
  return ++late_calls <= 2 ? run<kCorrect>(g, config, a, b, c, sa, sb, bias, ws, stream)
                           : run<kPastC>(g, config, a, b, c, sa, sb, bias, ws, stream);
}

const char* error_string(int code) { return code == 7 ? "the test plugin's planted error" : nullptr; }

const char* const kConfigs[] = {"naive"};
#define AISPFLOW_TEST_PROVIDER(name, fn)                                                                        \
  {name, "a misbehaving test provider", AISPFLOW_DTYPE_BF16, AISPFLOW_LAYOUT_NN, AISPFLOW_EPILOGUE_NONE, 1, kConfigs, \
   nullptr, nullptr, nullptr, fn, error_string}
const aispflow_gemm_provider_v1_t kProviders[] = {
    AISPFLOW_TEST_PROVIDER("test.correct", run<kCorrect>), AISPFLOW_TEST_PROVIDER("test.wrong", run<kWrong>),
    AISPFLOW_TEST_PROVIDER("test.past_c", run<kPastC>), AISPFLOW_TEST_PROVIDER("test.error", fail),
    AISPFLOW_TEST_PROVIDER("test.past_c_late", run_late)};
const aispflow_gemm_plugin_v1_t kPlugin = {AISPFLOW_GEMM_PLUGIN_ABI_VERSION, "aispflow-test-sabotage", 5, kProviders};

}  // namespace

extern "C" AISPFLOW_PLUGIN_API const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1(void) { return &kPlugin; }
