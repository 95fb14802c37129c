// mxfp8 / nvfp4 (kernels/common/block_scaled.hpp): element and scale decoding, quantization, the dequantized
// reference GEMM, and the verification a block-scaled record's `verified` stands for, fed correct and broken
// outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/common/block_scaled.hpp"
#include "kernels/common/verify.hpp"

namespace aispflow::kernels {
namespace {

TEST(BlockScaled, DecodesKnownCodes) {
  EXPECT_EQ(decode_e4m3(0x38), 1.0f);
  EXPECT_EQ(decode_e4m3(0x7e), 448.0f);
  EXPECT_EQ(decode_e4m3(0xb8), -1.0f);
  EXPECT_EQ(decode_e4m3(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_TRUE(std::isnan(decode_e4m3(0x7f)));
  EXPECT_EQ(decode_e2m1(0x7), 6.0f);
  EXPECT_EQ(decode_e2m1(0x3), 1.5f);
  EXPECT_EQ(decode_e2m1(0xa), -1.0f);
  EXPECT_EQ(decode_ue8m0(127), 1.0f);
  EXPECT_EQ(decode_ue8m0(130), 8.0f);
  EXPECT_TRUE(std::isnan(decode_ue8m0(0xff)));
  for (int c = 0; c < 0x7f; ++c) EXPECT_EQ(encode_e4m3(decode_e4m3(std::uint8_t(c))), c);   // round trip
  EXPECT_EQ(encode_e2m1(2.4f), 0x4);   // 2.4 -> 2
  EXPECT_EQ(encode_e2m1(100.0f), 0x7); // saturates at 6
  EXPECT_EQ(block_format("mxfp8")->block, 32);
  EXPECT_EQ(block_format("nvfp4")->block, 16);
  EXPECT_EQ(block_format("nvfp4")->scale, "ue4m3");
  EXPECT_FALSE(block_format("bf16"));
}

std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<float> v(std::size_t(rows * cols));
  fill_random(v, seed);
  // Rows of very different magnitude: what per-block scales are for.
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) v[std::size_t(r * cols + c)] *= std::ldexp(1.0f, int(r % 7) - 3);
  return v;
}

class BlockScaledGemm : public ::testing::TestWithParam<const char*> {};

TEST_P(BlockScaledGemm, QuantizationErrorIsBoundedPerBlock) {
  const std::string dtype = GetParam();
  const auto values = random_matrix(8, 64, 1);
  const auto q = quantize_block_scaled(dtype, values, 8, 64);
  // Relative to each block's largest magnitude: e4m3 keeps 3 mantissa bits (2^-4), e2m1 1 bit (1/4 of 4..6).
  const double bound = dtype == "mxfp8" ? 0x1p-4 : 0.25;
  const int block = q.format.block;
  for (std::int64_t r = 0; r < 8; ++r)
    for (std::int64_t b = 0; b < 64 / block; ++b) {
      double amax = 0;
      for (int i = 0; i < block; ++i) amax = std::max(amax, double(std::fabs(values[std::size_t(r * 64 + b * block + i)])));
      for (int i = 0; i < block; ++i) {
        const std::int64_t c = b * block + i;
        EXPECT_LE(std::fabs(q.value(r, c) - values[std::size_t(r * 64 + c)]), bound * amax) << r << "," << c;
      }
    }
  EXPECT_THROW(quantize_block_scaled(dtype, std::vector<float>(8 * 40), 8, 40), std::invalid_argument);
}

TEST_P(BlockScaledGemm, ReferenceIsTheGemmOfDequantizedValues) {
  const std::string dtype = GetParam();
  const auto a = quantize_block_scaled(dtype, random_matrix(3, 64, 2), 3, 64);
  const auto b = quantize_block_scaled(dtype, random_matrix(5, 64, 3), 5, 64);
  const auto c = dequantized_reference_gemm(a, b);
  ASSERT_EQ(c.size(), 15u);
  double hand = 0;   // element (2, 4) by hand
  for (int k = 0; k < 64; ++k) hand += double(a.value(2, k)) * double(b.value(4, k));
  EXPECT_DOUBLE_EQ(c[2 * 5 + 4], hand);
}

TEST_P(BlockScaledGemm, VerificationAcceptsBf16OutputAndCatchesAWrongScale) {
  const std::string dtype = GetParam();
  const std::int64_t m = 16, n = 24, k = 128;
  const auto a = quantize_block_scaled(dtype, random_matrix(m, k, 4), m, k);
  const auto b = quantize_block_scaled(dtype, random_matrix(n, k, 5), n, k);
  const auto ref = dequantized_reference_gemm(a, b);
  auto bf16 = [](double x) {   // round to bf16 (nearest even): what the kernel writes
    float f = float(x);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return double(f);
  };
  EXPECT_TRUE(verify_block_scaled_gemm(a, b, [&](auto r, auto c) { return bf16(ref[std::size_t(r * n + c)]); }).ok);
  // A kernel that applies the scale of the wrong block (or none) to one block of A's row 3.
  auto broken = a;
  broken.scales[std::size_t(3 * k / a.format.block + 1)] ^= 0x02;
  const auto wrong = dequantized_reference_gemm(broken, b);
  const auto r = verify_block_scaled_gemm(a, b, [&](auto i, auto j) { return bf16(wrong[std::size_t(i * n + j)]); });
  EXPECT_FALSE(r.ok) << r.detail;
}

INSTANTIATE_TEST_SUITE_P(Formats, BlockScaledGemm, ::testing::Values("mxfp8", "nvfp4"));

}  // namespace
}  // namespace aispflow::kernels
