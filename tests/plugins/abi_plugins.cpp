// Deliberately broken plugins for the loader's checks (tests/unit/test_gemm_plugins.cpp), one per build variant:
//   V2_ONLY     exports only aispflow_gemm_plugin_v2 (a newer ABI than this aispflow loads)
//   BAD_ABI     exports aispflow_gemm_plugin_v1 but says abi_version 99 (built against another header)
//   NO_ENTRY    exports no entry point at all
//   NAME_TAKEN  offers a provider named "cublaslt", which aispflow's own provider uses
//   BAD_TABLE   a provider with an invalid name and no configuration
#include "aispflow/provider.h"

namespace {

int run(const aispflow_gemm_case_v1_t*, int, const void*, const void*, void*, const float*, const float*, const void*,
        void*, void*) {
  return 0;
}
const char* const kConfigs[] = {"only"};

#if defined(NAME_TAKEN)
const char* const kName = "cublaslt";
#elif defined(BAD_TABLE)
const char* const kName = "bad name!";
#else
const char* const kName = "test.abi";
#endif

const aispflow_gemm_provider_v1_t kProvider = {kName, "a broken test plugin", AISPFLOW_DTYPE_BF16, AISPFLOW_LAYOUT_NN,
                                               AISPFLOW_EPILOGUE_NONE, 1, kConfigs, nullptr, nullptr, nullptr, run,
                                               nullptr};
#if defined(BAD_ABI)
const aispflow_gemm_plugin_v1_t kPlugin = {99, "test-bad-abi", 1, &kProvider};
#else
const aispflow_gemm_plugin_v1_t kPlugin = {AISPFLOW_GEMM_PLUGIN_ABI_VERSION, "test-plugin", 1, &kProvider};
#endif

}  // namespace

#if defined(V2_ONLY)
extern "C" AISPFLOW_PLUGIN_API const void* aispflow_gemm_plugin_v2(void) { return &kPlugin; }
#elif defined(NO_ENTRY)
extern "C" AISPFLOW_PLUGIN_API int not_an_aispflow_plugin(void) { return 1; }
#else
extern "C" AISPFLOW_PLUGIN_API const aispflow_gemm_plugin_v1_t* aispflow_gemm_plugin_v1(void) { return &kPlugin; }
#endif
