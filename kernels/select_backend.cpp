// Chooses the backend for --backend auto|cpu|cuda.
#include <stdexcept>

#include "kernels/common/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#ifdef AISPFLOW_HAS_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace aispflow::kernels {

std::vector<std::string> available_backends() {
#ifdef AISPFLOW_HAS_CUDA
  return {"auto", "cpu", "cuda"};
#else
  return {"auto", "cpu"};
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
#ifdef AISPFLOW_HAS_CUDA
  if (name == "cuda") {
    std::string why;
    if (!cuda_device_available(&why))
      throw std::invalid_argument("--backend cuda: no usable CUDA device (" + why + ")");
    return make_cuda_backend();
  }
  if (name == "auto") return cuda_device_available(nullptr) ? make_cuda_backend() : make_cpu_backend();
#else
  if (name == "cuda")
    throw std::invalid_argument("--backend cuda: this aispflow was built without CUDA (AISPFLOW_CUDA=OFF or no nvcc)");
  if (name == "auto") return make_cpu_backend();
#endif
  throw std::invalid_argument("unknown backend '" + name + "' (expected auto, cpu or cuda)");
}

}  // namespace aispflow::kernels
