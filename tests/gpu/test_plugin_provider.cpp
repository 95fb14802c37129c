// Plugin providers on a GPU, through the same path a sweep takes (kernels/cuda/plugin_provider.hpp): the example
// plugin is verified and timed; plugins that return a wrong element, write past C or return an error code give
// `failed` records without a timing; the Triton loader runs its AOT cubins when they were built.
#include <gtest/gtest.h>

#ifndef AISPFLOW_HAS_CUDA

TEST(PluginProvider, NotBuilt) { GTEST_SKIP() << "no CUDA device: this aispflow was built without CUDA"; }

#else

#include <filesystem>

#include "kernels/common/gemm_plugin.hpp"
#include "kernels/cuda/plugin_provider.hpp"
#include "support/gpu_test.hpp"
#include "support/plugins.hpp"

namespace aispflow::kernels {
namespace {

namespace fs = std::filesystem;

class PluginProviderTest : public test::GpuTest {
 protected:
  // The provider `name` of plugin `file`, run as the CUDA backend runs it.
  std::unique_ptr<cuda::PluginGemmProvider> provider(const fs::path& file, const std::string& name) {
    for (auto& p : load_gemm_plugin(file))
      if (p.name == name) return std::make_unique<cuda::PluginGemmProvider>(p, context_fn());
    ADD_FAILURE() << file << " offers no provider " << name;
    return nullptr;
  }
  static GemmCase bf16(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& layout = "nn") {
    GemmShape s;
    s.name = "s";
    s.m = m;
    s.n = n;
    s.k = k;
    GemmCase c{s, "bf16"};
    c.layout = layout;
    return c;
  }
};

TEST_F(PluginProviderTest, ExamplePluginIsVerifiedAndTimed) {
  auto p = provider(test::shipped_plugin("example_simple"), "example.simt");
  ASSERT_TRUE(p);
  for (const std::string layout : {"nn", "nt"}) {
    GemmCase c = bf16(200, 328, 264, layout);   // odd sizes: partial tiles in every dimension
    c.options = {{"autotune", true}};
    const GemmRecord r = p->run(c, quick()).front();
    EXPECT_EQ(r.status, "ok") << layout << ": " << r.reason;
    EXPECT_TRUE(r.verified);
    ASSERT_TRUE(r.time.has_value());
    EXPECT_GT(r.time->median_ms, 0);
    EXPECT_TRUE(r.kernel == "simt_tile16" || r.kernel == "simt_tile32") << r.kernel;
    EXPECT_EQ(r.extra["plugin"]["sha256"].get<std::string>().size(), 64u);
    EXPECT_EQ(r.extra["candidates"].size(), 2u);
  }
}

TEST_F(PluginProviderTest, ControlOfTheSabotagePluginPasses) {
  auto p = provider(test::test_plugin("sabotage"), "test.correct");
  ASSERT_TRUE(p);
  const GemmRecord r = p->run(bf16(96, 160, 64), quick()).front();
  EXPECT_EQ(r.status, "ok") << r.reason;
}

TEST_F(PluginProviderTest, WrongResultIsFailedAndUntimed) {
  auto p = provider(test::test_plugin("sabotage"), "test.wrong");
  ASSERT_TRUE(p);
  const GemmRecord r = p->run(bf16(96, 160, 64), quick()).front();
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.verified);
  EXPECT_FALSE(r.time.has_value());
  EXPECT_NE(r.reason.find("verification failed"), std::string::npos) << r.reason;
}

TEST_F(PluginProviderTest, WritePastCIsCaught) {
  auto p = provider(test::test_plugin("sabotage"), "test.past_c");
  ASSERT_TRUE(p);
  const GemmRecord r = p->run(bf16(96, 160, 64), quick()).front();
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.time.has_value());
  EXPECT_NE(r.reason.find("memory check failed: wrote 16 guard bytes outside C"), std::string::npos) << r.reason;
}

TEST_F(PluginProviderTest, WritePastCDuringTimingIsCaughtAfterTiming) {
  auto p = provider(test::test_plugin("sabotage"), "test.past_c_late");
  ASSERT_TRUE(p);
  const GemmRecord r = p->run(bf16(96, 160, 64), quick()).front();
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.time.has_value());
  EXPECT_NE(r.reason.find("memory check failed after timing: wrote"), std::string::npos) << r.reason;
}

TEST_F(PluginProviderTest, ErrorCodeIsFailedWithTheMessage) {
  auto p = provider(test::test_plugin("sabotage"), "test.error");
  ASSERT_TRUE(p);
  const GemmRecord r = p->run(bf16(96, 160, 64), quick()).front();
  EXPECT_EQ(r.status, "failed");
  EXPECT_FALSE(r.time.has_value());
  EXPECT_NE(r.reason.find("test.error's run() returned error 7: the test plugin's planted error"), std::string::npos)
      << r.reason;
}

TEST_F(PluginProviderTest, TritonAotKernelsRunVerified) {
  const fs::path triton = test::shipped_plugin("triton");
  const char* env = std::getenv("AISPFLOW_TRITON_KERNELS");
  if (!(env && *env) && !fs::exists(triton.parent_path() / "triton_kernels" / "manifest.tsv"))
    GTEST_SKIP() << "no Triton kernels built (-DAISPFLOW_TRITON_AOT=ON or AISPFLOW_TRITON_KERNELS)";
  auto p = provider(triton, "triton");
  ASSERT_TRUE(p);
  for (const std::string layout : {"nn", "nt"}) {
    const GemmRecord r = p->run(bf16(520, 512, 1024, layout), quick()).front();   // M not a multiple of the tile
    EXPECT_EQ(r.status, "ok") << layout << ": " << r.reason;
  }
  GemmCase fp8 = bf16(256, 512, 1024, "nt");
  fp8.dtype = "fp8_e4m3";
  const GemmRecord r = p->run(fp8, quick()).front();
  EXPECT_EQ(r.status, "ok") << r.reason;
}

}  // namespace
}  // namespace aispflow::kernels

#endif
