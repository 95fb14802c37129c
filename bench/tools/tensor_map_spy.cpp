// What a library's GEMM kernel is launched with: a CUPTI subscriber, loaded with LD_PRELOAD beside any program
// (NOTES.md step 126), that prints
//   - every TMA descriptor the process encodes through the driver (cuTensorMapEncodeTiled: data type, global
//     dims and strides, box, swizzle, L2 promotion, interleave, out-of-bounds fill), numbered;
//   - the first launches of each kernel: name, grid, block, cluster, dynamic shared memory, and each of its
//     parameters (a 128-byte parameter equal to an encoded descriptor is named by that descriptor's number;
//     any other is dumped in hex, so that a descriptor built without the driver can be read against ours).
// It is how we read the boxes and multicast layout of cuBLASLt's nvjet kernels, which cuobjdump cannot see.
//   LD_PRELOAD=libtensor_map_spy.so program ...     SPY_LAUNCHES=n (default 2) launches printed per kernel name
// Not used with ncu (both subscribe to CUPTI).
#include <cuda.h>
#include <cupti.h>  // with the driver callbacks' parameter structs (generated_cuda_meta.h)

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct EncodedMap {
  std::array<unsigned char, 128> bytes{};
  std::string text;
};

std::mutex g_mutex;
std::vector<EncodedMap> g_maps;
std::map<std::string, int> g_launches_per_kernel;
int g_launch_limit = 2;
thread_local bool g_inside = false;  // our own driver calls inside a callback are not reported again

