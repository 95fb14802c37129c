#pragma once
// Where the tests find the plugins the build made: $AISPFLOW_TEST_PLUGIN_DIR / $AISPFLOW_PLUGIN_DIR when set (a bundle
// on a GPU host), else the build tree's directories (tests/CMakeLists.txt compiles them in).
#include <cstdlib>
#include <filesystem>
#include <string>

namespace aispflow::test {

inline std::filesystem::path dir_from(const char* env_name, const char* built) {
  const char* env = std::getenv(env_name);
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(built);
}
// A test plugin (tests/plugins/): test_plugin("v2_only") -> .../libtest_plugin_v2_only.so
inline std::filesystem::path test_plugin(const std::string& variant) {
  return dir_from("AISPFLOW_TEST_PLUGIN_DIR", AISPFLOW_TEST_PLUGIN_DIR) / ("libtest_plugin_" + variant + ".so");
}
// A shipped example plugin (examples/plugins/): shipped_plugin("example_simple") -> .../libaispflow_example_simple.so
inline std::filesystem::path shipped_plugin(const std::string& name) {
  return dir_from("AISPFLOW_PLUGIN_DIR", AISPFLOW_PLUGIN_DIR) / ("libaispflow_" + name + ".so");
}

}  // namespace aispflow::test
