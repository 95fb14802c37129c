/* aispflow GEMM provider plugins: the ABI between aispflow and a shared object you build yourself.
 *
 * Plain C (C99), so any compiler can build a plugin; no C++ type crosses the boundary. A plugin exports one
 * function, named after the ABI version it implements:
 *
 *     const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1(void);
 *
 * aispflow finds it with dlsym. A later ABI gets a new struct and a new symbol (aispflow_gemm_plugin_v2), and
 * aispflow keeps accepting the older ones it knows, as NCCL does with ncclNet_vN. The struct also carries
 * `abi_version`, which must equal the version in its symbol's name (a plugin compiled against a mismatched
 * header is refused).
 *
 * What aispflow does around every call (docs/plugins.md):
 *   - it allocates A, B, C (and bias, scales) on the GPU, fills them with random values, and computes an fp32
 *     reference of the product;
 *   - C is poisoned with NaN before each verification run, then every element is compared with the reference
 *     (on the first and the last operand copy); guard bytes before and after C are checked after every run;
 *   - a verified configuration is timed with aispflow's harness (CUDA graphs for short work, cold operand
 *     copies, L2 flushes, rests between samples), the same as cuBLASLt, CUTLASS and aispflow's own kernels;
 *   - a non-zero return code, a wrong result or a write outside C gives a `failed` record, never a timing.
 *
 * Layout convention: C[M x N] = epilogue(scale_a * scale_b * A[M x K] * B[K x N] + bias), row-major, densely
 * packed, `batch` problems stored back to back (A: batch x M x K, C: batch x M x N). B is stored either
 * K x N (AISPFLOW_LAYOUT_NN) or N x K (AISPFLOW_LAYOUT_NT: a Linear weight; fp8 always uses this form, as
 * cuBLASLt's fp8 kernels require). The case says which storage aispflow chose.
 *
 * Rules for run(): it only enqueues work on `stream` (no synchronisation, no allocation, no host reads of
 * device memory), because aispflow captures it into CUDA graphs. It may be called many thousands of times.
 * check() and the tables must not need a GPU: `aispflow providers` and workflow validation read them on
 * machines without one. Strings returned by check() must stay valid until the next call on the same thread
 * (a string literal is simplest).
 */
#ifndef AISPFLOW_PROVIDER_H
#define AISPFLOW_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AISPFLOW_GEMM_PLUGIN_ABI_VERSION 1
#define AISPFLOW_GEMM_PLUGIN_SYMBOL_V1 "aispflow_gemm_plugin_v1"

/* Data types (bits of aispflow_gemm_provider_v1_t::dtypes). Storage of A and B / of C and bias:
 *   fp32: f32 / f32   tf32: f32 / f32 (tensor cores may round inputs to tf32)   fp16: f16 / f16
 *   bf16: bf16 / bf16   fp8_e4m3: e4m3 / bf16 (scale_a and scale_b apply, output unscaled) */
#define AISPFLOW_DTYPE_FP32 (1u << 0)
#define AISPFLOW_DTYPE_TF32 (1u << 1)
#define AISPFLOW_DTYPE_FP16 (1u << 2)
#define AISPFLOW_DTYPE_BF16 (1u << 3)
#define AISPFLOW_DTYPE_FP8_E4M3 (1u << 4)

/* Storage of B (bits of aispflow_gemm_provider_v1_t::layouts). */
#define AISPFLOW_LAYOUT_NN (1u << 0) /* B row-major K x N */
#define AISPFLOW_LAYOUT_NT (1u << 1) /* B row-major N x K */

/* Fused output operations (bits of aispflow_gemm_provider_v1_t::epilogues). GELU is the tanh form. */
#define AISPFLOW_EPILOGUE_NONE (1u << 0)      /* C = s * A*B */
#define AISPFLOW_EPILOGUE_BIAS (1u << 1)      /* C = s * A*B + bias[n] */
#define AISPFLOW_EPILOGUE_BIAS_GELU (1u << 2) /* C = gelu(s * A*B + bias[n]) */

