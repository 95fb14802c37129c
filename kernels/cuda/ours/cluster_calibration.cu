// The calibration launches behind measured_gpc_places (cluster_calibration.hpp).
#include "kernels/cuda/ours/cluster_calibration.hpp"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "kernels/common/cluster_places.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cluster_launch.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/hopper_params.hpp"

namespace aispflow::kernels::cuda::ours {
namespace {

// Each CTA writes the SM it runs on. It holds the shared memory it is launched with until every CTA of the grid
// has written (the host launches no more CTAs than fit at once; 50 ms at most), so that no SM frees up and takes a
// second CTA: the placement is that of a grid whose CTAs all run together, as the persistent GEMM's do.
__global__ void record_sm_kernel(int* sm_of_cta, unsigned* written, unsigned ctas) {
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    sm_of_cta[blockIdx.x] = int(sm);
    __threadfence();
    atomicAdd(written, 1u);
    // (Bounded: should the grid not all fit at once after all, the calibration ends instead of hanging.)
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (atomicAdd(written, 0u) < ctas && now - start < 50000000ull);
  }
}

// The SM of each CTA of one launch of `ctas` CTAs in clusters of `cluster_size`, `threads` each.
std::vector<int> record_placement(unsigned ctas, unsigned threads, std::size_t smem_bytes, unsigned cluster_size) {
  int* sm_of_cta = nullptr;
  unsigned* written = nullptr;
  AISPFLOW_CUDA_CHECK(cudaMalloc(&sm_of_cta, ctas * sizeof(int)));
  AISPFLOW_CUDA_CHECK(cudaMalloc(&written, sizeof(unsigned)));
  AISPFLOW_CUDA_CHECK(cudaMemset(written, 0, sizeof(unsigned)));
  const ClusterLaunchConfig cfg(ctas, threads, smem_bytes, cluster_size, true);
  AISPFLOW_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), record_sm_kernel, sm_of_cta, written, ctas));
  AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> out(ctas);
  AISPFLOW_CUDA_CHECK(cudaMemcpy(out.data(), sm_of_cta, ctas * sizeof(int), cudaMemcpyDeviceToHost));
  AISPFLOW_CUDA_CHECK(cudaFree(sm_of_cta));
  AISPFLOW_CUDA_CHECK(cudaFree(written));
  return out;
}

// sm_group[s]: the GPC of SM s (numbered by the big clusters that ran there), -1 where none ran. A property of the
// device, measured once per device; `smem_bytes` (more than half an SM's) keeps one CTA on each SM.
const std::vector<int>& gpc_groups(int device, std::size_t smem_bytes) {
  static std::map<int, std::vector<int>> known;   // (the caller holds measured_gpc_places' lock)
  if (const auto it = known.find(device); it != known.end()) return it->second;
  std::vector<int> group(std::size_t(system_info().devices.at(std::size_t(device)).sm_count), -1);
  AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(record_sm_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (unsigned size : {16u, 8u}) {
    const ClusterLaunchConfig probe(size * unsigned(group.size()), 32, smem_bytes, size, true);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, record_sm_kernel, probe.get()) != cudaSuccess || clusters <= 0) {
      (void)cudaGetLastError();   // this size is not allowed here: try the next
      continue;
    }
    const std::vector<int> sms = record_placement(unsigned(clusters) * size, 32, smem_bytes, size);
    for (std::size_t cta = 0; cta < sms.size(); ++cta) group[std::size_t(sms[cta])] = int(cta / size);
    break;
  }
  return known[device] = group;
}

}  // namespace

std::vector<int> measured_gpc_places(int cluster_size, int clusters, std::size_t smem_bytes) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, std::size_t>, std::vector<int>> known;
  int device = 0;
  AISPFLOW_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard lock(mutex);
  const auto key = std::make_tuple(device, cluster_size, clusters, smem_bytes);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(record_sm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
  const std::vector<int>& groups = gpc_groups(device, smem_bytes);
  // The GEMM's own block size, so that nothing but the cluster shape and shared memory could place it otherwise.
  const std::vector<int> sms = record_placement(unsigned(clusters * cluster_size), kThreads, smem_bytes, unsigned(cluster_size));
  std::vector<int> cluster_sm(static_cast<std::size_t>(clusters));
  for (int c = 0; c < clusters; ++c) cluster_sm[std::size_t(c)] = sms[std::size_t(c * cluster_size)];
  return known[key] = gpc_cluster_places(cluster_sm, groups);
}

}  // namespace aispflow::kernels::cuda::ours
