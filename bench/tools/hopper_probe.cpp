// Developer probe for ours.wgmma / ours.cluster configurations: for each (configuration, shape, dtype, layout,
// epilogue) it verifies the kernel against the reference (poisoned output, every element) and, if correct,
// times it and cuBLASLt's heuristic top algorithm on the same problem, interleaved, L2 flushed. Prints one line
// each. It is the quick loop for kernel work; the evidence comes from the workflows (gemm_sweep records).
//   hopper_probe [filter [case]]   only configurations whose name contains `filter` (or one of its parts between
//                                  '|'), only cases whose `==` line
//                                  (e.g. "4096x4096x4096 bf16 nt none": shape, dtype, layout, epilogue, each
//                                  spelt out) contains `case` (for ncu runs)
//   PROBE_SHAPE="MxNxK[xBATCH] dtype layout" replaces the case list with that one case (epilogue none): a shape
//                                  the list does not hold, without a rebuild
//   PROBE_SUSTAIN_MS=ms            after timing, runs cuBLASLt and then each configuration back to back for that
//                                  long and prints each run's wall-clock window ("sustain" lines, ms since the epoch
//                                  and UTC), so that a clock and power log taken beside it (nvidia-smi -lms) can be
//                                  cut by kernel: under the H100's power cap the SM clock is the kernel's too
//   PROBE_INTERLEAVE_ORDERS=1     after each case, the configurations that verified are also timed as autotune's
//                                  finalists are (Harness::time_interleaved, one sample of each per round), once in
//                                  every order (all permutations, at most 4 configurations): "order" lines, one
//                                  median per configuration, so that a bias by position or by predecessor in the
//                                  rounds shows (NOTES.md step 132)
//   PROBE_CARRYOVER=1              after each case, for every ordered pair (X, Y) of the configurations that
//                                  verified (X = Y included): a batch of X, a rest, the L2 flush, then a timed batch
//                                  of Y; rests of 2x (the harness's) and 20x the batch: "carryover" lines, Y's
//                                  median after each X, so that a predecessor's effect and whether a long rest
//                                  removes it show (NOTES.md step 133)
//   PROBE_COLD_CODE=1              every timing with `timing.code: cold`: the SMs' instruction caches evicted before
//                                  each sample (kernels/cuda/code_eviction.hpp), as in a pipeline (NOTES.md step 137)
//   PROBE_PLACES=1                 for each clustered persistent configuration that verified, the place table of
//                                  GPC order this process measured ("places" lines: cluster i -> place), so that
//                                  runs in separate processes can be compared (NOTES.md step 134)
//   PROBE_GRAPH_VS_STREAM=1        cuBLASLt and each configuration that verified timed three ways: the harness
//                                  (a captured graph of ~2 ms of launches, flushed before each), the same batch as
//                                  plain stream launches, and a graph captured here; "threeway" lines (NOTES.md
//                                  step 133)
// Operands: like the workflows, the launches rotate over enough copies that each reads cold data (the `==` line
// says how many); PROBE_WARM=1 times one copy, which stays in L2 between the launches of a batch (how this probe
// timed before 2026-11-26's step 26: NOTES.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/tools/lt_heuristic_top.hpp"
#include "bench/tools/probe_shape.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/cluster_calibration.hpp"
#include "kernels/cuda/ours/hopper_kernels.hpp"
#include "kernels/cuda/ours/hopper_params.hpp"

using namespace aispflow::kernels;
using namespace aispflow::kernels::cuda;

