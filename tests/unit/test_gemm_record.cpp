// GemmShape parsing, dtype sizes, compulsory traffic and the record schema (docs/records.md), against
// hand-computed values.
#include "kernels/common/gemm.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace aispflow::kernels {
namespace {

using json = nlohmann::json;

TEST(GemmShape, JsonRoundTrip) {
  const GemmShape s = GemmShape::from_json({{"name", "decode_qkv_b8"}, {"m", 8}, {"n", 5120}, {"k", 2880}});
  EXPECT_EQ(s.name, "decode_qkv_b8");
  EXPECT_EQ(s.m, 8);
  EXPECT_EQ(s.n, 5120);
  EXPECT_EQ(s.k, 2880);
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.to_json(), json({{"name", "decode_qkv_b8"}, {"m", 8}, {"n", 5120}, {"k", 2880}}))
      << "batch 1 stays out of the documented form";
  const GemmShape b = GemmShape::from_json({{"name", "moe"}, {"m", 16}, {"n", 32}, {"k", 64}, {"batch", 4}});
  EXPECT_EQ(b.batch, 4);
  EXPECT_EQ(GemmShape::from_json(b.to_json()).batch, 4);
}

TEST(GemmShape, FlopsScaleWithBatch) {
  GemmShape s;
  s.m = 2, s.n = 3, s.k = 5, s.batch = 7;
  EXPECT_DOUBLE_EQ(s.flops(), 2.0 * 2 * 3 * 5 * 7);
}

TEST(GemmShape, MissingNameIsDerivedFromDimensions) {
  EXPECT_EQ(GemmShape::from_json({{"m", 4}, {"n", 5}, {"k", 6}}).name, "4x5x6");
}

TEST(GemmShape, WholeFloatsAreAcceptedAsIntegers) {
  EXPECT_EQ(GemmShape::from_json({{"m", 2048.0}, {"n", 1}, {"k", 1}}).m, 2048);
}

