// Where the hardware places CTAs: for a plain grid and for cluster launches of 2, 4, 8 and 16 CTAs, each CTA's
// %smid by blockIdx, one CTA per SM (200 KB of shared memory each, as our GEMM kernels' 227 KB). A cluster's CTAs
// share a GPC, so the 16-CTA clusters name a GPC's SMs; consecutive plain-grid CTAs show which tiles run side by
// side. NOTES.md step 94 reads it (bench/results/h100/ours_probe/placement-22-step94-h100.txt).
//   placement_probe        one line per launch: "cluster N: blockIdx:smid s0 s1 ..."
//   placement_probe KB CTAS  the same with KB KB of shared memory a CTA (two CTAs fit an SM below ~113 KB) and a
//                          grid of CTAS CTAs, each line ending with how many distinct SMs the grid ran on (NOTES.md
//                          step 98: whether a cluster launch spreads 128 CTAs that could pair up on 64 SMs)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cluster_launch.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace {

__global__ void record_placement(int* smid_of_block) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) smid_of_block[blockIdx.x] = int(smid);
  // Stay resident long enough that every CTA of the launch is placed while the others still run.
  const long long start = clock64();
  while (clock64() - start < 2000000) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int smem_kb = argc > 1 ? std::atoi(argv[1]) : 200;
  const int fixed_grid = argc > 2 ? std::atoi(argv[2]) : 0;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    std::printf("no GPU: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
  }
  try {
    const int smem = smem_kb * 1024;
    AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(record_placement, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    AISPFLOW_CUDA_CHECK(cudaFuncSetAttribute(record_placement, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    aispflow::kernels::cuda::DeviceBuffer smid_of_block(sizeof(int) * std::size_t(std::max(sms, fixed_grid)));
    for (int cluster : {0, 2, 4, 8, 16}) {
      // A whole number of clusters that the GPU can hold at once: 8 and 16 leave some SMs of each GPC idle.
      const int grid = fixed_grid > 0 ? fixed_grid / std::max(cluster, 1) * std::max(cluster, 1)
                       : cluster == 0 ? sms : cluster >= 8 ? (sms / cluster - 1) * cluster : sms / cluster * cluster;
      const aispflow::kernels::cuda::ClusterLaunchConfig cfg(unsigned(grid), 128, smem, unsigned(cluster), cluster > 0);
      AISPFLOW_CUDA_CHECK(cudaMemset(smid_of_block.get(), 0xff, smid_of_block.bytes()));
      AISPFLOW_CUDA_CHECK(cudaLaunchKernelEx(cfg.get(), record_placement, smid_of_block.as<int>()));
      AISPFLOW_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<int> smid(grid);
      AISPFLOW_CUDA_CHECK(cudaMemcpy(smid.data(), smid_of_block.get(), sizeof(int) * grid, cudaMemcpyDeviceToHost));
      std::printf("cluster %d: blockIdx:smid", cluster);
      for (int s : smid) std::printf(" %d", s);
      if (fixed_grid > 0) std::printf("  (%zu distinct SMs)", std::set<int>(smid.begin(), smid.end()).size());
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "placement_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
