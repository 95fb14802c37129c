#pragma once
// A 1-D kernel launch configuration with a thread-block cluster size, for cudaLaunchKernelEx and
// cudaOccupancyMaxActiveClusters. Header-only and free of the project's other headers, so that standalone probes
// (bench/tools/placement_probe.cu) use it too.
#include <cuda_runtime.h>

#include <cstddef>

namespace aispflow::kernels::cuda {

// `ctas` CTAs of `threads` threads and `smem_bytes` of dynamic shared memory. With `clustered`, a cluster launch
// of `cluster_ctas` CTAs along x; without, a plain grid (the attribute is left out: even single-CTA clusters are
// placed on the SMs otherwise than a plain grid's CTAs, NOTES.md step 72). The configuration points at the
// attribute this object holds, so it is neither copied nor moved.
class ClusterLaunchConfig {
 public:
  ClusterLaunchConfig(unsigned ctas, unsigned threads, std::size_t smem_bytes, unsigned cluster_ctas, bool clustered,
                      cudaStream_t stream = nullptr) {
    config_.gridDim = dim3(ctas, 1, 1);
    config_.blockDim = dim3(threads, 1, 1);
    config_.dynamicSmemBytes = smem_bytes;
    config_.stream = stream;
    cluster_.id = cudaLaunchAttributeClusterDimension;
    cluster_.val.clusterDim.x = cluster_ctas;
    cluster_.val.clusterDim.y = 1;
    cluster_.val.clusterDim.z = 1;
    config_.attrs = &cluster_;
    config_.numAttrs = clustered ? 1 : 0;
  }
  ClusterLaunchConfig(const ClusterLaunchConfig&) = delete;
  ClusterLaunchConfig& operator=(const ClusterLaunchConfig&) = delete;

  const cudaLaunchConfig_t* get() const { return &config_; }

 private:
  cudaLaunchConfig_t config_{};
  cudaLaunchAttribute cluster_{};
};

}  // namespace aispflow::kernels::cuda
