#include "kernels/cuda/harness.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "kernels/cuda/code_eviction.hpp"

namespace aispflow::kernels::cuda {

namespace {
std::string percent(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f%%", 100.0 * x);
  return buffer;
}

// Owns a captured graph and its executable form.
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};
// The errors by which CUDA says the work cannot be captured (not that it failed).
bool capture_refused(cudaError_t e) {
  return e == cudaErrorStreamCaptureUnsupported || e == cudaErrorStreamCaptureInvalidated ||
         e == cudaErrorStreamCaptureImplicit || e == cudaErrorStreamCaptureUnjoined ||
         e == cudaErrorStreamCaptureIsolation || e == cudaErrorStreamCaptureWrongThread;
}

}  // namespace

nlohmann::json Measurement::timing_json() const {
  nlohmann::json j;
  j["method"] = graph ? "CUDA graph of " + std::to_string(launches_per_sample) + " launches, events around each replay"
                      : std::string("CUDA events around each launch");
  j["launches_per_sample"] = launches_per_sample;
  if (cold_code)
    j["code"] = "cold: a kernel of " + std::to_string(kEvictionCodeBytes >> 10) +
                " KB of straight-line code ran on every SM before each sample, so that the sample fetched its "
                "instructions afresh (as in a pipeline where other kernels run between launches)";
  if (interleaved_with > 0)
    j["interleaved"] = "sampled in rounds with " + std::to_string(interleaved_with) +
                       " other candidate(s), in a shuffled order each round" +
                       (primed ? "; each sample right after an untimed launch of the same work and its rest, so that "
                                 "its code is warm whatever ran before (as in a confirmation round)"
                               : "");
  if (!l2_flushed)
    j["l2"] = "warm (not flushed)";
  else if (graph && operand_copies > 1)
    j["l2"] = "flushed before each batch of " + std::to_string(launches_per_sample) + " launches, which rotate over " +
              std::to_string(operand_copies) + " copies of the operands (more than 2x L2 in all): each reads cold data";
  else if (graph)
    j["l2"] = "flushed before each batch of " + std::to_string(launches_per_sample) + " launches (warm within a batch)";
  else
    j["l2"] = "flushed before each sample";
  j["converged"] = stats.converged;
  TimingPolicy rest;
  rest.rest_factor = rest_factor;
  j["rest"] = rest_factor > 0 ? "GPU idle for " + rest.rest_label() +
                                    " each sample's time after it (at most 50 ms; power limiter kept out of the numbers)"
                              : std::string("none: samples back to back (sustained, power-capped throughput)");
  j["rest_factor"] = rest_factor;
  nlohmann::json clocks = nlohmann::json::object();
  if (clocks_before) clocks["before"] = clocks_before->to_json();
  if (clocks_after) clocks["after"] = clocks_after->to_json();
  if (!clocks_before && !clocks_after) clocks["note"] = Nvml::instance().available()
                                                            ? "NVML could not read this GPU's clocks"
                                                            : Nvml::instance().why_unavailable();
  j["clocks"] = clocks;
  return j;
}

Harness::Harness(int device) : device_(device) {
  ScopedDevice on(device_);
  AISPFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  AISPFLOW_CUDA_CHECK(cudaEventCreate(&start_));
  AISPFLOW_CUDA_CHECK(cudaEventCreate(&stop_));
  int l2 = 0;
  AISPFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_));
  AISPFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  // Twice L2 (the brief's minimum), and never less than 32 MiB in case the attribute under-reports.
  flush_ = DeviceBuffer(std::max<std::size_t>(2 * std::size_t(l2), std::size_t(32) << 20));
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device_) == cudaSuccess) pci_bus_id_ = bus_id;
  gate_ = std::make_unique<StreamGate>();
}

Harness::~Harness() {
  cudaSetDevice(device_);
  gate_.reset();
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Harness::flush_l2() {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(flush_.get(), ++flush_value_, flush_.bytes(), stream_));
}

