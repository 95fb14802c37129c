#include "kernels/cuda/gemm_data.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/epilogue.cuh"

namespace aispflow::kernels::cuda {

int elem_bytes(Elem e) {
  switch (e) {
    case Elem::f32: return 4;
    case Elem::f16: return 2;
    case Elem::bf16: return 2;
    case Elem::e4m3: return 1;
  }
  return 0;
}

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::f32: return "f32";
    case Elem::f16: return "f16";
    case Elem::bf16: return "bf16";
    case Elem::e4m3: return "e4m3";
  }
  return "?";
}

Epilogue epilogue_from_name(const std::string& name) {
  if (name == "none") return Epilogue::none;
  if (name == "bias") return Epilogue::bias;
  if (name == "bias_gelu") return Epilogue::bias_gelu;
  throw std::invalid_argument("unknown epilogue '" + name + "' (expected none, bias or bias_gelu)");
}

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::none: return "none";
    case Epilogue::bias: return "bias";
    case Epilogue::bias_gelu: return "bias_gelu";
  }
  return "?";
}

namespace {

// ---- element conversion ----------------------------------------------------------------------------
template <Elem E> struct Storage;
template <> struct Storage<Elem::f32> { using type = float; };
template <> struct Storage<Elem::f16> { using type = __half; };
template <> struct Storage<Elem::bf16> { using type = __nv_bfloat16; };
template <> struct Storage<Elem::e4m3> { using type = __nv_fp8_e4m3; };

__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__half x) { return __half2float(x); }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__nv_fp8_e4m3 x) { return float(x); }

template <class T> __device__ inline T from_float(float x);
template <> __device__ inline float from_float<float>(float x) { return x; }
template <> __device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) { return __nv_fp8_e4m3(x); }

// Calls f.template operator()<Elem>() with the compile-time element type.
template <class F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::f32: f.template operator()<Elem::f32>(); return;
    case Elem::f16: f.template operator()<Elem::f16>(); return;
    case Elem::bf16: f.template operator()<Elem::bf16>(); return;
    case Elem::e4m3: f.template operator()<Elem::e4m3>(); return;
  }
  throw std::invalid_argument("unknown element type");
}

unsigned grid_for(std::int64_t count, int threads) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(blocks, 1), 65535LL * 16));
}

// ---- random fill -----------------------------------------------------------------------------------
// splitmix64 finaliser: a counter-based generator, so every element is independent of launch geometry.
__device__ inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T>
__global__ void fill_random_kernel(T* data, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix(seed * 0x9e3779b97f4a7c15ULL + std::uint64_t(i));
    const float u = float(h >> 40) * (1.0f / 16777216.0f);   // 24 random bits in [0, 1)
    const float magnitude = 1.0f / 64.0f + (1.0f - 1.0f / 64.0f) * u;
    data[i] = from_float<T>((h & 1) ? -magnitude : magnitude);   // bit 0 is unused by u
  }
}

// ---- reference GEMM --------------------------------------------------------------------------------
// 64 x 64 outputs per block of 16 x 16 threads, each thread 4 x 4 outputs strided by 16 (so shared-memory
// reads are broadcasts or consecutive banks), k in steps of 16. Plain fp32 FMAs: simple enough to trust,
// fast enough (~a few TFLOP/s) to check 8192^3 in well under a second.
constexpr int kTile = 64, kStepK = 16, kThreads = 16;

// The epilogue's bias, read as float whatever its storage (nullptr: no bias).
struct BiasView {
  const void* data = nullptr;
  Elem type = Elem::f32;
  __device__ float at(std::int64_t col) const {
    switch (type) {
      case Elem::f32: return static_cast<const float*>(data)[col];
      case Elem::f16: return __half2float(static_cast<const __half*>(data)[col]);
      case Elem::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[col]);
      case Elem::e4m3: return float(static_cast<const __nv_fp8_e4m3*>(data)[col]);
    }
    return 0.0f;
  }
};

