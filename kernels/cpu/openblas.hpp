#pragma once
// The system's OpenBLAS, opened with dlopen the first time a provider or `aispflow hw` asks for it.
// Linking it would load a 35 MB library and start its thread pool -- threads that spin for work for a
// while -- in every `aispflow` process, most of which never multiply a matrix (a fully cached run, or
// `validate`). Only the few entry points aispflow calls are resolved.
#include <string>

#include <cblas.h>   // types and enums only; no symbol of it is linked

namespace aispflow::kernels {

struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  char* (*get_config)() = nullptr;
  int (*get_num_threads)() = nullptr;
  std::string error;   // why it could not be loaded; empty when every pointer above is set
  bool loaded() const { return error.empty(); }
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ... ; threads=N", or "unavailable: <why>".
  std::string describe() const;
};

// Loaded once per process (thread-safe); check loaded() before calling through it.
const OpenBlas& openblas();

}  // namespace aispflow::kernels
