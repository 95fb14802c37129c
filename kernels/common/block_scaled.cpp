#include "kernels/common/block_scaled.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace aispflow::kernels {

std::optional<BlockFormat> block_format(const std::string& dtype) {
  if (dtype == "mxfp8") return BlockFormat{"mxfp8", 32, "e4m3", "ue8m0"};
  if (dtype == "nvfp4") return BlockFormat{"nvfp4", 16, "e2m1", "ue4m3"};
  return std::nullopt;
}

float decode_e4m3(std::uint8_t bits) {
  const int sign = bits >> 7, exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa) / 8.0f, -6)          // subnormal
                                        : std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - 7);
  return sign ? -magnitude : magnitude;
}

float decode_e2m1(std::uint8_t bits) {
  static const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = table[bits & 0x7];
  return (bits & 0x8) ? -magnitude : magnitude;
}

float decode_ue8m0(std::uint8_t bits) {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(bits) - 127);
}

namespace {

// Nearest code of a small format by exhaustive search over its positive codes (ties to the even code):
// exact by construction, and these tables have at most 127 entries.
std::uint8_t nearest_code(float x, int positive_codes, float (*decode)(std::uint8_t), std::uint8_t sign_bit) {
  const float a = std::fabs(x);
  int best = 0;
  for (int c = 1; c < positive_codes; ++c) {
    const float d = std::fabs(decode(std::uint8_t(c)) - a), bd = std::fabs(decode(std::uint8_t(best)) - a);
    if (d < bd || (d == bd && (c % 2 == 0))) best = c;
  }
  return std::uint8_t(best | (std::signbit(x) && best != 0 ? sign_bit : 0));
}

}  // namespace

std::uint8_t encode_e4m3(float x) { return nearest_code(x, 0x7f, decode_e4m3, 0x80); }   // 0x7f is NaN
std::uint8_t encode_e2m1(float x) { return nearest_code(x, 8, decode_e2m1, 0x8); }

float BlockScaledMatrix::value(std::int64_t r, std::int64_t c) const {
  const std::uint8_t code = codes[std::size_t(r * cols + c)];
  const std::uint8_t s = scales[std::size_t((r * cols + c) / format.block)];
  if (format.dtype == "mxfp8") return decode_e4m3(code) * decode_ue8m0(s);
  return decode_e2m1(code) * decode_e4m3(s) * tensor_scale;
}

BlockScaledMatrix quantize_block_scaled(const std::string& dtype, const std::vector<float>& values, std::int64_t rows,
                                        std::int64_t cols) {
  const auto format = block_format(dtype);
  if (!format) throw std::invalid_argument("quantize_block_scaled: '" + dtype + "' is not a block-scaled dtype");
  if (cols % format->block != 0)
    throw std::invalid_argument(dtype + ": K = " + std::to_string(cols) + " is not a multiple of the block (" +
                                std::to_string(format->block) + ")");
  if (std::int64_t(values.size()) != rows * cols) throw std::invalid_argument("quantize_block_scaled: size mismatch");
  BlockScaledMatrix q;
  q.format = *format;
  q.rows = rows;
  q.cols = cols;
  q.codes.resize(values.size());
  q.scales.resize(values.size() / std::size_t(format->block));
  const bool mx = dtype == "mxfp8";
  const float element_max = mx ? 448.0f : 6.0f;
  if (!mx) {   // nvfp4: the tensor scale brings the largest block scale into e4m3's range (<= 448)
    float amax = 0;
    for (float v : values) amax = std::max(amax, std::fabs(v));
    q.tensor_scale = amax > 0 ? amax / (element_max * 448.0f) : 1.0f;
  }
  for (std::size_t b = 0; b < q.scales.size(); ++b) {
    const std::size_t first = b * std::size_t(format->block);
    float amax = 0;
    for (int i = 0; i < format->block; ++i) amax = std::max(amax, std::fabs(values[first + std::size_t(i)]));
    float scale;
    if (mx) {   // the power of two that maps amax to at most 448
      const int e = amax > 0 ? int(std::ceil(std::log2(amax / element_max))) : 0;
      q.scales[b] = std::uint8_t(std::clamp(e + 127, 0, 254));
      scale = decode_ue8m0(q.scales[b]);
    } else {
      q.scales[b] = encode_e4m3(amax > 0 ? amax / (element_max * q.tensor_scale) : 0.0f);
      scale = decode_e4m3(q.scales[b]) * q.tensor_scale;
      // A rounded-down scale could push the block's largest element past the element range: round up instead.
      while (scale > 0 && amax / scale > element_max && q.scales[b] < 0x7e) scale = decode_e4m3(++q.scales[b]) * q.tensor_scale;
    }
    for (int i = 0; i < format->block; ++i) {
      const float v = scale > 0 ? values[first + std::size_t(i)] / scale : 0.0f;
      q.codes[first + std::size_t(i)] = mx ? encode_e4m3(v) : encode_e2m1(v);
    }
  }
  return q;
}

std::vector<double> dequantized_reference_gemm(const BlockScaledMatrix& a, const BlockScaledMatrix& b) {
  if (a.cols != b.cols || a.format.dtype != b.format.dtype)
    throw std::invalid_argument("dequantized_reference_gemm: A and B must share K and the format");
  std::vector<double> c(std::size_t(a.rows * b.rows), 0.0);
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int64_t j = 0; j < b.rows; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < a.cols; ++k) sum += double(a.value(i, k)) * double(b.value(j, k));
      c[std::size_t(i * b.rows + j)] = sum;
    }
  return c;
}

VerifyResult verify_block_scaled_gemm(const BlockScaledMatrix& a, const BlockScaledMatrix& b,
                                      const std::function<double(std::int64_t, std::int64_t)>& c) {
  GemmShape shape;
  shape.m = a.rows;
  shape.n = b.rows;
  shape.k = a.cols;
  // B is stored N x K (K-major): element (k, n) of the logical K x N operand is b.value(n, k).
  return verify_gemm(
      shape, [&a](std::int64_t, std::int64_t r, std::int64_t k) { return double(a.value(r, k)); },
      [&b](std::int64_t, std::int64_t k, std::int64_t n) { return double(b.value(n, k)); },
      [&c](std::int64_t, std::int64_t r, std::int64_t n) { return c(r, n); }, default_tolerance("bf16", shape.k));
}

}  // namespace aispflow::kernels
