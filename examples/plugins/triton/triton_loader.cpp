// A generic loader for Triton kernels compiled ahead of time (aot.py): the `triton` GEMM provider of aispflow's
// plugin ABI (include/aispflow/provider.h). It reads manifest.tsv (launch metadata) from the directory named by
// $AISPFLOW_TRITON_KERNELS, else `triton_kernels/` beside this .so; loads each cubin with cuModuleLoadData on
// first use and launches it with cuLaunchKernel, grid and shared memory from the manifest. No Python runs.
//
// The CUDA driver (libcuda.so.1) is opened at first launch, not linked: the plugin loads, lists its
// configurations and answers check() on a machine without a GPU or a driver (CI, validation).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "aispflow/provider.h"

namespace {

// The few driver API entry points used, typed by hand (no CUDA headers needed to build this plugin).
using CUresult = int;
using CUmodule = void*;
using CUfunction = void*;
using cuModuleLoadData_t = CUresult (*)(CUmodule*, const void*);
using cuModuleGetFunction_t = CUresult (*)(CUfunction*, CUmodule, const char*);
using cuFuncSetAttribute_t = CUresult (*)(CUfunction, int, int);
using cuLaunchKernel_t = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      void*, void**, void**);
constexpr int kMaxDynamicSharedBytes = 8;   // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

enum Error { kOk = 0, kNoDriver = 1, kLoadFailed = 2, kLaunchFailed = 3, kBadConfig = 4 };

struct Kernel {
  std::string name, dtype, layout, cubin_path, symbol, sha256;
  int num_warps = 0, shared_bytes = 0, block_m = 0, block_n = 0, block_k = 0;
  CUfunction function = nullptr;   // loaded on first launch
};

struct State {
  std::string dir, problem;   // problem: why no kernel is available (empty when the manifest was read)
  std::vector<Kernel> kernels;
  std::vector<const char*> names;
  cuModuleLoadData_t load = nullptr;
  cuModuleGetFunction_t get_function = nullptr;
  cuFuncSetAttribute_t set_attribute = nullptr;
  cuLaunchKernel_t launch = nullptr;
  std::mutex mutex;
};
State g;

std::string kernels_dir() {
  if (const char* env = std::getenv("AISPFLOW_TRITON_KERNELS"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&kernels_dir), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    return self.substr(0, self.rfind('/') + 1) + "triton_kernels";
  }
  return "triton_kernels";
}

void read_manifest() {
  g.dir = kernels_dir();
  std::ifstream in(g.dir + "/manifest.tsv");
  if (!in) {
    g.problem = "no Triton kernels: " + g.dir + "/manifest.tsv not found (build with -DAISPFLOW_TRITON_AOT=ON, or run "
                "examples/plugins/triton/aot.py DIR and set AISPFLOW_TRITON_KERNELS=DIR)";
    return;
  }
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    Kernel k;
    int group_m = 0, stages = 0;
    std::string args;
    row >> k.name >> k.dtype >> k.layout >> k.cubin_path >> k.symbol >> k.num_warps >> k.shared_bytes >> k.block_m >>
        k.block_n >> k.block_k >> group_m >> stages >> k.sha256 >> args;
    if (!row || args != "a,b,c,scale_a,scale_b,M,N,K,global_scratch,profile_scratch") {
      g.problem = "malformed line in " + g.dir + "/manifest.tsv: " + line;
      g.kernels.clear();
      return;
    }
    k.cubin_path = g.dir + "/" + k.cubin_path;
    g.kernels.push_back(k);
  }
  if (g.kernels.empty()) g.problem = g.dir + "/manifest.tsv lists no kernel";
}

const char* dtype_of(const aispflow_gemm_case_v1_t* c) { return c->dtype_name; }

const char* check(const aispflow_gemm_case_v1_t* c, int config) {
  if (!g.problem.empty()) return g.problem.c_str();
  const Kernel& k = g.kernels[std::size_t(config)];
  if (k.dtype != dtype_of(c)) return "compiled for another dtype";
  if (k.layout != (c->layout == AISPFLOW_LAYOUT_NT ? "nt" : "nn")) return "compiled for another B layout";
  if (c->batch != 1) return "batched GEMMs are not compiled (batch must be 1)";
  if (c->n % 16 != 0 || c->k % k.block_k != 0)
    return "compiled for N a multiple of 16 and K a multiple of the tile's K (aligned, unmasked loads)";
  if (c->m > INT32_MAX || c->n > INT32_MAX || c->k > INT32_MAX) return "dimensions above 2^31 - 1";
  if (c->compute_capability != 0 && c->compute_capability != 90) return "cubins are built for sm_90a only";
  return nullptr;
}