namespace {

struct Case { std::int64_t m, n, k; const char* dtype; const char* layout; const char* epi; std::int64_t batch = 1; };

// PROBE_SUSTAIN_MS: `launch` (over the operand copies in turn) back to back for that long; prints the window.
void sustain(const std::string& who, const std::function<void(cudaStream_t, int)>& launch, int copies,
             cudaStream_t stream) {
  const char* env = std::getenv("PROBE_SUSTAIN_MS");
  if (!env) return;
  const double window_ms = std::atof(env);
  auto now_ms = [] {
    return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  auto utc = [](double ms) {
    const std::time_t secs = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%H:%M:%S", &tm);
    return std::string(text) + "." + std::to_string(int(std::fmod(ms, 1000.0)) + 1000).substr(1);
  };
  const double start = now_ms();
  int launches = 0;
  while (now_ms() - start < window_ms) {
    for (int i = 0; i < 16; ++i, ++launches) launch(stream, launches % copies);
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const double end = now_ms();
  std::printf("  sustain %-40s %.0f %.0f  %s - %s UTC  %d launches, %.4f ms each\n", who.c_str(), start, end,
              utc(start).c_str(), utc(end).c_str(), launches, (end - start) / launches);
}

// Whether a configuration's id passes the filter: it contains the filter, or one of its '|'-separated parts.
bool matches_filter(const std::string& id, const std::string& filter) {
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = filter.find('|', begin);
    const std::string part = filter.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (id.find(part) != std::string::npos) return true;
    if (end == std::string::npos) return false;
    begin = end + 1;
  }
}

// PROBE_SHAPE's case (bench/tools/probe_shape.hpp; epilogue none); its dtype and layout point into static storage.
std::optional<Case> probe_shape_case(const char* text) {
  static aispflow::bench::ProbeShape shape;
  const auto parsed = aispflow::bench::parse_probe_shape(text);
  if (!parsed || !lt_dtype(parsed->dtype)) return std::nullopt;
  shape = *parsed;
  return Case{shape.m, shape.n, shape.k, shape.dtype.c_str(), shape.layout.c_str(), "none", shape.batch};
}

// Whether environment switch `name` is set to 1.
bool switched_on(const char* name) {
  const char* value = std::getenv(name);
  return value && std::string(value) == "1";
}

// Back-to-back launches over the operand copies, timed with events as one batch (PROBE_CARRYOVER and
// PROBE_GRAPH_VS_STREAM: the probe's own sampling, where the harness times work of 50 us and more one launch a
// sample). A batch of launches_for() launches lasts about 2 ms, as the harness's graph samples do.
class Batches {
 public:
  Batches(Harness& harness, int copies) : harness_(harness), copies_(copies) {
    AISPFLOW_CUDA_CHECK(cudaEventCreate(&start_));
    AISPFLOW_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~Batches() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Batches(const Batches&) = delete;
  Batches& operator=(const Batches&) = delete;

  static int launches_for(double ms_per_launch) { return std::clamp(int(2.0 / std::max(ms_per_launch, 1e-3)), 1, 200); }
  cudaStream_t stream() const { return harness_.stream(); }
  // Enqueues `launches` launches, each on the next operand copy.
  void enqueue(const BoundLaunch& launch, int launches) {
    for (int i = 0; i < launches; ++i) launch(stream(), copy_++ % copies_);
  }
  // `work` (enqueued on stream()) timed with events, after the harness's L2 flush when `flushed`; waits for it.
  double ms(const std::function<void()>& work, bool flushed = true) {
    if (flushed) harness_.flush_l2();
    AISPFLOW_CUDA_CHECK(cudaEventRecord(start_, stream()));
    work();
    AISPFLOW_CUDA_CHECK(cudaEventRecord(stop_, stream()));
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream()));
    float elapsed = 0;
    AISPFLOW_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start_, stop_));
    return double(elapsed);
  }
  static void rest(double ms) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }

 private:
  Harness& harness_;
  int copies_;
  int copy_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// PROBE_PLACES: the GPC order's place table of a configuration, as bind() took it from the calibration (cached
// per process: this call measures nothing new).
void print_places(const OurKernel& kernel, const GemmProblem& problem) {
  const nlohmann::json config = kernel.config();
  const ours::HopperConfig* hopper = ours::hopper_config_of(kernel);
  if (!switched_on("PROBE_PLACES") || !hopper || config.value("work_order", "") != "gpc") return;
  const auto key = hopper->instance_key(!problem.b_transposed());
  const int clusters = config.value("co_resident_clusters", 0);
  const auto places = ours::measured_gpc_places(hopper->cluster_m * hopper->cluster_n, clusters,
                                                std::size_t(ours::hopper_instance(key).smem_bytes));
  std::printf("  places %-40s", config["name"].get<std::string>().c_str());
  for (int place : places) std::printf(" %d", place);
  std::printf("\n");
}