template <class T, bool BTransposed>
__global__ void __launch_bounds__(256) reference_gemm_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                             float* __restrict__ c, float* __restrict__ floor,
                                                             std::int64_t m, std::int64_t n, std::int64_t k,
                                                             float scale, Epilogue epilogue, BiasView bias) {
  __shared__ float as[kTile][kStepK + 1];
  __shared__ float bs[kStepK][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreads + tx;
  const std::int64_t row0 = std::int64_t(blockIdx.y) * kTile, col0 = std::int64_t(blockIdx.x) * kTile;
  a += std::int64_t(blockIdx.z) * m * k;
  b += std::int64_t(blockIdx.z) * k * n;
  c += std::int64_t(blockIdx.z) * m * n;
  floor += std::int64_t(blockIdx.z) * m * n;

  float acc[4][4] = {}, magnitude[4][4] = {};
  for (std::int64_t k0 = 0; k0 < k; k0 += kStepK) {
    for (int l = 0; l < 4; ++l) {
      const int e = tid + 256 * l;
      {  // A tile: 64 rows x 16 k
        const int r = e / kStepK, kk = e % kStepK;
        const std::int64_t gr = row0 + r, gk = k0 + kk;
        as[r][kk] = (gr < m && gk < k) ? to_float(a[gr * k + gk]) : 0.0f;
      }
      if constexpr (!BTransposed) {  // B tile: 16 k x 64 columns, B row-major K x N
        const int kk = e / kTile, col = e % kTile;
        const std::int64_t gk = k0 + kk, gc = col0 + col;
        bs[kk][col] = (gk < k && gc < n) ? to_float(b[gk * n + gc]) : 0.0f;
      } else {  // B stored row-major N x K
        const int col = e / kStepK, kk = e % kStepK;
        const std::int64_t gk = k0 + kk, gc = col0 + col;
        bs[kk][col] = (gk < k && gc < n) ? to_float(b[gc * k + gk]) : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kStepK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[ty + kThreads * i][kk];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = bs[kk][tx + kThreads * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
          magnitude[i][j] = fmaf(fabsf(av[i]), fabsf(bv[j]), magnitude[i][j]);
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::int64_t r = row0 + ty + kThreads * i, col = col0 + tx + kThreads * j;
      if (r < m && col < n) {
        float v = scale * acc[i][j];
        if (epilogue != Epilogue::none) v += bias.at(col);
        if (epilogue == Epilogue::bias_gelu) v = gelu_tanh(v);
        c[r * n + col] = v;
        floor[r * n + col] = fabsf(scale) * magnitude[i][j] * rsqrtf(float(k));
      }
    }
}

// ---- comparison ------------------------------------------------------------------------------------
// Error of each element relative to max(|ref|, floor) (the metric of kernels/common/verify.cpp). The worst error and its index travel together in one 64-bit key (error bits high, so atomicMax on the
// key finds the largest error; non-negative floats order like their bit patterns).
template <class T>
__global__ void compare_kernel(const T* c, const float* ref, const float* floor, std::int64_t count,
                               unsigned long long* worst, unsigned long long* non_finite) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float got = to_float(c[i]);
    if (!isfinite(got)) {
      atomicAdd(non_finite, 1ull);
      continue;
    }
    const float expected = ref[i];
    const float err = fabsf(got - expected) / fmaxf(fmaxf(fabsf(expected), floor[i]), 1e-30f);
    const unsigned long long key = (static_cast<unsigned long long>(__float_as_uint(err)) << 32) |
                                   static_cast<unsigned long long>(static_cast<std::uint32_t>(i));
    atomicMax(worst, key);
  }
}

// GELU (tanh form) in float64, written out here rather than shared with gelu_tanh: the epilogue check must
// not inherit a fault of the function it checks (which tests compare with independently computed values).
__device__ inline double gelu_tanh_f64(double x) {
  const double sqrt_2_over_pi = 0.79788456080286535588;   // sqrt(2 / pi)
  return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

// See compare_epilogue (gemm_data.hpp) for the bound. u: the output type's unit roundoff.
template <class T>
__global__ void epilogue_compare_kernel(const T* fused, const T* bare, BiasView bias, const float* floor, Epilogue epi,
                                        std::int64_t n, double u, double accumulation, std::int64_t count,
                                        unsigned long long* worst, unsigned long long* non_finite) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double got = to_float(fused[i]), product = to_float(bare[i]);
    if (!isfinite(got) || !isfinite(product)) {
      atomicAdd(non_finite, 1ull);
      continue;
    }
    const double x = product + double(bias.at(i % n));
    const double want = epi == Epilogue::bias_gelu ? gelu_tanh_f64(x) : x;
    const double bound = 2.0 * (u * (1.2 * fabs(product) + fabs(want)) + 0x1p-11 * fabs(x)) +
                         accumulation * double(floor[i]) + 1e-30;
    const float ratio = float(fabs(got - want) / bound);
    const unsigned long long key = (static_cast<unsigned long long>(__float_as_uint(ratio)) << 32) |
                                   static_cast<unsigned long long>(static_cast<std::uint32_t>(i));
    atomicMax(worst, key);
  }
}

// The three numbers of the worst element, for the message: fused, bare, expected.
template <class T>
__global__ void epilogue_worst_kernel(const T* fused, const T* bare, BiasView bias, Epilogue epi, std::int64_t n,
                                      std::int64_t i, double* out) {
  const double x = double(to_float(bare[i])) + double(bias.at(i % n));
  out[0] = to_float(fused[i]);
  out[1] = to_float(bare[i]);
  out[2] = epi == Epilogue::bias_gelu ? gelu_tanh_f64(x) : x;
}

template <class T>
__global__ void read_element_kernel(const T* c, std::int64_t index, float* out) {
  *out = to_float(c[index]);
}

template <class T>
__global__ void set_element_kernel(T* c, std::int64_t index, float value) {
  c[index] = from_float<T>(value);
}

// What the device-side comparisons leave behind: how many elements were not finite, and the worst element, packed
// as (float bits of its error << 32) | index so that one atomicMax keeps both (non-negative floats order like
// their bits).
struct WorstElement {
  std::int64_t non_finite = 0;
  float value = 0;
  std::int64_t index = 0;
};
WorstElement read_worst(const unsigned long long* worst, const unsigned long long* non_finite, cudaStream_t stream) {
  unsigned long long host_worst = 0, host_non_finite = 0;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&host_worst, worst, sizeof host_worst, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(
      cudaMemcpyAsync(&host_non_finite, non_finite, sizeof host_non_finite, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  WorstElement w;
  w.non_finite = std::int64_t(host_non_finite);
  const std::uint32_t bits = std::uint32_t(host_worst >> 32);
  std::memcpy(&w.value, &bits, sizeof w.value);
  w.index = std::int64_t(host_worst & 0xffffffffull);
  return w;
}

}  // namespace

void fill_random(void* data, Elem type, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  dispatch(type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    fill_random_kernel<T><<<grid_for(count, 256), 256, 0, stream>>>(static_cast<T*>(data), count, seed);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
}

void poison(void* data, std::size_t bytes, cudaStream_t stream) {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(data, 0xFF, bytes, stream));
}

void reference_gemm(const RefGemm& g, cudaStream_t stream) {
  if (g.batch > 65535) throw std::invalid_argument("reference_gemm: batch above 65535");
  const dim3 block(kThreads, kThreads);
  const dim3 grid(unsigned((g.n + kTile - 1) / kTile), unsigned((g.m + kTile - 1) / kTile), unsigned(g.batch));
  dispatch(g.ab_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    const T* a = static_cast<const T*>(g.a);
    const T* b = static_cast<const T*>(g.b);
    if (g.epilogue != Epilogue::none && !g.bias) throw std::invalid_argument("reference_gemm: epilogue without bias");
    const BiasView bias{g.bias, g.bias_type};
    if (g.b_transposed)
      reference_gemm_kernel<T, true><<<grid, block, 0, stream>>>(a, b, g.c, g.floor, g.m, g.n, g.k, g.scale,
                                                                 g.epilogue, bias);
    else
      reference_gemm_kernel<T, false><<<grid, block, 0, stream>>>(a, b, g.c, g.floor, g.m, g.n, g.k, g.scale,
                                                                  g.epilogue, bias);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
}

std::string Comparison::describe(std::int64_t n) const {
  char buffer[256];
  if (non_finite > 0) {
    std::snprintf(buffer, sizeof buffer, "%lld output elements are NaN/Inf or were never written",
                  static_cast<long long>(non_finite));
    return buffer;
  }
  if (worst_index < 0) return "no elements compared";
  std::snprintf(buffer, sizeof buffer, "max rel err %.3g at C[%lld][%lld] (got %.6g, expected %.6g)",
                max_rel_err, static_cast<long long>(worst_index / n), static_cast<long long>(worst_index % n),
                worst_value, worst_reference);
  return buffer;
}

Comparison compare_to_reference(const void* c, Elem c_type, const float* ref, const float* floor, std::int64_t count,
                                cudaStream_t stream) {
  if (count > (std::int64_t(1) << 32)) throw std::invalid_argument("compare_to_reference: more than 2^32 elements");
  Comparison result;
  if (count <= 0) return result;
  DeviceBuffer scratch(2 * sizeof(unsigned long long) + sizeof(float));
  auto* worst = scratch.as<unsigned long long>();
  auto* non_finite = worst + 1;
  auto* value = reinterpret_cast<float*>(non_finite + 1);
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(scratch.get(), 0, scratch.bytes(), stream));
  dispatch(c_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    compare_kernel<T><<<grid_for(count, 256), 256, 0, stream>>>(static_cast<const T*>(c), ref, floor, count, worst,
                                                                 non_finite);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  const WorstElement w = read_worst(worst, non_finite, stream);
  result.non_finite = w.non_finite;
  if (result.non_finite > 0) {
    result.max_rel_err = std::numeric_limits<double>::infinity();
    return result;
  }
  result.max_rel_err = w.value;
  result.worst_index = w.index;

  dispatch(c_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    read_element_kernel<T><<<1, 1, 0, stream>>>(static_cast<const T*>(c), result.worst_index, value);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  float got = 0, expected = 0;
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&got, value, sizeof got, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&expected, ref + result.worst_index, sizeof expected, cudaMemcpyDeviceToHost,
                                      stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.worst_value = got;
  result.worst_reference = expected;
  return result;
}

std::string EpilogueComparison::describe(std::int64_t n) const {
  char buffer[320];
  if (non_finite > 0) {
    std::snprintf(buffer, sizeof buffer, "epilogue check: %lld elements of the fused or the bare output are NaN/Inf",
                  static_cast<long long>(non_finite));
    return buffer;
  }
  if (worst_index < 0) return "epilogue check: no elements compared";
  std::snprintf(buffer, sizeof buffer,
                "epilogue off by %.3gx its bound at C[%lld][%lld] (got %.6g, expected %.6g from the same kernel's A*B "
                "= %.6g without the epilogue, plus the bias, epilogue in float64)",
                max_ratio, static_cast<long long>(worst_index / n), static_cast<long long>(worst_index % n),
                worst_value, worst_expected, worst_bare);
  return buffer;
}

EpilogueComparison compare_epilogue(const EpilogueCheck& e, cudaStream_t stream) {
  if (e.count > (std::int64_t(1) << 32)) throw std::invalid_argument("compare_epilogue: more than 2^32 elements");
  if (e.epilogue == Epilogue::none || !e.bias || !e.fused || !e.bare || !e.floor || e.n <= 0)
    throw std::invalid_argument("compare_epilogue: needs an epilogue, the fused and bare outputs, bias and floor");
  EpilogueComparison result;
  if (e.count <= 0) return result;
  double u = 0x1p-24;
  if (e.c_type == Elem::bf16) u = 0x1p-8;
  else if (e.c_type == Elem::f16) u = 0x1p-11;
  else if (e.c_type == Elem::e4m3) u = 0x1p-4;
  // floor * sqrt(k) = sum |a*b| (times the scale): 8 u_fp32 of it covers two fp32 accumulation orders.
  const double accumulation = 8.0 * 0x1p-24 * std::sqrt(double(std::max<std::int64_t>(e.k, 1)));
  DeviceBuffer scratch(2 * sizeof(unsigned long long) + 3 * sizeof(double));
  auto* worst = scratch.as<unsigned long long>();
  auto* non_finite = worst + 1;
  auto* values = reinterpret_cast<double*>(non_finite + 1);   // fused, bare, expected at the worst element
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(scratch.get(), 0, scratch.bytes(), stream));
  const BiasView bias{e.bias, e.bias_type};
  dispatch(e.c_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    epilogue_compare_kernel<T><<<grid_for(e.count, 256), 256, 0, stream>>>(
        static_cast<const T*>(e.fused), static_cast<const T*>(e.bare), bias, e.floor, e.epilogue, e.n, u, accumulation,
        e.count, worst, non_finite);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  const WorstElement w = read_worst(worst, non_finite, stream);
  result.non_finite = w.non_finite;
  if (result.non_finite > 0) {
    result.max_ratio = std::numeric_limits<double>::infinity();
    return result;
  }
  result.max_ratio = w.value;
  result.worst_index = w.index;
  dispatch(e.c_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    epilogue_worst_kernel<T><<<1, 1, 0, stream>>>(static_cast<const T*>(e.fused), static_cast<const T*>(e.bare), bias,
                                                  e.epilogue, e.n, result.worst_index, values);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  double host_values[3] = {};
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(host_values, values, sizeof host_values, cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.worst_value = host_values[0];
  result.worst_bare = host_values[1];
  result.worst_expected = host_values[2];
  return result;
}

void set_element(void* c, Elem c_type, std::int64_t index, float value, cudaStream_t stream) {
  dispatch(c_type, [&]<Elem E>() {
    using T = typename Storage<E>::type;
    set_element_kernel<T><<<1, 1, 0, stream>>>(static_cast<T*>(c), index, value);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace aispflow::kernels::cuda