template <class T>
std::string list(const T* values, unsigned count) {
  std::string out = "[";
  for (unsigned i = 0; i < count; ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "]";
}

std::string hex(const unsigned char* bytes, std::size_t size) {
  std::string out;
  char two[4];
  for (std::size_t i = 0; i < size; ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    out += two;
    if (i % 16 == 15 && i + 1 < size) out += ' ';
  }
  return out;
}

void on_encode(const cuTensorMapEncodeTiled_params* p) {
  // The box's bytes a load fetches: the product of the box's dims times the element size.
  // CUtensorMapDataType's order: u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz.
  static const unsigned element_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  const unsigned esize = unsigned(p->tensorDataType) < 13 ? element_bytes[p->tensorDataType] : 0;
  unsigned long long box_bytes = esize;
  for (unsigned i = 0; i < p->tensorRank; ++i) box_bytes *= p->boxDim[i];
  EncodedMap map;
  std::memcpy(map.bytes.data(), p->tensorMap, 128);
  char head[160];
  std::snprintf(head, sizeof head, "dtype=%d rank=%u addr=%p ", int(p->tensorDataType), p->tensorRank,
                p->globalAddress);
  map.text = std::string(head) + "dims=" + list(p->globalDim, p->tensorRank) +
             " strides_bytes=" + list(p->globalStrides, p->tensorRank > 0 ? p->tensorRank - 1 : 0) +
             " box=" + list(p->boxDim, p->tensorRank) + " element_strides=" + list(p->elementStrides, p->tensorRank) +
             " interleave=" + std::to_string(int(p->interleave)) + " swizzle=" + std::to_string(int(p->swizzle)) +
             " l2_promotion=" + std::to_string(int(p->l2Promotion)) + " oob_fill=" + std::to_string(int(p->oobFill)) +
             " box_bytes=" + std::to_string(box_bytes);
  std::lock_guard lock(g_mutex);
  g_maps.push_back(map);
  std::printf("[spy] encode #%zu %s\n[spy]   bytes %s\n", g_maps.size() - 1, map.text.c_str(),
              hex(map.bytes.data(), 128).c_str());
}

// Prints the launch once per kernel name up to the limit. `params` is either the kernelParams array or null with
// `buffer` the packed argument buffer of CU_LAUNCH_PARAM_BUFFER_POINTER.
void on_launch(const char* symbol, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               unsigned smem, const std::string& extra_text, void** params, const unsigned char* buffer) {
  // CUPTI names the launched symbol; the driver's own name for the function is the fallback.
  const char* name = symbol;
  g_inside = true;
  if ((!name || !*name) && (cuFuncGetName(&name, f) != CUDA_SUCCESS || !name)) name = "?";
  std::lock_guard lock(g_mutex);
  if (++g_launches_per_kernel[name] > g_launch_limit) { g_inside = false; return; }
  int cluster[3] = {0, 0, 0};
  cuFuncGetAttribute(&cluster[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
  cuFuncGetAttribute(&cluster[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f);
  cuFuncGetAttribute(&cluster[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f);
  int regs = 0;
  if (cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS) {
    CUdevice device = 0;
    cuCtxGetDevice(&device);
    cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, reinterpret_cast<CUkernel>(f), device);
    cuKernelGetAttribute(&cluster[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, reinterpret_cast<CUkernel>(f), device);
    cuKernelGetAttribute(&cluster[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, reinterpret_cast<CUkernel>(f), device);
    cuKernelGetAttribute(&cluster[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, reinterpret_cast<CUkernel>(f), device);
  }
  std::printf("[spy] launch %s\n[spy]   grid=(%u,%u,%u) block=(%u,%u,%u) dyn_smem=%u regs=%d compiled_cluster=(%d,%d,%d)%s\n",
              name, gx, gy, gz, bx, by, bz, smem, regs, cluster[0], cluster[1], cluster[2], extra_text.c_str());
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    // A launch may name a context-independent CUkernel where a CUfunction is expected; ask both ways.
    CUresult rc = cuFuncGetParamInfo(f, i, &offset, &size);
    if (rc != CUDA_SUCCESS) rc = cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &offset, &size);
    if (rc != CUDA_SUCCESS) {
      if (i == 0 && params) {
        // No sizes: the parameter pointers, and 1 KB from the first, which a library's packed struct fills.
        std::printf("[spy]   (no parameter info: %d) first pointers:", int(rc));
        for (int p = 0; p < 8; ++p) std::printf(" %p", params[p]);
        std::printf("\n[spy]   bytes from the first: %s\n", hex(static_cast<const unsigned char*>(params[0]), 1024).c_str());
      }
      break;
    }
    const unsigned char* value = params ? static_cast<const unsigned char*>(params[i]) : buffer ? buffer + offset : nullptr;
    if (!value) break;
    int match = -1;
    if (size == 128)
      for (std::size_t m = 0; m < g_maps.size(); ++m)
        if (std::memcmp(g_maps[m].bytes.data(), value, 128) == 0) match = int(m);
    if (match >= 0)
      std::printf("[spy]   param %zu @%zu size %zu = encode #%d (%s)\n", i, offset, size, match, g_maps[match].text.c_str());
    else
      std::printf("[spy]   param %zu @%zu size %zu = %s\n", i, offset, size, hex(value, size > 512 ? 512 : size).c_str());
  }
  std::fflush(stdout);
  g_inside = false;
}

std::string launch_attributes(const CUlaunchConfig* config) {
  std::string out;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    char text[96];
    switch (a.id) {
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        std::snprintf(text, sizeof text, " cluster=(%u,%u,%u)", a.value.clusterDim.x, a.value.clusterDim.y,
                      a.value.clusterDim.z);
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        std::snprintf(text, sizeof text, " programmatic_serialization=%d", a.value.programmaticStreamSerializationAllowed);
        break;
      default: std::snprintf(text, sizeof text, " attr%d", int(a.id));
    }
    out += text;
  }
  return out;
}

// CU_LAUNCH_PARAM_BUFFER_POINTER's buffer, if `extra` carries one.
const unsigned char* packed_buffer(void** extra) {
  for (std::size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2)
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) return static_cast<const unsigned char*>(extra[i + 1]);
  return nullptr;
}

void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || g_inside) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (id == CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled) {
    if (info->callbackSite == CUPTI_API_EXIT && *static_cast<CUresult*>(info->functionReturnValue) == CUDA_SUCCESS)
      on_encode(static_cast<const cuTensorMapEncodeTiled_params*>(info->functionParams));
    return;
  }
  if (info->callbackSite != CUPTI_API_ENTER) return;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    const auto* p = static_cast<const cuLaunchKernel_params*>(info->functionParams);
    on_launch(info->symbolName, p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
              p->sharedMemBytes, "", p->kernelParams, packed_buffer(p->extra));
  } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const auto* p = static_cast<const cuLaunchKernelEx_params*>(info->functionParams);
    const CUlaunchConfig* c = p->config;
    on_launch(info->symbolName, p->f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
              c->sharedMemBytes, launch_attributes(c), p->kernelParams, packed_buffer(p->extra));
  }
}

struct Subscriber {
  CUpti_SubscriberHandle handle{};
  Subscriber() {
    if (const char* env = std::getenv("SPY_LAUNCHES")) g_launch_limit = std::atoi(env);
    if (cuptiSubscribe(&handle, on_driver_call, nullptr) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "[spy] cuptiSubscribe failed (is another CUPTI client, e.g. ncu, attached?)\n");
      return;
    }
    for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
      cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_DRIVER_API, id);
    std::printf("[spy] subscribed\n");
  }
};
Subscriber g_subscriber;

}  // namespace
