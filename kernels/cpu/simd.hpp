#pragma once
// One SIMD register of floats or doubles for the ISA this file is compiled for (the CPU kernels are built
// with -march=native): AVX-512, AVX2+FMA, or a portable 16-byte GCC vector. Used by the blocked GEMM
// micro-kernel and the FMA compute probe.
//
// Intrinsics rather than plain `a * b + c`: in ISO C++ mode GCC does not fuse a multiply and an add into
// one FMA instruction, and FMAs are the whole point of both users.
#include <cstring>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace aispflow::kernels::simd {

#if defined(__AVX512F__)
inline constexpr const char* kIsa = "avx512f";
inline constexpr int kRegisters = 32;
struct VecF {
  using T = __m512;
  using Scalar = float;
  static constexpr int width = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T load(const float* p) { return _mm512_load_ps(p); }     // 64-byte aligned
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static float sum(T v) { return _mm512_reduce_add_ps(v); }
};
struct VecD {
  using T = __m512d;
  using Scalar = double;
  static constexpr int width = 8;
  static T set1(double x) { return _mm512_set1_pd(x); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_pd(a, b, c); }
  static double sum(T v) { return _mm512_reduce_add_pd(v); }
};
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr const char* kIsa = "avx2+fma";
inline constexpr int kRegisters = 16;
struct VecF {
  using T = __m256;
  using Scalar = float;
  static constexpr int width = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T load(const float* p) { return _mm256_load_ps(p); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static float sum(T v) {
    alignas(32) float x[8];
    _mm256_store_ps(x, v);
    return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
  }
};
struct VecD {
  using T = __m256d;
  using Scalar = double;
  static constexpr int width = 4;
  static T set1(double x) { return _mm256_set1_pd(x); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_pd(a, b, c); }
  static double sum(T v) {
    alignas(32) double x[4];
    _mm256_store_pd(x, v);
    return x[0] + x[1] + x[2] + x[3];
  }
};
#else
inline constexpr const char* kIsa = "generic-vec16B";
inline constexpr int kRegisters = 16;
// Portable fallback: GCC vectors of 16 bytes (SSE, NEON, or scalar code where neither exists). Here a
// multiply-add may compile to two instructions; the probes still count 2 FLOP per element, which is right.
struct VecF {
  typedef float T __attribute__((vector_size(16)));
  using Scalar = float;
  static constexpr int width = 4;
  static T zero() { return T{0, 0, 0, 0}; }
  static T set1(float x) { return T{x, x, x, x}; }
  static T load(const float* p) { T v; std::memcpy(&v, p, sizeof v); return v; }
  static T loadu(const float* p) { return load(p); }
  static void storeu(float* p, T v) { std::memcpy(p, &v, sizeof v); }
  static T broadcast(const float* p) { return set1(*p); }
  static T fma(T a, T b, T c) { return a * b + c; }
  static T add(T a, T b) { return a + b; }
  static float sum(T v) { return v[0] + v[1] + v[2] + v[3]; }
};
struct VecD {
  typedef double T __attribute__((vector_size(16)));
  using Scalar = double;
  static constexpr int width = 2;
  static T set1(double x) { return T{x, x}; }
  static T fma(T a, T b, T c) { return a * b + c; }
  static double sum(T v) { return v[0] + v[1]; }
};
#endif

}  // namespace aispflow::kernels::simd