// Narrow-M tiles for decode shapes, the large tile otherwise: the first kernel of the case's kind that fits.
int default_config(const aispflow_gemm_case_v1_t* c) {
  const int want_m = c->m <= 64 ? 64 : 128;
  int fallback = -1;
  for (int i = 0; i < int(g.kernels.size()); ++i) {
    if (check(c, i)) continue;
    if (g.kernels[std::size_t(i)].block_m == want_m) return i;
    if (fallback < 0) fallback = i;
  }
  return fallback < 0 ? 0 : fallback;
}

bool open_driver() {
  if (g.launch) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  g.load = reinterpret_cast<cuModuleLoadData_t>(dlsym(lib, "cuModuleLoadData"));
  g.get_function = reinterpret_cast<cuModuleGetFunction_t>(dlsym(lib, "cuModuleGetFunction"));
  g.set_attribute = reinterpret_cast<cuFuncSetAttribute_t>(dlsym(lib, "cuFuncSetAttribute"));
  g.launch = reinterpret_cast<cuLaunchKernel_t>(dlsym(lib, "cuLaunchKernel"));
  return g.load && g.get_function && g.set_attribute && g.launch;
}

// Loads the cubin into the current context (the one aispflow made current) on the first launch, which is always a
// verification run outside graph capture.
int ensure_loaded(Kernel& k) {
  if (k.function) return kOk;
  std::lock_guard lock(g.mutex);
  if (k.function) return kOk;
  if (!open_driver()) return kNoDriver;
  std::ifstream in(k.cubin_path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (image.empty() || g.load(&module, image.data()) != 0 || g.get_function(&function, module, k.symbol.c_str()) != 0)
    return kLoadFailed;
  if (g.set_attribute(function, kMaxDynamicSharedBytes, k.shared_bytes) != 0) return kLoadFailed;
  k.function = function;
  return kOk;
}

int run(const aispflow_gemm_case_v1_t* c, int config, const void* a, const void* b, void* out, const float* scale_a,
        const float* scale_b, const void*, void*, void* stream) {
  if (config < 0 || config >= int(g.kernels.size())) return kBadConfig;
  Kernel& k = g.kernels[std::size_t(config)];
  if (const int rc = ensure_loaded(k); rc != kOk) return rc;
  int m = int(c->m), n = int(c->n), kk = int(c->k);
  void* no_scratch = nullptr;
  void* params[] = {&a, &b, &out, &scale_a, &scale_b, &m, &n, &kk, &no_scratch, &no_scratch};
  const unsigned grid = unsigned((c->m + k.block_m - 1) / k.block_m * ((c->n + k.block_n - 1) / k.block_n));
  return g.launch(k.function, grid, 1, 1, unsigned(k.num_warps * 32), 1, 1, unsigned(k.shared_bytes), stream, params,
                  nullptr) == 0 ? kOk : kLaunchFailed;
}

const char* error_string(int code) {
  switch (code) {
    case kNoDriver: return "cannot open the CUDA driver (libcuda.so.1)";
    case kLoadFailed: return "cuModuleLoadData / cuModuleGetFunction failed for the cubin";
    case kLaunchFailed: return "cuLaunchKernel failed";
    case kBadConfig: return "no such configuration";
    default: return nullptr;
  }
}

const char* kMissing[] = {"unavailable"};
aispflow_gemm_provider_v1_t g_provider;
aispflow_gemm_plugin_v1_t g_plugin;

}  // namespace

extern "C" AISPFLOW_PLUGIN_API const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1() {
  static std::once_flag once;
  std::call_once(once, [] {
    read_manifest();
    for (const auto& k : g.kernels) g.names.push_back(k.name.c_str());
    g_provider.name = "triton";
    g_provider.description = "Triton matmul (examples/plugins/triton/matmul.py), compiled ahead of time for sm_90a";
    g_provider.dtypes = AISPFLOW_DTYPE_BF16 | AISPFLOW_DTYPE_FP8_E4M3;
    g_provider.layouts = AISPFLOW_LAYOUT_NN | AISPFLOW_LAYOUT_NT;
    g_provider.epilogues = AISPFLOW_EPILOGUE_NONE;
    // Without kernels the provider still exists, with one placeholder configuration that check() declines with the
    // reason: sweeps record `skipped: no Triton kernels: ...` instead of failing to load the workflow.
    g_provider.config_count = g.names.empty() ? 1 : int(g.names.size());
    g_provider.config_names = g.names.empty() ? kMissing : g.names.data();
    g_provider.check = [](const aispflow_gemm_case_v1_t* c, int config) -> const char* {
      return g.kernels.empty() ? g.problem.c_str() : check(c, config);
    };
    g_provider.default_config = default_config;
    g_provider.run = run;
    g_provider.error_string = error_string;
    g_plugin = {AISPFLOW_GEMM_PLUGIN_ABI_VERSION, "aispflow-triton-loader", 1, &g_provider};
  });
  return &g_plugin;
}
