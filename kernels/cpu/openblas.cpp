#include "kernels/cpu/openblas.hpp"

#include <dlfcn.h>

namespace aispflow::kernels {

namespace {

OpenBlas load() {
  OpenBlas blas;
  void* handle = nullptr;
  // Debian's libopenblas0-* packages provide the .so.0 name (through alternatives); -dev adds the plain one.
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
  }
  if (!handle) {
    const char* err = ::dlerror();
    blas.error = std::string("cannot load OpenBLAS (libopenblas.so.0): ") + (err ? err : "not found");
    return blas;
  }
  auto resolve = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, symbol));
    if (!fn && blas.error.empty()) blas.error = std::string("OpenBLAS lacks ") + symbol;
  };
  resolve(blas.sgemm, "cblas_sgemm");
  resolve(blas.dgemm, "cblas_dgemm");
  resolve(blas.get_config, "openblas_get_config");
  resolve(blas.get_num_threads, "openblas_get_num_threads");
  return blas;  // the handle stays open for the life of the process
}

}  // namespace

std::string OpenBlas::describe() const {
  if (!loaded()) return "unavailable: " + error;
  const char* config = get_config();
  return std::string(config ? config : "OpenBLAS") + "; threads=" + std::to_string(get_num_threads());
}

const OpenBlas& openblas() {
  static const OpenBlas blas = load();
  return blas;
}

}  // namespace aispflow::kernels
