#pragma once
// The first two rungs of our kernel ladder: ours.naive (naive.cu) and ours.tiled (tiled.cu).
#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda::ours {

std::vector<std::unique_ptr<OurKernel>> naive_kernels();
std::vector<std::unique_ptr<OurKernel>> tiled_kernels();
// Families with one configuration per dtype: the first that accepts the case (else the first).
std::size_t pick_first(const std::vector<std::unique_ptr<OurKernel>>& list, const GemmCase& c);

}  // namespace aispflow::kernels::cuda::ours
