// What the built plugin's SASS says, read with cuobjdump (PyPI's nvidia-cuda-cuobjdump, installed by
// .ci/install-deps.sh); no GPU needed: the Blackwell CUTLASS instances are really in the build (an sm_100a ELF
// next to the sm_90a ones), and no default sm_90a CUTLASS GEMM spills registers. The spill scan's own broken
// case (a synthetic listing) needs no build at all; the sm_90a check needs sm_90a instances, not sm_100a ones.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

// The sm_90a CUTLASS GEMM kernels of `cuobjdump --dump-resource-usage` output: how many there are, and the
// ones that use a stack (spill registers). A function line is followed by its resource line.
struct SpillReport {
  int gemms = 0;
  std::vector<std::string> spilling;   // "<resources>\n<function>"
};
SpillReport sm90_gemm_spills(const std::string& usage) {
  SpillReport r;
  std::size_t at = 0;
  while ((at = usage.find(" Function ", at)) != std::string::npos) {
    const std::size_t name_end = usage.find('\n', at);
    const std::string name = usage.substr(at, name_end - at);
    const std::size_t line_end = usage.find('\n', name_end + 1);
    const std::string resources = usage.substr(name_end + 1, line_end - name_end - 1);
    at = name_end;
    if (name.find("device_kernel") == std::string::npos || name.find("MainloopSm90") == std::string::npos) continue;
    ++r.gemms;
    if (resources.find("STACK:0 ") == std::string::npos) r.spilling.push_back(resources + "\n" + name);
  }
  return r;
}

// The broken case of the check below: a listing with one spilling sm_90a GEMM (its stack 248 bytes, as the
// first 128x256 fp8 default had) is caught; other kernels' stacks do not count. Built in every configuration.
TEST(CutlassSass, SpillCheckCatchesAStack) {
  const std::string listing =
      " Function _ZN7cutlass13device_kernelINS_MainloopSm90TmaA_E:\n"
      "  REG:168 STACK:0 SHARED:1024 LOCAL:0\n"
      " Function _ZN7cutlass13device_kernelINS_MainloopSm90TmaB_E:\n"
      "  REG:168 STACK:248 SHARED:1024 LOCAL:0\n"
      " Function _ZN8aispflow21reference_gemm_kernelE:\n"
      "  REG:80 STACK:8 SHARED:9536 LOCAL:0\n";
  const SpillReport r = sm90_gemm_spills(listing);
  EXPECT_EQ(r.gemms, 2);
  ASSERT_EQ(r.spilling.size(), 1u);
  EXPECT_NE(r.spilling.front().find("MainloopSm90TmaB"), std::string::npos);
}

#if defined(AISPFLOW_TEST_CUDA_PLUGIN)

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
  if (AISPFLOW_TEST_CUTLASS_SM100 == 0)
    GTEST_SKIP() << "this build has no sm_100a CUTLASS instances (no CUTLASS, nvcc older than 12.8, or "
                    "AISPFLOW_CUTLASS_SM100=OFF)";
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
  if (AISPFLOW_TEST_CUTLASS_SM90 == 0) GTEST_SKIP() << "this build has no sm_90a CUTLASS instances (no CUTLASS)";
  if (std::string(AISPFLOW_TEST_CUTLASS_SET) == "all") GTEST_SKIP() << "the `all` set holds spilling instances on purpose";
  const std::string tool = find_cuobjdump();
  ASSERT_FALSE(tool.empty()) << "cuobjdump not found: run .ci/install-deps.sh (or set AISPFLOW_CUOBJDUMP)";
  const std::string usage = run("'" + tool + "' --dump-resource-usage '" AISPFLOW_TEST_CUDA_PLUGIN "' 2>&1");
  const SpillReport r = sm90_gemm_spills(usage);
  for (const auto& s : r.spilling) ADD_FAILURE() << "spills: " << s;
  EXPECT_GE(r.gemms, AISPFLOW_TEST_CUTLASS_SM90) << "expected every sm_90a CUTLASS GEMM in the listing:\n"
                                                 << usage.substr(0, 2000);
}

#else

TEST(CutlassSass, NoDefaultSm90InstanceSpills) { GTEST_SKIP() << "this build has no CUDA plugin (no CUDA)"; }

TEST(CutlassSass, PluginCarriesSm100aAndSm90aCode) { GTEST_SKIP() << "this build has no CUDA plugin (no CUDA)"; }

#endif

}  // namespace