/* Element storage types of the case's operands. */
#define AISPFLOW_ELEM_F32 1
#define AISPFLOW_ELEM_F16 2
#define AISPFLOW_ELEM_BF16 3
#define AISPFLOW_ELEM_E4M3 4

/* One GEMM to run: what aispflow asks of a provider. */
typedef struct aispflow_gemm_case_v1_t {
  int64_t m, n, k, batch;
  uint32_t dtype;    /* one AISPFLOW_DTYPE_* bit */
  const char* dtype_name; /* "bf16", "fp8_e4m3", ... */
  uint32_t layout;   /* one AISPFLOW_LAYOUT_* bit: how B is stored */
  uint32_t epilogue; /* one AISPFLOW_EPILOGUE_* bit */
  int ab_elem;       /* AISPFLOW_ELEM_* of A and B */
  int c_elem;        /* AISPFLOW_ELEM_* of C and bias */
  float scale_a, scale_b; /* fp8 per-tensor scales (1 otherwise); the same values as on the device */
  int device;        /* CUDA device ordinal aispflow runs on (-1 when asked without a GPU, e.g. validation) */
  int compute_capability; /* 90 for sm_90; 0 when unknown */
} aispflow_gemm_case_v1_t;

/* One provider: a name in the sweep's `providers:` list. */
typedef struct aispflow_gemm_provider_v1_t {
  const char* name;        /* unique among all providers: letters, digits, '.', '_', '-' (e.g. "triton") */
  const char* description; /* one line for `aispflow providers` */
  uint32_t dtypes;         /* AISPFLOW_DTYPE_* bits */
  uint32_t layouts;        /* AISPFLOW_LAYOUT_* bits */
  uint32_t epilogues;      /* AISPFLOW_EPILOGUE_* bits */

  /* Named configurations (tile shapes, warps, stages, ...): at least one. The name is the record's `kernel`.
   * `provider_options: {NAME: {config: "..."}}` picks one, `{autotune: true}` searches all that fit. */
  int config_count;
  const char* const* config_names;

  /* NULL when `config` can run the case, else why not. NULL pointer: every case within the masks fits. */
  const char* (*check)(const aispflow_gemm_case_v1_t* gemm, int config);
  /* The configuration run without autotune. NULL pointer: the first that fits. */
  int (*default_config)(const aispflow_gemm_case_v1_t* gemm);
  /* Device workspace the run needs, in bytes (aispflow allocates it). NULL pointer: none. */
  size_t (*workspace_bytes)(const aispflow_gemm_case_v1_t* gemm, int config);

  /* Enqueues the GEMM on `stream` (a cudaStream_t / CUstream). scale_a, scale_b: device floats (fp8), else NULL;
   * bias: device [n] of the C type, NULL without an epilogue. Returns 0, or an error code. */
  int (*run)(const aispflow_gemm_case_v1_t* gemm, int config, const void* a, const void* b, void* c,
             const float* scale_a, const float* scale_b, const void* bias, void* workspace, void* stream);
  /* Text for a non-zero code of run(). NULL pointer: aispflow shows the number. */
  const char* (*error_string)(int code);
} aispflow_gemm_provider_v1_t;

/* What the entry point returns: static data owned by the plugin, valid while it is loaded. */
typedef struct aispflow_gemm_plugin_v1_t {
  int abi_version;     /* AISPFLOW_GEMM_PLUGIN_ABI_VERSION (1) */
  const char* name;    /* the plugin's own name, for messages */
  int provider_count;
  const aispflow_gemm_provider_v1_t* providers;
} aispflow_gemm_plugin_v1_t;

typedef const aispflow_gemm_plugin_v1_t* (*aispflow_gemm_plugin_v1_fn_t)(void);

#if defined(__GNUC__)
#define AISPFLOW_PLUGIN_API __attribute__((visibility("default")))
#else
#define AISPFLOW_PLUGIN_API
#endif

/* The entry point a v1 plugin defines (declared here so that a mismatched definition does not compile). */
AISPFLOW_PLUGIN_API const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* AISPFLOW_PROVIDER_H */
