#pragma once
// Run-time loading of the NVIDIA libraries the CUDA backend uses but does not link (NVML, NCCL: see
// nvml.hpp and nccl.hpp for why each is loaded rather than linked).
#include <dlfcn.h>

#include <string>

namespace aispflow::kernels::cuda {

// dlopen(soname) with RTLD_NOW | RTLD_LOCAL. On failure returns nullptr and sets `why` to
// "<what> not loadable: <the loader's message>".
inline void* open_shared_library(const char* soname, const char* what, std::string& why) {
  void* library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    why = std::string(what) + " not loadable: " + (error ? error : std::string(soname) + " not found");
  }
  return library;
}

// `into` = the address of `name` in `library`, typed as `into` is; nullptr when the library lacks it.
template <class F>
void load_symbol(void* library, const char* name, F& into) {
  into = reinterpret_cast<F>(dlsym(library, name));
}

}  // namespace aispflow::kernels::cuda
