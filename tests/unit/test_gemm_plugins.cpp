// GEMM provider plugins without a GPU: the loader's ABI checks (each broken plugin refused with a message naming
// the file), listing what a plugin offers, the workflow's `plugins:` key (errors with file/line/field, paths relative
// to the workflow), and the cache-key files of gemm_sweep (only the plugins whose providers a sweep names).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kernels/common/gemm_plugin.hpp"
#include "kernels/common/sha256.hpp"
#include "nodes/gemm_sweep.hpp"
#include "nodes/register_all.hpp"
#include "pipeline/workflow.hpp"
#include "support/plugins.hpp"

namespace aispflow {
namespace {

namespace fs = std::filesystem;
using kernels::GemmPlugins;
using kernels::load_gemm_plugin;

std::string load_error(const fs::path& file) {
  try {
    load_gemm_plugin(file);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(kernels::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kernels::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks (56 bytes: the length no longer fits the first block).
  EXPECT_EQ(kernels::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(GemmPluginLoader, ReadsAGoodPlugin) {
  const auto providers = load_gemm_plugin(test::test_plugin("ok"));
  ASSERT_EQ(providers.size(), 1u);
  const auto& p = providers.front();
  EXPECT_EQ(p.name, "test.abi");
  EXPECT_EQ(p.plugin_name, "test-plugin");
  EXPECT_EQ(p.plugin_sha256, kernels::sha256_file(test::test_plugin("ok")));
  EXPECT_EQ(p.config_names(), std::vector<std::string>{"only"});
  const auto j = p.to_json();
  EXPECT_EQ(j["dtypes"], nlohmann::json({"bf16"}));
  EXPECT_EQ(j["layouts"], nlohmann::json({"nn"}));
  EXPECT_EQ(j["plugin"]["path"], fs::absolute(test::test_plugin("ok")).lexically_normal().string());
}

TEST(GemmPluginLoader, RefusesBrokenPluginsNamingTheFile) {
  const fs::path text = fs::temp_directory_path() / ("aispflow_not_a_library_" + std::to_string(::getpid()) + ".so");
  std::ofstream(text) << "this is not an ELF file\n";
  std::string e = load_error(text);
  EXPECT_NE(e.find(text.string()), std::string::npos) << e;
  EXPECT_NE(e.find("cannot be loaded"), std::string::npos) << e;
  fs::remove(text);

  e = load_error("/nonexistent/libnothing.so");
  EXPECT_NE(e.find("/nonexistent/libnothing.so"), std::string::npos) << e;
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;

  e = load_error(test::test_plugin("no_entry"));
  EXPECT_NE(e.find("libtest_plugin_no_entry.so"), std::string::npos) << e;
  EXPECT_NE(e.find("exports no entry point aispflow_gemm_plugin_v1"), std::string::npos) << e;

  e = load_error(test::test_plugin("v2_only"));
  EXPECT_NE(e.find("libtest_plugin_v2_only.so"), std::string::npos) << e;
  EXPECT_NE(e.find("implements plugin ABI v2"), std::string::npos) << e;
  EXPECT_NE(e.find("loads ABI v1"), std::string::npos) << e;

  e = load_error(test::test_plugin("bad_abi"));
  EXPECT_NE(e.find("libtest_plugin_bad_abi.so"), std::string::npos) << e;
  EXPECT_NE(e.find("abi_version 99"), std::string::npos) << e;

  e = load_error(test::test_plugin("bad_table"));
  EXPECT_NE(e.find("provider #0"), std::string::npos) << e;
  EXPECT_NE(e.find("letters, digits"), std::string::npos) << e;
}

TEST(GemmPluginLoader, ExampleAndTritonLoaderListTheirProviders) {
  const fs::path triton = test::shipped_plugin("triton");
  ASSERT_TRUE(fs::exists(triton)) << triton;
  const auto t = load_gemm_plugin(triton);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.front().name, "triton");
  EXPECT_TRUE(t.front().table->dtypes & AISPFLOW_DTYPE_BF16);
  EXPECT_TRUE(t.front().table->dtypes & AISPFLOW_DTYPE_FP8_E4M3);
  if (!std::getenv("AISPFLOW_TRITON_KERNELS") && !fs::exists(triton.parent_path() / "triton_kernels/manifest.tsv")) {
    // Built without the kernels (CI): one placeholder configuration, declined with the reason.
    aispflow_gemm_case_v1_t c{};
    c.m = c.n = c.k = 256;
    c.batch = 1;
    c.dtype_name = "bf16";
    const char* why = t.front().table->check(&c, 0);
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::string(why).find("no Triton kernels"), std::string::npos) << why;
  }
  const fs::path simple = test::shipped_plugin("example_simple");
  if (!fs::exists(simple)) GTEST_SKIP() << "built without CUDA: no example plugin at " << simple;
  const auto s = load_gemm_plugin(simple);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.front().name, "example.simt");
  EXPECT_EQ(s.front().config_names(), (std::vector<std::string>{"simt_tile16", "simt_tile32"}));
}

TEST(GemmPlugins, ANameAispflowUsesIsRefused) {
  try {
    GemmPlugins::instance().add(test::test_plugin("name_taken"), builtin_provider_names());
    FAIL() << "a plugin offering 'cublaslt' was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'cublaslt', a name aispflow's own providers use"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(GemmPlugins::instance().find("cublaslt"), nullptr);
}

// ---- workflows ----------------------------------------------------------------------------------------------

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_builtin_nodes(reg);
    return reg;
  }();
  return r;
}

std::string parse_error(const std::string& yaml, const fs::path& file) {
  try {
    parse_workflow(yaml, file, registry());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(WorkflowPlugins, LoadedRelativeToTheWorkflowAndUsableBySweeps) {
  const fs::path plugin = fs::absolute(test::test_plugin("ok")).lexically_normal();
  const fs::path wf = plugin.parent_path() / "sub" / "wf.yaml";   // need not exist: only its directory matters
  const std::string yaml = "plugins: [../" + plugin.filename().string() + R"(]
nodes:
  with_plugin:
    type: gemm_sweep
    params: {providers: [test.abi, cpu.naive], shapes: [{name: s, m: 8, n: 8, k: 8}], dtypes: [bf16]}
  without:
    type: gemm_sweep
    params: {providers: [cpu.naive], shapes: [{name: s, m: 8, n: 8, k: 8}]}
)";
  const Workflow w = parse_workflow(yaml, wf, registry());
  ASSERT_EQ(w.plugins.size(), 1u);
  EXPECT_EQ(w.plugins.front(), plugin);
  ASSERT_NE(GemmPlugins::instance().find("test.abi"), nullptr);
  // The plugin enters the key of the sweep that uses it, and of no other.
  const NodeType& sweep = *registry().find("gemm_sweep");
  EXPECT_EQ(sweep.key_files(w.nodes[0].params), std::vector<std::string>{plugin.string()});
  EXPECT_TRUE(sweep.key_files(w.nodes[1].params).empty());
  EXPECT_TRUE(is_gpu_provider_name("test.abi"));
}

TEST(WorkflowPlugins, ErrorsNameTheFileLineAndField) {
  const fs::path wf = fs::temp_directory_path() / "wf.yaml";
  std::string e = parse_error("nodes:\n  a: {type: command, params: {run: 'true'}}\nplugins:\n  - missing/libx.so\n", wf);
  EXPECT_NE(e.find("wf.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'plugins[0]'"), std::string::npos) << e;
  EXPECT_NE(e.find("'missing/libx.so' does not exist"), std::string::npos) << e;

  e = parse_error("plugins: " + test::test_plugin("v2_only").string() + "\nnodes: {a: {type: command, params: {run: 'true'}}}\n", wf);
  EXPECT_NE(e.find("field 'plugins'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a list"), std::string::npos) << e;

  e = parse_error("plugins: [" + test::test_plugin("v2_only").string() +
                      "]\nnodes: {a: {type: command, params: {run: 'true'}}}\n", wf);
  EXPECT_NE(e.find("wf.yaml:1"), std::string::npos) << e;
  EXPECT_NE(e.find("libtest_plugin_v2_only.so' implements plugin ABI v2"), std::string::npos) << e;

  // A sweep naming a provider no plugin offers is still an error, listing what is known.
  e = parse_error("nodes: {a: {type: gemm_sweep, params: {providers: [example.nothing], shapes: [{name: s, m: 8, n: 8, k: 8}]}}}\n", wf);
  EXPECT_NE(e.find("unknown provider 'example.nothing'"), std::string::npos) << e;
}

}  // namespace
}  // namespace aispflow
