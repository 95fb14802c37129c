// The template for your own GEMM provider plugin: a plain CUDA kernel behind aispflow's C ABI
// (include/aispflow/provider.h). Copy this directory, replace the kernel, keep the table.
//
//   cmake -S examples/plugins/simple -B build-plugin && cmake --build build-plugin
//   # in a workflow:  plugins: [build-plugin/libaispflow_example_simple.so]
//   #                 ... gemm_sweep: {providers: [example.simt, cublaslt], dtypes: [bf16]}
//
// aispflow fills A and B, checks every element of C against its own reference, checks that nothing outside C was
// written, and times run() with the same harness as cuBLASLt. run() must only enqueue work on the stream.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "aispflow/provider.h"

namespace {

// C = A * B for bf16 (row-major; B stored K x N, or N x K when b_nt), one output per thread, TILE x TILE tiles of
// A and B staged through shared memory. Simple, not fast: the point is the plugin around it.
template <int TILE>
__global__ void gemm_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k,
                          bool b_nt) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE + 1];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = row < m && ka < k ? __bfloat162float(a[size_t(row) * k + ka]) : 0.f;
    const size_t bi = b_nt ? size_t(col) * k + kb : size_t(kb) * n + col;
    bs[threadIdx.y][threadIdx.x] = col < n && kb < k ? __bfloat162float(b[bi]) : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[size_t(row) * n + col] = __float2bfloat16_rn(acc);
}

const char* const kConfigs[] = {"simt_tile16", "simt_tile32"};

const char* check(const aispflow_gemm_case_v1_t* gemm, int) {
  if (gemm->batch != 1) return "batched GEMMs are not implemented";
  if (gemm->m > (1 << 30) || gemm->n > (1 << 30) || gemm->k > (1 << 30)) return "dimensions above 2^30";
  return nullptr;   // dtype, layouts and epilogue are already limited by the table's masks
}

// The large tile for large outputs; both are candidates under `provider_options: {example.simt: {autotune: true}}`.
int default_config(const aispflow_gemm_case_v1_t* gemm) { return gemm->m * gemm->n >= (1 << 20) ? 1 : 0; }

template <int TILE>
int launch(const aispflow_gemm_case_v1_t* g, const void* a, const void* b, void* c, cudaStream_t stream) {
  const dim3 block(TILE, TILE), grid(unsigned((g->n + TILE - 1) / TILE), unsigned((g->m + TILE - 1) / TILE));
  gemm_bf16<TILE><<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b),
                                              static_cast<__nv_bfloat16*>(c), int(g->m), int(g->n), int(g->k),
                                              g->layout == AISPFLOW_LAYOUT_NT);
  return int(cudaGetLastError());   // 0 = cudaSuccess; anything else is reported by aispflow as a failed record
}

int run(const aispflow_gemm_case_v1_t* gemm, int config, const void* a, const void* b, void* c, const float*,
        const float*, const void*, void*, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return config == 0 ? launch<16>(gemm, a, b, c, s) : launch<32>(gemm, a, b, c, s);
}

const char* error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

const aispflow_gemm_provider_v1_t kProviders[] = {{
    "example.simt",                                  // name, as written in a sweep's `providers:`
    "example plugin: tiled SIMT bf16 GEMM (examples/plugins/simple)",
    AISPFLOW_DTYPE_BF16,                             // dtypes
    AISPFLOW_LAYOUT_NN | AISPFLOW_LAYOUT_NT,         // B stored K x N or N x K
    AISPFLOW_EPILOGUE_NONE,                          // no fused bias/GELU
    2, kConfigs,                                     // named configurations (the record's `kernel`)
    check, default_config,
    nullptr,                                         // no workspace
    run, error_string,
}};

const aispflow_gemm_plugin_v1_t kPlugin = {AISPFLOW_GEMM_PLUGIN_ABI_VERSION, "aispflow-example-simple", 1, kProviders};

}  // namespace

extern "C" AISPFLOW_PLUGIN_API const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1(void) { return &kPlugin; }
