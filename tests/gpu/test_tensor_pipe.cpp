// The tensor-pipe ceiling (kernels/cuda/tensor_pipe.hpp): every dtype is verified and held against the dense
// rate at the clock it ran; each way of doing less than claimed (half the steps, half the SMs, no launch) fails
// the check and leaves no value; and the roof stands above what cuBLASLt achieves on a large GEMM.
#include <gtest/gtest.h>

#ifndef AISPFLOW_HAS_CUDA

TEST(TensorPipe, NotBuilt) { GTEST_SKIP() << "no CUDA device: this aispflow was built without CUDA (AISPFLOW_CUDA=OFF or no nvcc)"; }

#else

#include <cstdio>
#include <string>

#include "kernels/cuda/cublaslt_provider.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/tensor_pipe.hpp"
#include "support/gpu_test.hpp"

namespace aispflow::kernels {
namespace {

using namespace aispflow::kernels::cuda;

class TensorPipe : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    device_ = system_info().devices.at(0);
    if (device_.compute_capability() != 90)
      GTEST_SKIP() << "the tensor-pipe probe needs sm_90a (wgmma); this device is sm_" << device_.compute_capability();
  }
  DeviceInfo device_;
};

TEST(TensorPipeRates, DenseRatesPerSmClock) {
  // H100 SXM: 132 SMs at 1830 MHz give NVIDIA's dense figures (989.4 bf16, 494.7 tf32, 1978.9 fp8 TFLOP/s).
  EXPECT_NEAR(*tensor_flops_per_sm_clock(90, "bf16") * 132 * 1830e6 / 1e12, 989.4, 0.5);
  EXPECT_NEAR(*tensor_flops_per_sm_clock(90, "tf32") * 132 * 1830e6 / 1e12, 494.7, 0.5);
  EXPECT_NEAR(*tensor_flops_per_sm_clock(90, "fp8_e4m3") * 132 * 1830e6 / 1e12, 1978.9, 0.5);
  EXPECT_FALSE(tensor_flops_per_sm_clock(80, "bf16").has_value());
  EXPECT_FALSE(tensor_pipe_knows("int4"));
}

TEST_F(TensorPipe, EveryDtypeIsVerifiedAndBelowTheDenseRateAtItsClock) {
  for (const char* dtype : {"bf16", "fp16", "tf32", "fp8_e4m3"}) {
    const Ceiling c = measure_tensor_pipe(ctx().harness(), device_, dtype, quick());
    ASSERT_TRUE(c.contains("value")) << c.dump(2);
    EXPECT_EQ(c.value("verified", false), true) << c.dump(2);
    ASSERT_TRUE(c.contains("fraction_of_dense_at_clock")) << c.dump(2);
    // Well above half the pipe (a probe that idles half the SMs would land near 0.5), below the physics.
    EXPECT_GT(c["fraction_of_dense_at_clock"].get<double>(), 0.6) << c.dump(2);
    EXPECT_LE(c["fraction_of_dense_at_clock"].get<double>(), 1.03) << c.dump(2);
    std::printf("tensor.%s %.1f TFLOP/s at %.0f MHz (%.1f %% of dense at that clock), %s\n", dtype,
                c["value"].get<double>(), c["sm_clock_mhz"].get<double>(),
                100 * c["fraction_of_dense_at_clock"].get<double>(), c["variant"].get<std::string>().c_str());
  }
}

TEST_F(TensorPipe, EveryBrokenCaseFailsUntimed) {
  for (auto sabotage : {TensorPipeSabotage::half_steps, TensorPipeSabotage::half_blocks, TensorPipeSabotage::noop}) {
    const Ceiling c = measure_tensor_pipe(ctx().harness(), device_, "bf16", quick(), sabotage);
    EXPECT_EQ(c.value("status", std::string()), "failed") << c.dump(2);
    EXPECT_FALSE(c.contains("value")) << c.dump(2);
  }
  // fp8's narrow accumulator: half the steps must be caught there too.
  const Ceiling fp8 = measure_tensor_pipe(ctx().harness(), device_, "fp8_e4m3", quick(), TensorPipeSabotage::half_steps);
  EXPECT_EQ(fp8.value("status", std::string()), "failed") << fp8.dump(2);
}

// The roof is a roof: cuBLASLt's best large GEMM (the old `tensor.*` figure, now `gemm.*`) stays below it.
TEST_F(TensorPipe, StandsAboveTheLibrarysLargeGemm) {
  for (const char* dtype : {"bf16", "fp8_e4m3"}) {
    const Ceiling pipe = measure_tensor_pipe(ctx().harness(), device_, dtype, quick());
    std::string why;
    const auto gemm = measure_gemm_ceiling(context_fn(), dtype, 8192, quick(), &why);
    ASSERT_TRUE(gemm.has_value()) << why;
    ASSERT_TRUE(pipe.contains("value")) << pipe.dump(2);
    EXPECT_EQ((*gemm)["name"], std::string("gemm.") + dtype);
    EXPECT_EQ((*gemm)["kind"], "achieved");
    EXPECT_GE(pipe["value"].get<double>(), (*gemm)["value"].get<double>()) << dtype;
    std::printf("%s: tensor pipe %.0f TFLOP/s, cuBLASLt 8192^3 %.0f TFLOP/s (%.1f %% of the pipe)\n", dtype,
                pipe["value"].get<double>(), (*gemm)["value"].get<double>(),
                100 * (*gemm)["value"].get<double>() / pipe["value"].get<double>());
  }
}

}  // namespace
}  // namespace aispflow::kernels

#endif  // AISPFLOW_HAS_CUDA