double Harness::gated_event_ms(const std::function<void(cudaStream_t)>& work) {
  gate_->close(stream_);
  try {
    AISPFLOW_CUDA_CHECK(cudaEventRecord(start_, stream_));
    work(stream_);
    AISPFLOW_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  } catch (...) {
    gate_->open();
    throw;
  }
  gate_->open();
  AISPFLOW_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  AISPFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

double Harness::time_once_ms(const std::function<void(cudaStream_t)>& launch) {
  return gated_event_ms([&](cudaStream_t s) {
    launch(s);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  });
}

Measurement Harness::time(const TimingPolicy& policy, const std::function<void(cudaStream_t)>& launch) {
  return time_interleaved(policy, {launch}).front();
}

// One piece of work, prepared for sampling: plain launches, or a captured graph of many.
struct Harness::Prepared {
  std::function<void(cudaStream_t)> launch;
  double rest_factor = 2.0;
  Graph graph;
  bool use_graph = false;
  int launches_per_sample = 1;
  double last_ms = 0;   // the last sample's time (a whole sample: all its launches), for prime()'s rest
  // Interleaved one-launch work is primed before each sample (time_interleaved); graph samples need none.
  bool primed = false;
  std::string note;   // why it is not timed as a graph although it is short (a warning of the measurement)
};

void Harness::prepare(const TimingPolicy& policy, Prepared& p) {
  // Warm-up: at least one launch, so the estimate below never includes first-launch costs.
  for (int i = 0; i < std::max(1, policy.warmup); ++i) {
    p.launch(stream_);
    AISPFLOW_CUDA_CHECK_LAUNCH();
  }
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // Size the sample: one flushed launch tells whether launch overhead would dominate.
  if (policy.flush_cache) flush_l2();
  const double estimate_ms = time_once_ms(p.launch);
  p.last_ms = estimate_ms;
  if (estimate_ms >= kGraphThresholdMs) return;
  p.use_graph = true;
  p.launches_per_sample =
      std::clamp(int(std::ceil(kGraphSampleTargetMs / std::max(estimate_ms, 1e-4))), 2, kMaxGraphLaunches);
  AISPFLOW_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  cudaError_t refused = cudaSuccess;   // the capture's own error when the work cannot be captured
  try {
    for (int i = 0; i < p.launches_per_sample; ++i) p.launch(stream_);
  } catch (const std::exception& e) {
    // Leave the stream usable: a capture left open would make every later call on it fail.
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream_, &partial);
    if (partial) cudaGraphDestroy(partial);
    const auto* cuda = dynamic_cast<const CudaError*>(&e);
    if (!cuda || !capture_refused(cuda->status)) throw;
    refused = cuda->status;
  }
  if (refused == cudaSuccess) {
    const cudaError_t launched = cudaGetLastError();
    const cudaError_t ended = cudaStreamEndCapture(stream_, &p.graph.graph);
    if (capture_refused(launched) || capture_refused(ended)) {
      refused = capture_refused(launched) ? launched : ended;
    } else {
      AISPFLOW_CUDA_CHECK(launched);
      AISPFLOW_CUDA_CHECK(ended);
    }
  }
  if (refused != cudaSuccess) {
    // Work a graph cannot hold (a peer copy, say) is still timed, one launch per sample, and says so: its time
    // then includes the launch overhead the graph would have amortised.
    cudaGetLastError();
    if (p.graph.graph) cudaGraphDestroy(p.graph.graph);
    p.graph.graph = nullptr;
    p.use_graph = false;
    p.launches_per_sample = 1;
    p.note = std::string("not capturable into a CUDA graph (") + cudaGetErrorName(refused) +
             "): timed one launch per sample, launch overhead included";
    return;
  }
  AISPFLOW_CUDA_CHECK(cudaGraphInstantiate(&p.graph.exec, p.graph.graph, 0));
  // The first replay uploads the graph: keep it out of the samples.
  AISPFLOW_CUDA_CHECK(cudaGraphLaunch(p.graph.exec, stream_));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

double Harness::sample_ms(Prepared& p) {
  const double ms = p.use_graph ? gated_event_ms([&](cudaStream_t s) { AISPFLOW_CUDA_CHECK(cudaGraphLaunch(p.graph.exec, s)); })
                                : time_once_ms(p.launch);
  p.last_ms = ms;
  rest(p);
  return ms / p.launches_per_sample;
}

void Harness::rest(const Prepared& p) {
  // See the header: keeps the chip out of its power limiter, so samples do not depend on history.
  if (p.rest_factor > 0)
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(std::min(p.rest_factor * p.last_ms, kMaxRestMs)));
}

void Harness::prime(Prepared& p) {
  p.launch(stream_);
  AISPFLOW_CUDA_CHECK_LAUNCH();
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_));
  rest(p);
}

