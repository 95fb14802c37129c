// Host side of the tensor-pipe probe (tensor_pipe.hpp): picks the kernel variant, verifies it, times it with
// the one harness, and holds the result against the dense rate at the measured clock.
#include "kernels/cuda/tensor_pipe.hpp"

#include <map>
#include <utility>
#include <vector>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/tensor_pipe_launch.hpp"

namespace aispflow::kernels::cuda {

namespace {

// 1024 steps of four instructions: about 0.8 ms per launch on an H100 for every dtype (long enough to time
// without a graph). fp8 sums them in chains of 128 steps, which its narrow accumulator holds exactly
// (tensor_pipe_sm90a.cu): 1024 is a whole number of chains, and so is the sabotaged half.
constexpr int kSteps = 1024;
// Dense rates are published for the boost clock; a measured rate may sit a little above the figure derived
// from the clock read inside the kernel (clock64 and the global timer are read by one thread at the loop's
// ends), but not more than this.
constexpr double kPlausibilitySlack = 1.03;

std::optional<int> pipe_dtype(const std::string& dtype) {
  static const std::map<std::string, int> known = {
      {"bf16", kPipeBf16}, {"fp16", kPipeFp16}, {"tf32", kPipeTf32}, {"fp8_e4m3", kPipeE4m3}};
  auto it = known.find(dtype);
  if (it == known.end()) return std::nullopt;
  return it->second;
}

struct Counters {
  DeviceBuffer memory{sizeof(unsigned) * 2 + sizeof(unsigned long long) * 2};
  unsigned* wrong() { return memory.as<unsigned>(); }
  unsigned* blocks_done() { return memory.as<unsigned>() + 1; }
  unsigned long long* clocks() { return reinterpret_cast<unsigned long long*>(memory.as<unsigned>() + 2); }
  struct Read {
    unsigned wrong = 0, blocks_done = 0;
    unsigned long long cycles = 0, ns = 0;
  };
  void reset(cudaStream_t s) { AISPFLOW_CUDA_CHECK(cudaMemsetAsync(memory.get(), 0, memory.bytes(), s)); }
  Read read(cudaStream_t s) {
    unsigned host[6] = {};
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(host, memory.get(), memory.bytes(), cudaMemcpyDeviceToHost, s));
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
    Read r;
    r.wrong = host[0];
    r.blocks_done = host[1];
    r.cycles = *reinterpret_cast<unsigned long long*>(host + 2);
    r.ns = *reinterpret_cast<unsigned long long*>(host + 4);
    return r;
  }
};

std::string variant_name(const TensorPipeLaunch& l) {
  return std::string(l.from_registers ? "rs" : "ss") + " (A from " + (l.from_registers ? "registers" : "shared memory") +
         "), " + std::to_string(l.warpgroups) + " warpgroups per SM";
}

Ceiling not_measured(Ceiling c, const std::string& why) {
  c["status"] = "not measured";
  c["reason"] = why;
  return c;
}

}  // namespace

bool tensor_pipe_knows(const std::string& dtype) { return pipe_dtype(dtype).has_value(); }

std::optional<double> tensor_flops_per_sm_clock(int compute_capability, const std::string& dtype) {
  if (compute_capability != 90) return std::nullopt;
  if (dtype == "bf16" || dtype == "fp16") return 4096.0;
  if (dtype == "tf32") return 2048.0;
  if (dtype == "fp8_e4m3" || dtype == "fp8_e5m2") return 8192.0;
  return std::nullopt;
}