void expect_error_mentions(const json& j, const std::string& words) {
  try {
    (void)GemmShape::from_json(j);
    ADD_FAILURE() << "no error for " << j.dump();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(GemmShape, BadFieldsNameTheField) {
  expect_error_mentions({{"n", 4}, {"k", 4}}, "missing field 'm'");
  expect_error_mentions({{"m", 4}, {"n", 0}, {"k", 4}}, "'n' must be >= 1");
  expect_error_mentions({{"m", 4}, {"n", 4}, {"k", -2}}, "'k' must be >= 1");
  expect_error_mentions({{"m", "big"}, {"n", 4}, {"k", 4}}, "'m' must be a positive integer");
  expect_error_mentions({{"m", 2.5}, {"n", 4}, {"k", 4}}, "'m' must be a positive integer");
  expect_error_mentions({{"m", 1}, {"n", 4}, {"k", 4}, {"name", 3}}, "'name' must be a string");
  expect_error_mentions(json::array({1, 2, 3}), "expected an object");
}

TEST(Dtypes, OperandAndOutputBytes) {
  EXPECT_EQ(operand_bytes("fp64"), 8);
  EXPECT_EQ(operand_bytes("fp32"), 4);
  EXPECT_EQ(operand_bytes("tf32"), 4);
  EXPECT_EQ(operand_bytes("fp16"), 2);
  EXPECT_EQ(operand_bytes("bf16"), 2);
  EXPECT_EQ(operand_bytes("fp8_e4m3"), 1);
  EXPECT_FALSE(operand_bytes("int3").has_value());
  EXPECT_EQ(output_bytes("fp8_e4m3"), 2);   // bf16 out
  EXPECT_EQ(output_bytes("tf32"), 4);
  EXPECT_EQ(output_bytes("bf16"), 2);
  EXPECT_EQ(output_bytes("int3"), 0);
}

TEST(Dtypes, CompulsoryBytesAndIntensityByHand) {
  GemmShape s;
  s.m = 8, s.n = 5120, s.k = 2880;
  // fp32: (8*2880 + 2880*5120) * 4 + 8*5120 * 4 = (23040 + 14745600 + 40960) * 4
  EXPECT_DOUBLE_EQ(compulsory_bytes(s, "fp32"), (23040.0 + 14745600.0 + 40960.0) * 4.0);
  EXPECT_DOUBLE_EQ(intensity(s, "fp32"), 2.0 * 8 * 5120 * 2880 / ((23040.0 + 14745600.0 + 40960.0) * 4.0));
  // fp8: operands 1 byte, output bf16 2 bytes
  EXPECT_DOUBLE_EQ(compulsory_bytes(s, "fp8_e4m3"), 23040.0 + 14745600.0 + 40960.0 * 2.0);
  s.batch = 3;
  EXPECT_DOUBLE_EQ(compulsory_bytes(s, "fp32"), 3.0 * (23040.0 + 14745600.0 + 40960.0) * 4.0);
  EXPECT_DOUBLE_EQ(compulsory_bytes(s, "nope"), 0.0);
  EXPECT_DOUBLE_EQ(intensity(s, "nope"), 0.0);
}

GemmRecord timed_record() {
  GemmRecord r;
  r.provider = "cpu.blocked";
  r.kernel = "cpu.blocked mc=96 nc=2048 kc=256";
  r.shape = GemmShape::from_json({{"name", "sq"}, {"m", 1000}, {"n", 2000}, {"k", 500}});
  r.dtype = "fp32";
  r.verified = true;
  r.max_rel_err = 1e-6;
  r.tolerance = 1e-4;
  r.time = summarize({2.0, 2.0, 2.0}, 0.02);
  return r;
}

TEST(GemmRecord, OkRecordHasTheDocumentedFieldsAndDerivedRates) {
  const json env = {{"cpu_model", "Test CPU"}};
  const json j = timed_record().to_json(env);
  for (const char* key : {"provider", "kernel", "shape", "dtype", "status", "verified", "max_rel_err", "tolerance",
                          "time_ms", "samples", "tflops", "gbytes_per_s", "intensity", "env"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("reason"));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["shape"], json({{"name", "sq"}, {"m", 1000}, {"n", 2000}, {"k", 500}}));
  EXPECT_EQ(j["env"], env);
  EXPECT_EQ(j["samples"], 3);
  EXPECT_DOUBLE_EQ(j["time_ms"]["median"].get<double>(), 2.0);
  // 2*1000*2000*500 = 2e9 FLOP in 2 ms = 1e12 FLOP/s = 1 TFLOP/s
  EXPECT_DOUBLE_EQ(j["tflops"].get<double>(), 1.0);
  // (1000*500 + 500*2000 + 1000*2000) * 4 bytes = 14e6 bytes in 2 ms = 7 GB/s
  EXPECT_DOUBLE_EQ(j["gbytes_per_s"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(j["intensity"].get<double>(), 2e9 / 14e6);
}

TEST(GemmRecord, FailedAndSkippedRecordsCarryNoTiming) {
  GemmRecord failed = timed_record();
  failed.status = "failed";
  failed.verified = false;
  failed.reason = "verification failed: C[0][0]";
  const json f = failed.to_json({});
  EXPECT_EQ(f["reason"], "verification failed: C[0][0]");
  for (const char* key : {"time_ms", "samples", "tflops", "gbytes_per_s"}) EXPECT_FALSE(f.contains(key)) << key;

  GemmRecord skipped;
  skipped.provider = "cpu.blocked";
  skipped.shape = GemmShape::from_json({{"m", 1}, {"n", 1}, {"k", 1}});
  skipped.dtype = "bf16";
  skipped.status = "skipped";
  skipped.reason = "bf16 is not supported by cpu.blocked";
  const json s = skipped.to_json(nullptr);
  EXPECT_EQ(s["status"], "skipped");
  EXPECT_FALSE(s.contains("tflops"));
  EXPECT_TRUE(s["env"].is_object());
}

TEST(GemmRecord, ExtraFieldsJoinButNeverReplaceDocumentedOnes) {
  GemmRecord r = timed_record();
  r.extra = {{"candidates", json::array({1, 2})}, {"status", "hijacked"}, {"tflops", 999}};
  const json j = r.to_json({});
  EXPECT_EQ(j["candidates"], json::array({1, 2}));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_DOUBLE_EQ(j["tflops"].get<double>(), 1.0);
}

}  // namespace
}  // namespace aispflow::kernels
