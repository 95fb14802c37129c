#pragma once
// The moments the Hopper GEMM kernel's timeline build stamps (hopper_gemm.cuh, AISPFLOW_HOPPER_TIMELINE;
// bench/tools/hopper_timeline.cu reads them). Host-and-device plain data.
namespace aispflow::kernels::cuda::ours {

enum class TimelineEvent : int {
  entry,            // the CTA's thread 0 starts
  params_read,      // thread 0 has checked the launch's cluster against the parameters (their first read)
  maps_prefetched,  // ... has asked for the three tensor maps (prefetch.tensormap)
  barriers_ready,   // ... has initialised the stage barriers
  unit_decoded,     // the producer has its first work unit
  first_load,       // the producer has issued its first k-tile's loads
  loads_issued,     // a lone CTA's producer has issued every stage it fills before the CTA barrier
  consumer_start,   // a consumer warpgroup has its registers (after setmaxnreg)
  unit_loads,       // per unit: the producer has issued the unit's first k-tile (units with no pre-issued stage)
  unit_start,       // per unit: the consumer has the unit (its own, under ping-pong)
  first_wait,       // per unit: ... has set it up (accumulators, bias) and reaches its first k-tile's wait
  first_full,       // per unit: the unit's first k-tile has landed (the consumer's wait returned)
  mainloop_end,     // per unit: every wgmma of the unit has retired
  chunk_packed,     // per unit: its first epilogue chunk is in shared memory (the stamping warp's rows)
  chunk_fenced,     //   ... made visible to the TMA (the proxy fence)
  chunk_stored,     //   ... and its TMA store issued
  epilogue_end,     // per unit: its last store has been issued
  exit,             // the consumer's stores have completed; the CTA leaves
};
// How many there are (the last enumerator's successor): the size of a unit's stamps.
constexpr int kTimelineEvents = int(TimelineEvent::exit) + 1;

}  // namespace aispflow::kernels::cuda::ours
