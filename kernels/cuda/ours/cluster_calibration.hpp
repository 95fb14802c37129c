#pragma once
// Where the hardware puts a persistent cluster launch, measured on the device (NOTES.md step 126): the input of
// gpc_cluster_places (kernels/common/cluster_places.hpp).
#include <cstddef>
#include <vector>

namespace aispflow::kernels::cuda::ours {

// place[i] for cluster i of a launch of `clusters` clusters of `cluster_size` CTAs with `smem_bytes` of dynamic
// shared memory each (the GEMM's own launch shape, so that the hardware places both alike), in GPC order.
// Measured once per process and shape on the current device: one launch of that shape records each CTA's SM; a
// launch of clusters of 16 CTAs (8 where 16 is not allowed), once per device, learns which SMs share a GPC. A
// failed launch throws CudaError (the caller runs on Hopper only, where cluster launches exist).
std::vector<int> measured_gpc_places(int cluster_size, int clusters, std::size_t smem_bytes);

}  // namespace aispflow::kernels::cuda::ours