Ceiling measure_tensor_pipe(Harness& harness, const DeviceInfo& device, const std::string& dtype,
                            const TimingPolicy& timing, TensorPipeSabotage sabotage) {
  Ceiling c = {{"name", "tensor." + dtype}, {"kind", "compute"}, {"unit", "TFLOP/s"}, {"dtype", dtype},
               {"source", "measured"}};
  const std::optional<int> dt = pipe_dtype(dtype);
  if (!dt) return not_measured(c, "the tensor-pipe probe has no kernel for dtype '" + dtype + "'");
  if (device.compute_capability() != 90)
    return not_measured(c, "the tensor-pipe probe issues wgmma, which only sm_90a has; this device is sm_" +
                               std::to_string(device.compute_capability()) +
                               (device.cc_major >= 10 ? " (its tensor cores need a tcgen05 probe: requires sm_100 "
                                                        "code that is not written yet)"
                                                      : ""));
  ScopedDevice on(harness.device());
  const cudaStream_t stream = harness.stream();
  Counters counters;
  const unsigned blocks = unsigned(device.sm_count);
  const int k = tensor_pipe_k_per_instruction(*dt);
  c["method"] = "wgmma m64n256k" + std::to_string(k) + " back to back, operands in shared memory (A also from "
                "registers), no global-memory traffic, one block per SM (" + std::to_string(blocks) + "), " +
                std::to_string(kSteps * 4) + " instructions per warpgroup" +
                (*dt == kPipeE4m3 ? " (fp8: chains of 512, each added into fp32 partial sums in shared memory, as fp8's "
                                    "narrower accumulator cannot hold the whole sum exactly)"
                                  : "") +
                "; every accumulator checked against the closed form; the best of the variants";

  json variants = json::array();
  std::optional<Measurement> best;
  TensorPipeLaunch best_launch;
  double best_flops = 0;
  const std::pair<bool, int> shapes[] = {{false, 2}, {false, 3}, {true, 2}};   // (A from registers, warpgroups)
  for (const auto& [from_registers, warpgroups] : shapes) {
    // fp8's fp32 partial sums in shared memory (tensor_pipe_sm90a.cu) leave room for two warpgroups only.
    if (*dt == kPipeE4m3 && warpgroups > 2) continue;
    TensorPipeLaunch l;
    l.dtype = *dt;
    l.from_registers = from_registers;
    l.warpgroups = warpgroups;
    l.blocks = sabotage == TensorPipeSabotage::half_blocks ? blocks / 2 : blocks;
    l.steps = sabotage == TensorPipeSabotage::half_steps ? kSteps / 2 : kSteps;
    l.expected_steps = kSteps;
    l.wrong = counters.wrong();
    l.blocks_done = counters.blocks_done();
    l.clocks = counters.clocks();
    auto launch = [&, l](cudaStream_t s) {
      if (sabotage == TensorPipeSabotage::noop) return;
      AISPFLOW_CUDA_CHECK(launch_tensor_pipe(l, s));
    };
    json v = {{"variant", variant_name(l)}};
    // Verified before it is timed: zeroed counters, one launch, no accumulator off the closed form and every
    // SM's block done (a launch that does nothing leaves blocks_done at 0).
    counters.reset(stream);
    launch(stream);
    const Counters::Read r = counters.read(stream);
    if (r.wrong != 0 || r.blocks_done != blocks) {
      v["status"] = "failed";
      v["reason"] = std::to_string(r.wrong) + " accumulators off the closed form " + std::to_string(kSteps * 4) +
                    " x " + std::to_string(k) + " x row x column value; " + std::to_string(r.blocks_done) +
                    " of " + std::to_string(blocks) + " blocks done";
      variants.push_back(std::move(v));
      continue;
    }
    TimingPolicy policy = timing;
    policy.flush_cache = false;   // nothing in global memory to speak of
    Measurement m = harness.time(policy, launch);
    const double flops = double(blocks) * warpgroups * kSteps * 4 * 2.0 * 64 * 256 * k;
    v["status"] = "ok";
    v["value"] = flops / (m.stats.median_ms * 1e-3) / 1e12;
    v["time_ms"] = m.stats.to_json();
    variants.push_back(std::move(v));
    if (!best || m.stats.median_ms / flops < best->stats.median_ms / best_flops) {
      best = std::move(m);
      best_launch = l;
      best_flops = flops;
    }
  }
  c["variants"] = variants;
  if (!best) {
    c["status"] = "failed";
    c["verified"] = false;
    c["reason"] = "every variant failed its check: " + variants[0].value("reason", std::string());
    return c;
  }
  // The clock the pipe ran at: one more launch of the winner, block 0 reading the SM cycle counter and the
  // global timer at its loop's ends.
  counters.reset(stream);
  AISPFLOW_CUDA_CHECK(launch_tensor_pipe(best_launch, stream));
  const Counters::Read clocks = counters.read(stream);
  const double value = best_flops / (best->stats.median_ms * 1e-3) / 1e12;
  c["value"] = value;
  c["verified"] = true;
  c["variant"] = variant_name(best_launch);
  c["time_ms"] = best->stats.to_json();
  c["samples"] = best->stats.samples;
  c["timing"] = best->timing_json();
  if (!best->warnings.empty()) c["warnings"] = best->warnings;
  if (clocks.ns > 0) {
    const double mhz = double(clocks.cycles) / double(clocks.ns) * 1e3;
    c["sm_clock_mhz"] = mhz;
    if (const auto per_clock = tensor_flops_per_sm_clock(device.compute_capability(), dtype)) {
      const double dense = *per_clock * blocks * mhz * 1e6 / 1e12;
      c["flops_per_sm_clock"] = *per_clock;
      c["dense_tflops_at_clock"] = dense;
      c["fraction_of_dense_at_clock"] = value / dense;
      if (value > dense * kPlausibilitySlack) {
        c["status"] = "failed";
        c["verified"] = false;
        c["reason"] = "measured " + std::to_string(value) + " TFLOP/s is above the dense tensor rate at the clock it "
                      "ran (" + std::to_string(dense) + " TFLOP/s at " + std::to_string(mhz) +
                      " MHz): the count of work or the clock is wrong";
        c.erase("value");
      }
    }
  }
  return c;
}

}  // namespace aispflow::kernels::cuda
