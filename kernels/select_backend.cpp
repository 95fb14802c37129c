// Chooses the backend for --backend auto|cpu|cuda. The CUDA backend comes from its plugin, loaded only
// here, on first use (kernels/cuda_plugin.hpp).
#include <stdexcept>

#include "kernels/common/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cuda_plugin.hpp"

namespace aispflow::kernels {

std::vector<std::string> available_backends() {
  if (cuda_plugin_built()) return {"auto", "cpu", "cuda"};
  return {"auto", "cpu"};
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend_from_plugin();
  if (name == "auto") return cuda_backend_usable(nullptr) ? make_cuda_backend_from_plugin() : make_cpu_backend();
  throw std::invalid_argument("unknown backend '" + name + "' (expected auto, cpu or cuda)");
}

}  // namespace aispflow::kernels