// PROBE_GRAPH_VS_STREAM: one piece of work timed by the harness, as plain stream batches and as a graph of the same
// batch captured here; each batch after the harness's L2 flush, a 2x rest after it, 15 samples, medians.
void time_three_ways(Harness& harness, const TimingPolicy& timing, const std::string& name, const BoundLaunch& launch,
                     int copies) {
  if (!switched_on("PROBE_GRAPH_VS_STREAM")) return;
  const double by_harness = harness.time(timing, rotating_launch(launch, copies)).stats.median_ms;
  Batches batches(harness, copies);
  const int launches = Batches::launches_for(by_harness);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  AISPFLOW_CUDA_CHECK(cudaStreamBeginCapture(batches.stream(), cudaStreamCaptureModeThreadLocal));
  batches.enqueue(launch, launches);
  AISPFLOW_CUDA_CHECK(cudaStreamEndCapture(batches.stream(), &graph));
  AISPFLOW_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  AISPFLOW_CUDA_CHECK(cudaGraphLaunch(exec, batches.stream()));   // (the first replay uploads the graph)
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(batches.stream()));
  auto sample = [&](const std::function<void()>& work) {
    const double ms = batches.ms(work);
    Batches::rest(2.0 * ms);
    return ms / launches;
  };
  std::vector<double> plain, graphed;
  for (int rep = 0; rep < 15; ++rep) {
    plain.push_back(sample([&] { batches.enqueue(launch, launches); }));
    graphed.push_back(sample([&] { AISPFLOW_CUDA_CHECK(cudaGraphLaunch(exec, batches.stream())); }));
  }
  std::printf("  threeway %-44s harness %.4f ms  stream batch %.4f ms  own graph %.4f ms  (%d launches a batch)\n",
              name.c_str(), by_harness, median_of(plain), median_of(graphed), launches);
  std::fflush(stdout);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// PROBE_CARRYOVER: Y's time right after a batch of X, with the harness's flush in between and a rest of 2x or 20x.
void time_after_each_predecessor(Harness& harness, const std::vector<std::pair<std::string, BoundLaunch>>& verified,
                                 int copies) {
  Batches batches(harness, copies);
  const BoundLaunch& first = verified.front().second;
  const int launches = Batches::launches_for(batches.ms([&] { batches.enqueue(first, 5); }, false) / 5);
  for (const double rest_factor : {2.0, 20.0})
    for (const auto& [before_name, before] : verified)
      for (const auto& [name, launch] : verified) {
        std::vector<double> samples;
        for (int rep = 0; rep < 15; ++rep) {
          batches.enqueue(before, launches);
          AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(batches.stream()));
          Batches::rest(rest_factor * 2.0);
          samples.push_back(batches.ms([&] { batches.enqueue(launch, launches); }) / launches);
          Batches::rest(rest_factor * 2.0);
        }
        std::printf("  carryover rest %gx  %-44s after %-44s %.4f ms (min %.4f, max %.4f)\n", rest_factor,
                    name.c_str(), before_name.c_str(), median_of(samples),
                    *std::min_element(samples.begin(), samples.end()), *std::max_element(samples.begin(), samples.end()));
        std::fflush(stdout);
      }
}