std::vector<Measurement> Harness::time_interleaved(const TimingPolicy& policy,
                                                   const std::vector<std::function<void(cudaStream_t)>>& launches) {
  std::lock_guard lock(mutex_);
  ScopedDevice on(device_);
  std::vector<std::unique_ptr<Prepared>> work;
  for (const auto& launch : launches) {
    work.push_back(std::make_unique<Prepared>());
    work.back()->launch = launch;
    work.back()->rest_factor = policy.rest_factor;
    prepare(policy, *work.back());
  }
  std::function<void()> between;
  if (policy.flush_cache || policy.cold_code)
    between = [this, &policy] {
      if (policy.flush_cache) flush_l2();
      if (policy.cold_code) evict_instruction_caches(stream_, sm_count_);
    };

  const auto clocks_before = Nvml::instance().clocks(pci_bus_id_);
  std::vector<TimingStats> stats;
  if (work.size() == 1) {
    TimingPolicy sampling = policy;
    sampling.warmup = 0;   // prepare() warmed up already
    stats.push_back(measure(sampling, [&] { return sample_ms(*work.front()); }, between));
  } else {
    // kernels::measure's policy applied to several pieces of work in rounds (one sample of each per
    // round), so all of them see the same clocks, temperature and power state: comparisons between
    // candidates are fair even while the chip heats up or hits its power cap.
    // Each one-launch sample is primed: an untimed launch of the same work and its rest come first, so that what
    // precedes the sample is what precedes it in a confirmation round. Without it, a sample right after another
    // kernel started with cold instruction caches (the L2 flush does not warm them) and ran 1-5 % slower on an
    // H100, except after a candidate running the same compiled kernel (NOTES.md step 135): the rounds favoured
    // candidates with siblings among the finalists, and measured a state the reported time does not. A graph
    // sample's launches follow one another (only its first starts cold), and with timing.code cold every sample is
    // meant to start cold: neither is primed.
    for (auto& w : work) w->primed = !w->use_graph && !policy.cold_code;
    std::vector<std::vector<double>> samples(work.size());
    const auto start = std::chrono::steady_clock::now();
    for (int round = 1;; ++round) {
      for (std::size_t i : interleaved_round_order(round, work.size())) {   // shuffled: no fixed predecessor
        if (work[i]->primed) prime(*work[i]);
        if (between) between();
        samples[i].push_back(sample_ms(*work[i]));
      }
      if (round >= policy.max_samples) break;
      if (round < policy.min_samples) continue;
      bool settled = true;
      for (const auto& s : samples) settled = settled && summarize(s, policy.target_stdrel).converged;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (settled || elapsed >= policy.budget_s) break;
    }
    for (auto& s : samples) stats.push_back(summarize(std::move(s), policy.target_stdrel));
  }
  const auto clocks_after = Nvml::instance().clocks(pci_bus_id_);

  std::vector<Measurement> out;
  for (std::size_t i = 0; i < work.size(); ++i) {
    Measurement m;
    m.stats = stats[i];
    m.graph = work[i]->use_graph;
    m.launches_per_sample = work[i]->launches_per_sample;
    m.l2_flushed = policy.flush_cache;
    m.rest_factor = policy.rest_factor;
    m.interleaved_with = int(work.size()) - 1;
    m.primed = work[i]->primed;
    m.cold_code = policy.cold_code;
    m.clocks_before = clocks_before;
    m.clocks_after = clocks_after;
    add_warnings(m, policy);
    if (!work[i]->note.empty()) m.warnings.push_back(work[i]->note);
    out.push_back(std::move(m));
  }
  return out;
}

void Harness::add_warnings(Measurement& m, const TimingPolicy& policy) {
  if (m.clocks_before && m.clocks_after) {
    const auto& b = *m.clocks_before;
    const auto& a = *m.clocks_after;
    if (a.sm_mhz < 0.95 * b.sm_mhz)
      m.warnings.push_back("SM clock dropped from " + std::to_string(b.sm_mhz) + " to " + std::to_string(a.sm_mhz) +
                           " MHz during the measurement");
    if (a.mem_mhz < 0.95 * b.mem_mhz)
      m.warnings.push_back("memory clock dropped from " + std::to_string(b.mem_mhz) + " to " +
                           std::to_string(a.mem_mhz) + " MHz during the measurement");
  }
  // Slowdown reasons seen at either reading (power cap, thermal, hardware slowdown) are worth a warning:
  // the numbers were taken below the chip's unconstrained clocks.
  unsigned long long slowing = 0;
  for (const auto* reading : {&m.clocks_before, &m.clocks_after})
    if (*reading && reasons_slow_the_chip((*reading)->event_reasons)) slowing |= (*reading)->event_reasons;
  if (slowing) {
    std::string names;
    for (const auto& n : clock_event_reason_names(slowing)) names += (names.empty() ? "" : ", ") + n;
    m.warnings.push_back("clocks held down around the measurement (" + names + ")");
  }
  if (!m.stats.converged)
    m.warnings.push_back("spread did not settle: stdrel " + percent(m.stats.stdrel) + " > target " +
                         percent(policy.target_stdrel) + " after " + std::to_string(m.stats.samples) + " samples");
}

}  // namespace aispflow::kernels::cuda
