#pragma once
// The microscaled formats of the `mxfp8` and `nvfp4` dtypes (docs/records.md) and their dequantized reference.
//
//   mxfp8  OCP MX: e4m3 elements, one E8M0 scale (a power of two, 2^(s - 127)) per block of 32 consecutive
//          elements along K.
//   nvfp4  NVIDIA: e2m1 elements (+-{0, 0.5, 1, 1.5, 2, 3, 4, 6}), one E4M3 scale per block of 16 consecutive
//          elements along K, times one fp32 scale per tensor.
// Verification of a block-scaled GEMM: the kernel multiplies the *dequantized* values exactly (products of
// these formats are exact in fp32) and accumulates in fp32, so the reference is the float64 GEMM of the
// dequantized operands, and the tolerance is that of an fp32-accumulated GEMM with a bf16 output
// (default_tolerance("bf16", K)). The quantization error of the format is deliberately NOT in the tolerance:
// it is not the kernel's error.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/verify.hpp"

namespace aispflow::kernels {

struct BlockFormat {
  std::string dtype;       // "mxfp8" | "nvfp4"
  int block = 0;           // elements per scale, along K
  std::string element;     // "e4m3" | "e2m1"
  std::string scale;       // "ue8m0" | "ue4m3"
};
std::optional<BlockFormat> block_format(const std::string& dtype);

float decode_e4m3(std::uint8_t bits);   // OCP fp8 e4m3 (finite-only: 0x7f / 0xff are NaN)
float decode_e2m1(std::uint8_t bits);   // low 4 bits
float decode_ue8m0(std::uint8_t bits);  // 2^(bits - 127); 0xff is NaN
std::uint8_t encode_e4m3(float x);      // round to nearest even, saturating to +-448
std::uint8_t encode_e2m1(float x);      // round to nearest, saturating to +-6

// A row-major rows x cols matrix quantized along its rows (cols = K, a multiple of the block): one code per
// element (e2m1 in the low nibble) and one scale code per block.
struct BlockScaledMatrix {
  BlockFormat format;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> codes;        // rows * cols
  std::vector<std::uint8_t> scales;       // rows * cols / block
  float tensor_scale = 1.0f;              // nvfp4's per-tensor fp32 scale; 1 for mxfp8
  float value(std::int64_t r, std::int64_t c) const;   // dequantized
};
// Quantizes `values` (row-major rows x cols): each block's scale maps its largest magnitude to (at most) the
// element format's largest value. Throws std::invalid_argument when cols is not a multiple of the block.
BlockScaledMatrix quantize_block_scaled(const std::string& dtype, const std::vector<float>& values, std::int64_t rows,
                                        std::int64_t cols);

// The dequantized reference: C[M x N] = deq(A)[M x K] * deq(B)[N x K]^T in float64 (B K-major, as the
// block-scaled kernels read it).
std::vector<double> dequantized_reference_gemm(const BlockScaledMatrix& a, const BlockScaledMatrix& b);

// Verifies a block-scaled GEMM's output c(row, col) (M x N, as float64) against the dequantized reference with
// default_tolerance("bf16", K) (fp32 accumulation, bf16 output): the check a block-scaled record's `verified` means.
VerifyResult verify_block_scaled_gemm(const BlockScaledMatrix& a, const BlockScaledMatrix& b,
                                      const std::function<double(std::int64_t, std::int64_t)>& c);

}  // namespace aispflow::kernels
