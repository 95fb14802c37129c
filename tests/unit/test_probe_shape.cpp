// The developer probes' PROBE_SHAPE parser (bench/tools/probe_shape.hpp).
#include <gtest/gtest.h>

#include "bench/tools/probe_shape.hpp"

using aispflow::bench::parse_probe_shape;

TEST(ProbeShape, ThreeOrFourDimensionsThenDtypeAndLayout) {
  const auto s = parse_probe_shape("1000x896x1008 bf16 nn");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->m, 1000);
  EXPECT_EQ(s->n, 896);
  EXPECT_EQ(s->k, 1008);
  EXPECT_EQ(s->batch, 1);
  EXPECT_EQ(s->dtype, "bf16");
  EXPECT_EQ(s->layout, "nn");
  const auto batched = parse_probe_shape("512x2880x2880x32 fp8_e4m3 nt");
  ASSERT_TRUE(batched);
  EXPECT_EQ(batched->k, 2880);
  EXPECT_EQ(batched->batch, 32);
  EXPECT_EQ(batched->layout, "nt");
}

TEST(ProbeShape, AnythingElseIsRefused) {
  for (const char* bad : {"", "1000x1000 bf16 nn", "1000x1000x1008x bf16 nn", "1000x1000x1008q bf16 nn",
                          "1000x1000x1008 bf16", "1000x1000x1008 bf16 tn", "1000x1000x1008 bf16 nn extra",
                          "0x1000x1008 bf16 nn", "1000x1000x1008x0 bf16 nn", "-8x1000x1008 bf16 nn",
                          "1000x1000x1008x2x3 bf16 nn"})
    EXPECT_FALSE(parse_probe_shape(bad)) << '"' << bad << '"';
}

TEST(ProbeShape, ItsGemmShapeIsNamedAsItIsSpelt) {
  const auto plain = aispflow::bench::probe_gemm_shape(1000, 896, 1008, 1);
  EXPECT_EQ(plain.name, "1000x896x1008");
  EXPECT_EQ(plain.m, 1000);
  EXPECT_EQ(plain.n, 896);
  EXPECT_EQ(plain.k, 1008);
  EXPECT_EQ(plain.batch, 1);
  const auto batched = aispflow::bench::probe_gemm_shape(512, 2880, 2880, 32);
  EXPECT_EQ(batched.name, "512x2880x2880x32");
  EXPECT_EQ(batched.batch, 32);
}
