// The Blackwell CUTLASS instances are really in the build: cuobjdump (PyPI's nvidia-cuda-cuobjdump, installed by
// .ci/install-deps.sh) lists an sm_100a ELF (SASS) in libaispflow_cuda.so, next to the sm_90a ones. No GPU needed.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

#if defined(AISPFLOW_TEST_CUDA_PLUGIN) && AISPFLOW_TEST_CUTLASS_SM100 > 0

std::string find_cuobjdump() {
  if (const char* env = std::getenv("AISPFLOW_CUOBJDUMP")) return env;
  const char* home = std::getenv("HOME");
  const std::string cached = std::string(home ? home : "") + "/.cache/aispflow-deps/cuobjdump-13.5.37/nvidia/cu13/bin/cuobjdump";
  if (std::filesystem::exists(cached)) return cached;
  for (const char* p : {"/usr/local/cuda/bin/cuobjdump"})
    if (std::filesystem::exists(p)) return p;
  return {};
}

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), int(buffer.size()), pipe)) out += buffer.data();
  pclose(pipe);
  return out;
}

TEST(CutlassSass, PluginCarriesSm100aAndSm90aCode) {
  const std::string tool = find_cuobjdump();
  // CI installs it; a build with sm_100a instances must be able to prove it.
  ASSERT_FALSE(tool.empty()) << "cuobjdump not found: run .ci/install-deps.sh (or set AISPFLOW_CUOBJDUMP)";
  const std::string listing = run("'" + tool + "' --list-elf '" AISPFLOW_TEST_CUDA_PLUGIN "' 2>&1");
  EXPECT_NE(listing.find("sm_100a"), std::string::npos) << listing;
  EXPECT_NE(listing.find("sm_90a"), std::string::npos) << listing;
}

// Each sm_90a CUTLASS GEMM kernel's resource usage: no stack, i.e. no register spills. An fp8 tile whose
// warpgroup owns more than 64x128 outputs spills with CUTLASS's exact fp8 mainloop and runs 3x slower
// (docs/cutlass.md); such shapes are in the `all` set only, so the default build must have none.
TEST(CutlassSass, NoDefaultSm90InstanceSpills) {
  if (std::string(AISPFLOW_TEST_CUTLASS_SET) != "default") GTEST_SKIP() << "the `all` set holds spilling instances on purpose";
  const std::string tool = find_cuobjdump();
  ASSERT_FALSE(tool.empty()) << "cuobjdump not found: run .ci/install-deps.sh (or set AISPFLOW_CUOBJDUMP)";
  const std::string usage = run("'" + tool + "' --dump-resource-usage '" AISPFLOW_TEST_CUDA_PLUGIN "' 2>&1");
  int gemms = 0;
  std::size_t at = 0;
  while ((at = usage.find(" Function ", at)) != std::string::npos) {
    const std::size_t name_end = usage.find('\n', at);
    const std::string name = usage.substr(at, name_end - at);
    const std::size_t line_end = usage.find('\n', name_end + 1);
    const std::string resources = usage.substr(name_end + 1, line_end - name_end - 1);
    at = name_end;
    if (name.find("device_kernel") == std::string::npos || name.find("MainloopSm90") == std::string::npos) continue;
    ++gemms;
    EXPECT_NE(resources.find("STACK:0 "), std::string::npos) << "spills: " << resources << "\n" << name;
  }
  EXPECT_GE(gemms, 10) << "expected the sm_90a CUTLASS GEMMs in the listing:\n" << usage.substr(0, 2000);
}

#else

TEST(CutlassSass, NoDefaultSm90InstanceSpills) {
  GTEST_SKIP() << "this build has no sm_100a CUTLASS instances (no CUDA, no CUTLASS, or nvcc older than 12.8)";
}

TEST(CutlassSass, PluginCarriesSm100aAndSm90aCode) {
  GTEST_SKIP() << "this build has no sm_100a CUTLASS instances (no CUDA, no CUTLASS, or nvcc older than 12.8)";
}

#endif

}  // namespace
