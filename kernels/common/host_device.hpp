#pragma once
// AISPFLOW_HOST_DEVICE marks a function that both host code and CUDA kernels call (one definition for the GPU
// and for the CPU tests that check it): __host__ __device__ under nvcc, nothing for a plain C++ compiler.
#if defined(__CUDACC__)
#define AISPFLOW_HOST_DEVICE __host__ __device__
#else
#define AISPFLOW_HOST_DEVICE
#endif