// PROBE_INTERLEAVE_ORDERS: the configurations timed together as autotune's finalists are, in every order.
void time_in_every_order(Harness& harness, const TimingPolicy& timing,
                         const std::vector<std::pair<std::string, BoundLaunch>>& verified, int copies) {
  TimingPolicy policy = timing;   // cluster_gemm.yaml's policy, which autotune's finalists were timed under
  policy.min_samples = 10;
  policy.max_samples = 100;
  policy.target_stdrel = 0.01;
  policy.budget_s = 1.0;
  std::vector<std::size_t> order(verified.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  do {
    std::vector<std::function<void(cudaStream_t)>> launches;
    for (std::size_t i : order) launches.push_back(rotating_launch(verified[i].second, copies));
    const auto measured = harness.time_interleaved(policy, launches);
    std::printf("  order");
    for (std::size_t f = 0; f < order.size(); ++f)
      std::printf("  %zu:%s %.4f ms", f, verified[order[f]].first.c_str(), measured[f].stats.median_ms);
    std::printf("\n");
    std::fflush(stdout);
  } while (std::next_permutation(order.begin(), order.end()));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  const std::string case_filter = argc > 2 ? argv[2] : "";
  std::optional<Case> only_case;
  if (const char* only = std::getenv("PROBE_SHAPE")) {
    only_case = probe_shape_case(only);
    if (!only_case) {
      std::fprintf(stderr,
                   "PROBE_SHAPE=\"%s\": expected \"MxNxK[xBATCH] dtype layout\", e.g. \"1000x896x1008 bf16 nn\"\n",
                   only);
      return 2;
    }
  }
  if (system_info().devices.empty()) {
    std::printf("no GPU: %s\n", system_info().why_no_device.c_str());
    return 0;
  }
  GpuContext ctx(0);
  const Case cases[] = {
      {1, 1, 8, "bf16", "nt", "none"},          {17, 2880, 40, "bf16", "nt", "bias"},
      {17, 2880, 40, "bf16", "nn", "bias_gelu"}, {4096, 4096, 4096, "bf16", "nt", "none"},
      {4096, 4096, 4096, "bf16", "nn", "none"},  {8192, 8192, 8192, "bf16", "nt", "none"},
      {4096, 2880, 2880, "bf16", "nt", "none"},  {4096, 5120, 2880, "bf16", "nt", "none"},
      {128, 8192, 8192, "bf16", "nt", "none"},   {1, 5120, 2880, "bf16", "nt", "none"},
      {4096, 4096, 4096, "fp8_e4m3", "nt", "none"}, {8192, 8192, 8192, "fp8_e4m3", "nt", "none"},
      {4096, 4096, 4096, "bf16", "nt", "bias_gelu"}, {300, 2880, 2880, "fp8_e4m3", "nt", "bias_gelu"},
      {512, 2880, 2880, "bf16", "nt", "bias", 32},  {512, 5760, 2880, "fp8_e4m3", "nn", "none", 32},
      {8, 2880, 2880, "bf16", "nn", "bias_gelu", 4},
      // issue 22's odd shapes: tile quantization, short K, decode
      {1000, 1000, 1000, "bf16", "nt", "none"},     {4096, 4096, 256, "bf16", "nt", "none"},
      {3000, 5000, 2000, "bf16", "nt", "none"},     {32, 5120, 2880, "bf16", "nt", "none"},
      {64, 2880, 4096, "bf16", "nt", "none"},       {2048, 2048, 2048, "bf16", "nt", "none"},
      // kernel_selector's decode shapes (M = 64) in both dtypes: split-K over the cluster (NOTES.md step 41)
      {64, 5120, 2880, "bf16", "nt", "none"},       {64, 2880, 4096, "fp8_e4m3", "nt", "none"},
      {64, 5120, 2880, "fp8_e4m3", "nt", "none"},
      // N = 2880 and 5120, prefill attn_out and qkv_proj (NOTES.md steps 53, 55: tile widths and stream-K there)
      {4096, 2880, 4096, "bf16", "nt", "none"},     {4096, 2880, 4096, "fp8_e4m3", "nt", "none"},
      {4096, 2880, 2880, "fp8_e4m3", "nt", "none"}, {4096, 5120, 2880, "fp8_e4m3", "nt", "none"},
      {512, 5760, 2880, "fp8_e4m3", "nt", "none", 32}, {4096, 2880, 4096, "bf16", "nt", "bias_gelu"},
      // the fused epilogue (cluster_gemm.yaml's epilogue node: bias + GELU on the squares), and bias alone
      {2048, 2048, 2048, "bf16", "nt", "bias_gelu"},  {8192, 8192, 8192, "bf16", "nt", "bias_gelu"},
      {4096, 4096, 4096, "bf16", "nt", "bias"},
      // unaligned.yaml's short-K rows: K = 512 at 8192^2, where bf16 is 0.80x of cuBLASLt (NOTES.md step 61)
      {8192, 8192, 512, "bf16", "nt", "none"},      {8192, 8192, 512, "fp8_e4m3", "nt", "none"},
      // unaligned.yaml's aligned 1000 x 1000 x 1008 (layout nn, the row that misses its target; NOTES.md step 91)
      {1000, 1000, 1008, "bf16", "nn", "none"},     {1000, 1000, 1008, "fp8_e4m3", "nt", "none"},
      // 1000 x 1000 x 1008's neighbours (NOTES.md step 97): which of its row strides (2016 bytes for A, 2000 for
      // B: not a multiple of 128, so a box row spans two L2 lines) and which of its edges costs what
      {1024, 1024, 1024, "bf16", "nn", "none"},     {1024, 1024, 1024, "bf16", "nt", "none"},
      {1000, 1024, 1024, "bf16", "nn", "none"},     {1024, 1000, 1024, "bf16", "nn", "none"},
      {1000, 1000, 1024, "bf16", "nn", "none"},     {1024, 1024, 1008, "bf16", "nn", "none"},
      {1008, 1008, 1008, "bf16", "nn", "none"},     {1000, 1000, 1000, "bf16", "nn", "none"},
  };
  TimingPolicy timing;
  timing.budget_s = 0.3;
  timing.max_samples = 40;
  timing.cold_code = switched_on("PROBE_COLD_CODE");   // timing.code: cold (NOTES.md step 137)
  std::vector<std::unique_ptr<OurKernel>> kernels = ours::wgmma_kernels();
  for (auto& k : ours::cluster_kernels()) kernels.push_back(std::move(k));
  // The raster experiments below add a configuration once per band, named <prefix><band> (the probe's `id`
  // shows the band as r<band>).
  auto add_bands = [&kernels](const std::string& prefix, ours::HopperConfig config, std::initializer_list<int> bands) {
    for (int band : bands) {
      config.family = prefix + std::to_string(band);
      config.raster_group = band;
      kernels.push_back(ours::make_hopper_kernel(config));
    }
  };
  auto tall = [](ours::HopperConfig c) {   // the same configuration with 256-row tiles
    c.block_m = 256;
    return c;
  };
  auto promoting = [](ours::HopperConfig c, int interval) {   // fp8, promoting every `interval` k-tiles
    c.promotion_interval = interval;
    return c;
  };
  // Rasterization experiments (filter "raster"): the default band is 8 cluster rows (NOTES.md step 4).
  // "raster128": 128 x 128 tiles without a cluster, bf16 and fp8 promote4, bands of 1-64 tile rows (NOTES.md
  // step 35: CUTLASS's same tile is 30 % faster with a swizzle of 4-8 than with 1).
  if (filter.find("raster") != std::string::npos)
    add_bands("raster", {"", false, 256, 2, 1, true, 8, 0}, {2, 4, 16, 32});
  if (filter.find("raster128") != std::string::npos) {
    add_bands("raster128_", {"", false, 128, 1, 1, true, 8, 0}, {1, 2, 4, 8, 16, 64});
    add_bands("raster128_", promoting({"", true, 128, 1, 1, true, 8, 0}, 4), {1, 2, 4, 8, 16, 64});
  }
  // Raster bands of the tiles launched as plain grids (filter "raster1x1", NOTES.md step 73): since step 72 a 1x1
  // configuration's CTAs are placed as a plain grid's, so the band that suits it may differ from the pairs' 8.
  if (filter.find("raster1x1") != std::string::npos)
    for (const ours::HopperConfig& c :
         {ours::HopperConfig{"", false, 256, 1, 1, true, 8, 0}, tall({"", false, 128, 1, 1, true, 8, 0}),
          promoting({"", true, 128, 1, 1, true, 8, 0}, 8), promoting({"", true, 192, 1, 1, true, 8, 0}, 8)})
      add_bands("raster1x1_", c, {1, 2, 4, 16, 32});
  // Raster bands of the pairs that win the squares (filter "rasterpair", NOTES.md step 94): 256 x 128 in 1x2 (A
  // multicast; cuBLASLt's decomposition at 4096^3, which reads 22 % fewer L2 sectors than ours) and 128 x 256 in
  // 2x1. A cluster launch places consecutive pairs on consecutive TPCs, eight GPCs apart (bench/tools/
  // placement_probe.cu), so the band decides which pairs of a GPC share their unicast operand.
  if (filter.find("rasterpair") != std::string::npos) {
    add_bands("rasterpair_", tall({"", false, 128, 1, 2, true, 8, 0}), {1, 2, 4, 16, 32});
    add_bands("rasterpair_", {"", false, 256, 2, 1, true, 8, 0}, {1, 2, 4, 16, 32});
  }
  // Raster bands of the 128 x 64 tile (filter "raster64", NOTES.md step 93): at 1000^3 ours reads 13 % more L2
  // sectors than cuBLASLt's same tile and pair, and twice its traffic between the two L2 partitions. bf16 alone and
  // in both pairs; fp8 promote4 (the autotune list's 128 x 64 fp8 rows) alone and in 2x1.
  if (filter.find("raster64") != std::string::npos) {
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{1, 2}, std::pair{2, 1}})
      add_bands("raster64_", {"", false, 64, cm, cn, true, 8, 0}, {1, 2, 4, 16, 64});
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}})
      add_bands("raster64_", promoting({"", true, 64, cm, cn, true, 8, 0}, 4), {1, 2, 8});
  }
  // Split-K sweep (filter "splitsweep"): a decode shape's time against the split count, one CTA per tile and split
  // (NOTES.md step 24: is the decode gap each CTA's short mainloop, or the number of CTAs streaming?).
  if (filter.find("splitsweep") != std::string::npos)
    for (int bn : {64, 128, 192})
      for (int splits : {1, 2, 3, 4, 6, 8})
        kernels.push_back(ours::make_hopper_kernel({"splitsweep", false, bn, 1, 1, true, 8, splits}));
  // Clusters of 8 (filter "cluster8", NOTES.md step 45): cuBLASLt runs small grids such as 1000^3 in 4x2 clusters,
  // multicasting A to 2 CTAs and B to 4; ours share an operand between 2 at most.
  if (filter.find("cluster8") != std::string::npos)
    for (int bn : {64, 128})
      for (auto [cm, cn] : {std::pair{4, 2}, std::pair{2, 4}}) {
        kernels.push_back(ours::make_hopper_kernel({"cluster8", false, bn, cm, cn, true, 8, 0}));
        if (bn == 64) kernels.push_back(ours::make_hopper_kernel({"cluster8", true, bn, cm, cn, true, 8, 0, "cooperative", false, 4}));
      }
  // Configurations the autotune list does not hold (filter "combos", NOTES.md step 78), each beside the listed
  // configuration it varies ("combos_base"): fp8 promote8 as cuBLASLt's 1x2 pair (A multicast) and with stream-K;
  // bf16 256 x 128 with stream-K; 128 x 64 in clusters of 4 (1000^3 is bound by its operand reads).
  if (filter.find("combos") != std::string::npos) {
    auto fp8_p8 = [](const std::string& name, int bn, int cm, int cn, bool sk) {
      ours::HopperConfig c{name, true, bn, cm, cn, true, 8, 0, "cooperative", sk, 8};
      return ours::make_hopper_kernel(c);
    };
    for (int bn : {128, 192}) {
      kernels.push_back(fp8_p8("combos_base", bn, 1, 1, false));
      kernels.push_back(fp8_p8("combos_base", bn, 2, 1, false));
      kernels.push_back(fp8_p8("combos", bn, 1, 2, false));
      kernels.push_back(fp8_p8("combos", bn, 2, 2, false));
      kernels.push_back(fp8_p8("combos", bn, 1, 1, true));
      kernels.push_back(fp8_p8("combos", bn, 2, 1, true));
    }
    // bf16 256 x 128 (the outer `tall`), listed alone and as the 1x2 pair, and with stream-K in each cluster shape.
    for (auto [cm, cn, sk] : {std::tuple{1, 1, false}, std::tuple{1, 2, false}, std::tuple{1, 1, true},
                              std::tuple{2, 1, true}, std::tuple{1, 2, true}})
      kernels.push_back(ours::make_hopper_kernel(
          tall({sk ? "combos" : "combos_base", false, 128, cm, cn, true, 8, 0, "cooperative", sk})));
    kernels.push_back(ours::make_hopper_kernel({"combos_base", false, 64, 1, 1, true, 8, 0}));
    kernels.push_back(ours::make_hopper_kernel({"combos_base", false, 64, 2, 1, true, 8, 0}));
    for (auto [cm, cn] : {std::pair{2, 2}, std::pair{4, 1}, std::pair{1, 4}})
      kernels.push_back(ours::make_hopper_kernel({"combos", false, 64, cm, cn, true, 8, 0}));
  }
  // 128 x 64 tiles in clusters of 2, 4 and 8 with stream-K (filter "clustersk", NOTES.md step 91): 1000^3's 128
  // tiles make 32 clusters of 4 and 16 of 8 where the H100 holds 30 and 15 (steps 45, 78: two waves); stream-K
  // shares the tiles' k-iterations among the clusters that fit, and the larger clusters multicast more.
  if (filter.find("clustersk") != std::string::npos)
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}, std::pair{2, 2}, std::pair{4, 2},
                          std::pair{2, 4}, std::pair{4, 1}})
      kernels.push_back(ours::make_hopper_kernel({"clustersk", false, 64, cm, cn, true, 8, 0, "cooperative", true}));
  // The work order (NOTES.md steps 126-127). Filter "gpcband": the squares' and N = 2880's winning pairs in launch
  // order (bands of 8 cluster-rows, as before step 127) and in GPC order with bands of 4-16. Filter "launchorder":
  // every clustered persistent configuration of the autotune list also in launch order, beside the list's own.
  if (filter.find("gpcband") != std::string::npos) {
    // bf16 128 x 256 (B multicast), 256 x 128 (A multicast), 128 x 192 (N = 2880), fp8 128 x 128 promote8, and bf16
    // 128 x 64 in 2x1 pairs, whose launch order walks bands of 2 (NOTES.md step 93).
    const std::pair<ours::HopperConfig, int> pairs[] = {
        {{"", false, 256, 2, 1, true, 8, 0}, 8},         {tall({"", false, 128, 1, 2, true, 8, 0}), 8},
        {{"", false, 192, 2, 1, true, 8, 0}, 8},         {promoting({"", true, 128, 2, 1, true, 8, 0}, 8), 8},
        {{"", false, 64, 2, 1, true, 8, 0}, 2},
    };
    for (auto [base, launch_band] : pairs) {
      base.gpc_order = false;
      add_bands("gpcband", base, {launch_band});
      base.gpc_order = true;
      add_bands("gpcband", base, base.block_n == 64 ? std::initializer_list<int>{2, 4, 8, 16}
                                                    : std::initializer_list<int>{4, 8, 11, 16});
    }
  }
  // Filter "bandrule" (NOTES.md step 130): the balanced bands of GPC order beside fixed bands of the same base, on
  // the winning pairs; fp8 128 x 128 promote8 also on a base of 16 (step 128: 16 best there).
  if (filter.find("bandrule") != std::string::npos) {
    const std::pair<ours::HopperConfig, std::initializer_list<int>> pairs[] = {
        {{"", false, 256, 2, 1, true, 8, 0}, {8}},         {tall({"", false, 128, 1, 2, true, 8, 0}), {8}},
        {{"", false, 192, 2, 1, true, 8, 0}, {8}},         {promoting({"", true, 128, 2, 1, true, 8, 0}, 8), {8, 16}},
        {{"", false, 64, 2, 1, true, 16, 0}, {16}},
    };
    for (auto [base, bases] : pairs)
      for (bool balanced : {true, false}) {
        base.balanced_bands = balanced;
        add_bands("bandrule", base, bases);
      }
  }
  if (filter.find("launchorder") != std::string::npos) {
    for (ours::HopperConfig c : ours::cluster_configs())
      if (c.ordered_by_gpc()) {
        c.gpc_order = false;
        kernels.push_back(ours::make_hopper_kernel(c));
      }
  }
  std::vector<Case> case_list(std::begin(cases), std::end(cases));
  if (only_case) case_list = {*only_case};
  std::mt19937_64 rng(42);
  for (const Case& cs : case_list) {
    const GemmShape s = aispflow::bench::probe_gemm_shape(cs.m, cs.n, cs.k, cs.batch);
    const GemmCase gc{s, cs.dtype, cs.layout, cs.epi};
    // Matched against the case as its `==` line prints it: GemmCase::label() leaves out layout nn and epilogue
    // none, so filters naming them matched nothing (NOTES.md step 65's first call).
    const std::string case_text = s.name + " " + cs.dtype + " " + cs.layout + " " + cs.epi;
    if (!case_filter.empty() && case_text.find(case_filter) == std::string::npos) continue;
    const LtDtype spec = *lt_dtype(cs.dtype);
    const int copies = switched_on("PROBE_WARM") ? 1 : operand_copies_for(timing, s, spec, 0);
    GemmProblem problem(s, spec, rng(), ctx.stream(), copies, GemmVariant::of(gc));
    double lt_ms = -1;
    try {
      if (const auto top = aispflow::bench::lt_heuristic_top(ctx, problem)) {
        lt_ms = ctx.harness().time(timing, rotating_launch(*top, copies)).stats.median_ms;
        sustain("cublasLt", *top, copies, ctx.stream());
        time_three_ways(ctx.harness(), timing, "cublasLt", *top, copies);
      }
    } catch (const std::exception& e) { std::printf("cublasLt: %s\n", e.what()); }
    const double flops = s.flops();
    std::printf("== %s  cublasLt %.4f ms %.1f TFLOP/s  (%s)\n", case_text.c_str(),
                lt_ms, lt_ms > 0 ? flops / lt_ms / 1e9 : 0.0,
                copies > 1 ? (std::to_string(copies) + " operand copies, cold").c_str() : "one operand copy, warm");
    std::vector<std::pair<std::string, BoundLaunch>> verified;   // for PROBE_INTERLEAVE_ORDERS
    for (auto& k : kernels) {
      const auto config = k->config();
      // r: raster band (the configuration's, then "/" the band this shape runs where GPC order balances it: the
      // persistent schedule's HopperConfig::band_for); s: co-resident clusters of the configuration's size.
      const std::string identity = k->identity(gc);
      std::string band = std::to_string(config["raster_group"].get<int>());
      if (const ours::HopperConfig* hopper = ours::hopper_config_of(*k); hopper && hopper->persistent) {
        const int ran = hopper->band_for(int((s.m + hopper->block_m - 1) / hopper->block_m),
                                         int((s.n + hopper->block_n - 1) / hopper->block_n));
        if (ran != hopper->raster_group) band += "/" + std::to_string(ran);
      }
      const std::string id = config["name"].get<std::string>() + " " + identity.substr(0, 12) + " r" + band + " s" +
                             std::to_string(config.value("co_resident_clusters", 0));
      if (!matches_filter(id, filter)) continue;
      if (auto why = k->unsupported(gc)) continue;
      try {
        BoundLaunch launch = k->bind(problem);
        problem.poison_output(ctx.stream());
        launch(ctx.stream(), 0);
        AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
        const Comparison cmp = problem.check_output(ctx.stream());
        const bool ok = cmp.non_finite == 0 && cmp.max_rel_err <= problem.tolerance();
        if (!ok) {
          std::printf("  %-40s FAILED %s (tol %.3g)\n", id.c_str(), cmp.describe(s.n).c_str(), problem.tolerance());
          continue;
        }
        const double ms = ctx.harness().time(timing, rotating_launch(launch, copies)).stats.median_ms;
        std::printf("  %-40s ok err %.2e  %.4f ms %.1f TFLOP/s  %.3fx cublasLt\n", id.c_str(), cmp.max_rel_err, ms,
                    flops / ms / 1e9, lt_ms > 0 ? lt_ms / ms : 0.0);
        sustain(config["name"].get<std::string>(), launch, copies, ctx.stream());
        verified.emplace_back(config["name"].get<std::string>(), launch);
        print_places(*k, problem);
        time_three_ways(ctx.harness(), timing, config["name"].get<std::string>(), launch, copies);
      } catch (const std::exception& e) {
        std::printf("  %-40s ERROR %s\n", id.c_str(), e.what());
        cudaGetLastError();
      }
      std::fflush(stdout);
    }
    if (switched_on("PROBE_CARRYOVER") && verified.size() >= 2)
      time_after_each_predecessor(ctx.harness(), verified, copies);
    if (switched_on("PROBE_INTERLEAVE_ORDERS") && verified.size() >= 2 && verified.size() <= 4)
      time_in_every_order(ctx.harness(), timing, verified, copies);
  }
  return 0;
}
