#pragma once
// The one GPU measurement harness. Every CUDA provider and probe times its work through Harness::time, so
// the methodology lives in one place:
//   - warm-up launches first (module load, cuBLASLt kernel selection, clocks ramping up stay out);
//   - each sample is bracketed by CUDA events on the harness's stream, behind a gate kernel that holds
//     the stream until the whole sample is enqueued (blocking.hpp), so host submission time never counts;
//   - after each sample the GPU rests for twice the sample's time (at most kMaxRestMs). An H100 under
//     continuous tensor-core load hits its power limit within tens of ms and drops from its 1980 MHz boost
//     to ~1450-1550 MHz, and how far depends on its temperature, i.e. on whatever ran before. With a duty
//     cycle of one third every sample runs at the clock the chip holds when it is not power-capped, so the
//     same kernel gives the same time whatever ran before it (nvbench does the same thing with its
//     throttle detection and recovery delay). The records therefore state capability at boost clocks,
//     not sustained power-capped throughput; docs/cuda.md gives both for an H100;
//   - work shorter than ~50 us is captured into a CUDA graph of many launches and the graph is timed
//     (per-launch time = graph time / launches), so launch gaps and event resolution do not dominate;
//   - samples are taken by kernels::measure until the relative spread settles (min samples, time budget,
//     max samples from the TimingPolicy); several pieces of work timed together (time_interleaved: autotune's
//     finalists) are sampled in rounds, one sample of each per round, in an order shuffled every round
//     (interleaved_round_order): the rest does not make a sample fully independent of its predecessor (NOTES.md
//     step 132 measured 1.5-5 % on one-launch samples: a kernel whose code did not run last starts with cold
//     instruction caches, which the flush does not warm: step 135), so no candidate may always follow the same
//     one, and each one-launch sample is primed by an untimed launch of itself and its rest, so that every
//     sample starts as the confirmation round's do (warm code; a winner's reported time comes from that round,
//     timed on its own, as any back-to-back loop measures);
//   - L2 is flushed before every sample by writing a buffer of at least twice its size, unless the policy
//     says warm cache (flush_cache=false); with `timing.code: cold` a kernel of 256 KB of code then runs on every
//     SM (kernels/cuda/code_eviction.hpp), so that the sample also fetches its instructions afresh. Within one
//     graph sample the launches share a warm L2: the record says so (timing.l2 = "flushed before each batch of N
//     launches");
//   - SM and memory clocks plus the clocks-event (throttle) reasons are read through NVML after warm-up
//     and after sampling; a drop of more than 5 %, a slowdown reason or an unsettled spread becomes a
//     warning in the record.
#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/timing.hpp"
#include "kernels/cuda/blocking.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/nvml.hpp"

namespace aispflow::kernels::cuda {

struct Measurement {
  TimingStats stats;                     // per launch, in ms
  int launches_per_sample = 1;
  bool graph = false;                    // timed as replays of a CUDA graph
  bool l2_flushed = false;
  int interleaved_with = 0;              // other pieces of work sampled in the same rounds
  bool primed = false;                   // in those rounds each sample came right after an untimed launch of itself
  bool cold_code = false;                // timing.code cold: the SMs' instruction caches evicted before each sample
  int operand_copies = 1;                // set by the caller when its launches rotate over operand copies
  double rest_factor = 2.0;              // the policy's rest after each sample
  std::optional<ClockReading> clocks_before, clocks_after;
  std::vector<std::string> warnings;
  // {"method": "...", "launches_per_sample": N, "l2": "...", "clocks": {"before": {...}, "after": {...}}}
  nlohmann::json timing_json() const;
};

class Harness {
 public:
  // Work shorter than this per launch is timed as a CUDA graph of many launches.
  static constexpr double kGraphThresholdMs = 0.05;
  // A graph sample aims at this much work, so that event resolution (~1 us) is far below it.
  static constexpr double kGraphSampleTargetMs = 2.0;
  static constexpr int kMaxGraphLaunches = 2000;
  // Rest after each sample (TimingPolicy::rest_factor times the sample's time, 2x by default) is capped here.
  static constexpr double kMaxRestMs = 50;

  explicit Harness(int device);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  std::size_t l2_flush_bytes() const { return flush_.bytes(); }

  // Times `launch`, which enqueues the work once on the given stream. It should be capturable into a CUDA
  // graph: no synchronisation, no allocation, no host reads inside. Short work that CUDA refuses to capture
  // (cudaMemcpyPeerAsync, for one) is timed one launch per sample instead, with a warning in the measurement.
  // Throws CudaError if the work fails.
  // Measurements on one harness are serialised (two timings must never overlap on one GPU).
  Measurement time(const TimingPolicy& policy, const std::function<void(cudaStream_t)>& launch);

  // Times several pieces of work in rounds (one sample of each per round, L2 flushed before each) until all
  // settle or the budget ends, so they are compared under the same clocks and power state. Used to pick
  // the winner among sweep finalists.
  std::vector<Measurement> time_interleaved(const TimingPolicy& policy,
                                            const std::vector<std::function<void(cudaStream_t)>>& launches);

  // Times one launch with events (no flush, no statistics): used to size work and for warm-up checks.
  double time_once_ms(const std::function<void(cudaStream_t)>& launch);

  // Evicts L2 by writing the flush buffer (a different byte each time, so nothing can be elided).
  void flush_l2();

 private:
  struct Prepared;
  void prepare(const TimingPolicy& policy, Prepared& p);   // warm-up, estimate, graph capture if short
  double sample_ms(Prepared& p);                            // one sample, per launch
  // Before an interleaved one-launch sample: one untimed launch of the same work, then its rest, so that the sample
  // follows itself as in a confirmation round (its code warm).
  void prime(Prepared& p);
  // The rest after a sample (or a prime): the policy's factor times the last sample's time, at most kMaxRestMs.
  void rest(const Prepared& p);
  // Milliseconds between events recorded around `work` on the stream, with the stream held at the gate
  // while it is enqueued (so the host's enqueue time is not what the events measure).
  double gated_event_ms(const std::function<void(cudaStream_t)>& work);
  static void add_warnings(Measurement& m, const TimingPolicy& policy);

  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceBuffer flush_;
  std::unique_ptr<StreamGate> gate_;
  unsigned char flush_value_ = 0;
  std::string pci_bus_id_;
  int sm_count_ = 0;   // the eviction kernel's grid (timing.code cold)
  std::mutex mutex_;

};

}  // namespace aispflow::kernels::cuda
