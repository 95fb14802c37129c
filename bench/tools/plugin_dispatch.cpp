// The cost of going through aispflow's plugin ABI to launch a kernel, against launching the same cubin directly:
//
//   plugin_dispatch PLUGIN.so KERNELS_DIR OUT.json
//
// On a 16 x 4096 x 4096 bf16 decode GEMM (the `triton` provider's default configuration for it), both ways enqueue
// the same kernel with the same arguments on one stream:
//   plugin: what a sweep's launch does: std::function -> the provider table's run() -> the plugin's lookup ->
//           cuLaunchKernel;
//   direct: cuLaunchKernel on the same CUfunction, loaded here from the same cubin.
// Host time per enqueue (batches of 100, the stream drained between batches so the queue never blocks) and GPU
// time per launch (1000 back to back, events) are reported; batches of the two ways alternate. The dispatch
// overhead is the difference in host time per enqueue.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/gemm_plugin.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"

using namespace aispflow::kernels;
using namespace aispflow::kernels::cuda;

namespace {

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + std::to_string(int(r)));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PLUGIN.so KERNELS_DIR OUT.json\n", argv[0]);
    return 2;
  }
  const std::string kernels_dir = argv[2];
  const GemmPluginProvider triton = load_gemm_plugin(argv[1]).at(0);
  const aispflow_gemm_provider_v1_t* table = triton.table;

  AISPFLOW_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  AISPFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  GemmShape shape;
  shape.name = "decode_16x4096x4096";
  shape.m = 16;
  shape.n = shape.k = 4096;
  const LtDtype spec = *lt_dtype("bf16");
  GemmProblem problem(shape, spec, 42, stream, 1);

  aispflow_gemm_case_v1_t gemm{};
  gemm.m = shape.m;
  gemm.n = shape.n;
  gemm.k = shape.k;
  gemm.batch = 1;
  gemm.dtype = AISPFLOW_DTYPE_BF16;
  gemm.dtype_name = "bf16";
  gemm.layout = AISPFLOW_LAYOUT_NN;
  gemm.epilogue = AISPFLOW_EPILOGUE_NONE;
  gemm.ab_elem = gemm.c_elem = AISPFLOW_ELEM_BF16;
  gemm.scale_a = gemm.scale_b = 1;
  gemm.device = 0;
  gemm.compute_capability = 90;
  const int config = table->default_config(&gemm);
  const std::string name = table->config_names[config];

  // The same launch a sweep makes (kernels/cuda/plugin_provider.cpp).
  const std::function<void(cudaStream_t, int)> plugin_launch = [&](cudaStream_t s, int) {
    if (int code = table->run(&gemm, config, problem.a(), problem.b(), problem.c(), nullptr, nullptr, nullptr, nullptr, s))
      throw std::runtime_error("run() returned " + std::to_string(code));
  };
  plugin_launch(stream, 0);   // loads the module
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  const Comparison cmp = problem.check_output(stream);

  // The same cubin, loaded and launched directly.
  std::ifstream manifest(kernels_dir + "/manifest.tsv");
  std::string line, symbol, cubin;
  int warps = 0, smem = 0, bm = 0, bn = 0;
  for (std::string row; std::getline(manifest, row);) {
    std::istringstream in(row);
    std::string n, dtype, layout, file;
    in >> n >> dtype >> layout >> file >> symbol >> warps >> smem >> bm >> bn;
    if (n == name) {
      cubin = kernels_dir + "/" + file;
      break;
    }
  }
  std::ifstream in(cubin, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CUmodule module;
  CUfunction function;
  check_cu(cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
  check_cu(cuModuleGetFunction(&function, module, symbol.c_str()), "cuModuleGetFunction");
  check_cu(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), "cuFuncSetAttribute");
  const void *a = problem.a(), *b = problem.b();
  void* c = problem.c();
  const float *sa = nullptr, *sb = nullptr;
  int m = 16, n = 4096, k = 4096;
  void* scratch = nullptr;
  void* params[] = {&a, &b, &c, &sa, &sb, &m, &n, &k, &scratch, &scratch};
  const unsigned grid = unsigned((m + bm - 1) / bm * ((n + bn - 1) / bn));
  const std::function<void(cudaStream_t, int)> direct_launch = [&](cudaStream_t s, int) {
    check_cu(cuLaunchKernel(function, grid, 1, 1, unsigned(warps * 32), 1, 1, unsigned(smem), s, params, nullptr),
             "cuLaunchKernel");
  };

  constexpr int kBatch = 100, kRounds = 40, kGpuLaunches = 1000;
  std::vector<double> host_plugin, host_direct;
  auto host_batch = [&](const std::function<void(cudaStream_t, int)>& launch, std::vector<double>& out) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) launch(stream, 0);
    const auto t1 = std::chrono::steady_clock::now();
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
    out.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  };
  for (int r = 0; r < kRounds; ++r) {
    host_batch(plugin_launch, host_plugin);
    host_batch(direct_launch, host_direct);
  }
  cudaEvent_t e0, e1;
  AISPFLOW_CUDA_CHECK(cudaEventCreate(&e0));
  AISPFLOW_CUDA_CHECK(cudaEventCreate(&e1));
  auto gpu_us = [&](const std::function<void(cudaStream_t, int)>& launch) {
    AISPFLOW_CUDA_CHECK(cudaEventRecord(e0, stream));
    for (int i = 0; i < kGpuLaunches; ++i) launch(stream, 0);
    AISPFLOW_CUDA_CHECK(cudaEventRecord(e1, stream));
    AISPFLOW_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    AISPFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return double(ms) * 1000.0 / kGpuLaunches;
  };
  std::vector<double> gpu_plugin, gpu_direct;
  for (int r = 0; r < 5; ++r) {
    gpu_plugin.push_back(gpu_us(plugin_launch));
    gpu_direct.push_back(gpu_us(direct_launch));
  }
  const auto& dev = system_info().devices.at(0);
  const nlohmann::json out = {
      {"what", "host cost of one launch through aispflow's plugin ABI vs cuLaunchKernel on the same cubin"},
      {"device", dev.name},
      {"driver", system_info().driver_version.value_or("?")},
      {"shape", {{"m", 16}, {"n", 4096}, {"k", 4096}, {"dtype", "bf16"}}},
      {"kernel", name},
      {"verified_first_launch", cmp.non_finite == 0 && cmp.max_rel_err <= problem.tolerance()},
      {"max_rel_err", cmp.max_rel_err},
      {"host_us_per_enqueue", {{"plugin", median(host_plugin)}, {"direct", median(host_direct)},
                               {"overhead", median(host_plugin) - median(host_direct)},
                               {"batches", kRounds}, {"launches_per_batch", kBatch}}},
      {"gpu_us_per_launch_back_to_back", {{"plugin", median(gpu_plugin)}, {"direct", median(gpu_direct)},
                                          {"launches", kGpuLaunches}, {"rounds", 5}}},
      {"plugin", triton.plugin_json()}};
  std::ofstream(argv[3]) << out.dump(1) << "\n";
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
