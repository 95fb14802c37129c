// Developer probe: where the time of one ours.cluster launch goes, CTA by CTA. It compiles its own build of the
// Hopper GEMM kernel (hopper_gemm.cuh with AISPFLOW_HOPPER_TIMELINE), whose threads stamp the moments of
// TimelineEvent (kernels/cuda/ours/hopper_timeline.hpp) with the SM's clock, puts it in place of the library's
// instance (HopperInstanceOverride), and runs each configuration through the library's own bind(): verified against
// the reference first (poisoned output, every element), then timed like hopper_probe, then launched once more
// over the operand copies and its stamps read back.
//   hopper_timeline [filter [case]]     configurations whose name contains `filter` (default: the 128 x 64 tile),
//                                       cases whose text contains `case`
//   PROBE_SHAPE="MxNxK[xBATCH] dtype layout"   that one case instead of the list (bench/tools/probe_shape.hpp)
//   TIMELINE_CSV=path                   also append every stamp to a CSV (dump_csv below), for plots across CTAs
//   TIMELINE_SKEW_NS=ns                 hold every other pair of CTAs back that long at entry (an experiment: do
//                                       the CTAs' simultaneous transitions slow each other?)
//   TIMELINE_REGIMES=1                  also time one launch between two marker kernels (%globaltimer) in three
//                                       regimes: "lone" (the harness's: L2 flushed, the stream gated, one launch),
//                                       "noflush" (the same without the flush: the kernel's code and the driver's
//                                       state stay in L2, the operands are still cold copies) and "after itself"
//                                       (right behind a launch of the same kernel on another copy); for cuBLASLt's
//                                       heuristic top, the plain build and the stamped one, whose phases are printed
//                                       for the lone and the after-itself launch (NOTES.md step 134: where a lone
//                                       launch's extra microseconds go)
//   TIMELINE_AFTER=name                 with TIMELINE_REGIMES, a fourth regime: "after" that configuration (the
//                                       library's build), as an interleaved round samples it: one launch of it, a
//                                       rest of twice the span, the flush, then the launch timed (step 132's
//                                       carry-over: does the predecessor change the clock the launch runs at?)
// Stamps cost a store each; the timed figure is printed beside the plain build's so the perturbation shows.
// Only the instances instrumented below run; others are skipped with a message.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/blocking.hpp"
#include "kernels/cuda/ours/hopper_timeline.hpp"

namespace {

using aispflow::kernels::cuda::ours::kTimelineEvents;
using aispflow::kernels::cuda::ours::TimelineEvent;

constexpr int kMaxCtas = 512;
constexpr int kUnits = 8;   // the first units of each CTA are stamped; later ones are not

struct CtaTimeline {
  unsigned long long entry_ns, exit_ns;   // %globaltimer at entry and exit: one clock for every SM
  long long clock[kUnits][kTimelineEvents];   // clock64 (this SM's cycles); 0 = not stamped
  unsigned smid;
};

__device__ CtaTimeline g_timeline[kMaxCtas];
// TIMELINE_SKEW_NS: every other pair of CTAs (blockIdx.x / 2 odd) waits this long at entry, so that their units'
// transitions no longer fall together with the others' (0: none).
__device__ unsigned long long g_entry_skew_ns;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// TIMELINE_REGIMES' markers: one thread stores %globaltimer, so that the span from the marker before a launch to
// the marker after it holds the launch's start and end as the harness's events do, on the CTAs' own clock.
__global__ void mark_time(unsigned long long* slot) { *slot = global_ns(); }

}  // namespace

// Called by the kernel's stamping threads (hopper_gemm.cuh's HOPPER_TIMELINE_STAMP).
__device__ __forceinline__ void hopper_timeline_stamp(TimelineEvent event, int unit) {
  if (unit >= kUnits || blockIdx.x >= kMaxCtas) return;
  CtaTimeline& t = g_timeline[blockIdx.x];
  t.clock[unit][int(event)] = clock64();
  if (event == TimelineEvent::entry) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    t.smid = smid;
    t.entry_ns = global_ns();
  } else if (event == TimelineEvent::exit) {
    t.exit_ns = global_ns();
  }
}

// Called by every thread at the kernel's entry (hopper_gemm.cuh's HOPPER_TIMELINE_ENTRY).
__device__ __forceinline__ void hopper_timeline_entry() {
  if (g_entry_skew_ns == 0 || (blockIdx.x / 2) % 2 == 0) return;
  const unsigned long long until = global_ns() + g_entry_skew_ns;
  while (global_ns() < until) __nanosleep(500);
}

#define AISPFLOW_HOPPER_TIMELINE 1
#include "kernels/cuda/ours/hopper_gemm.cuh"

#include "bench/tools/lt_heuristic_top.hpp"
#include "bench/tools/probe_shape.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/ours/hopper_kernels.hpp"

using namespace aispflow::kernels;
using namespace aispflow::kernels::cuda;
using aispflow::bench::ProbeShape;

namespace {

// The instrumented instances: the 1000^2 x 1008 row's tile (MN- and K-major B), the bf16 squares' winners and the
// fp8 squares' (128 x 128 and 128 x 192 promoting every 8 k-tiles).
std::vector<std::pair<ours::HopperInstanceKey, ours::HopperInstance>> instrumented() {
  return {
      {{false, 128, 64, true, false, 1}, ours::hopper_instance_of<false, 128, 64, true, false>()},
      {{false, 128, 64, false, false, 1}, ours::hopper_instance_of<false, 128, 64, false, false>()},
      {{false, 128, 256, false, false, 1}, ours::hopper_instance_of<false, 128, 256, false, false>()},
      {{false, 256, 128, false, false, 1}, ours::hopper_instance_of<false, 256, 128, false, false>()},
      {{true, 128, 128, false, false, 8}, ours::hopper_instance_of<true, 128, 128, false, false, 8>()},
      {{true, 128, 192, false, false, 8}, ours::hopper_instance_of<true, 128, 192, false, false, 8>()},
  };
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double maximum(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// One phase across the CTAs that stamped both ends: median and max, in ns.
struct Phase {
  std::string name;
  std::vector<double> ns;
};

// TIMELINE_CSV=path: every stamp of the launch, one row each (the case and configuration, cta, sm, unit, event as
// TimelineEvent's index in kernels/cuda/ours/hopper_timeline.hpp, ns since the first CTA's entry: a CTA's clock64
// stamps placed on the common axis through its %globaltimer entry), for plots across CTAs. A new file gets a header.
void dump_csv(const char* path, const std::string& label, const std::vector<CtaTimeline>& ctas, double clock_ghz,
              unsigned long long first_entry) {
  FILE* f = std::fopen(path, "a");
  if (!f) {
    std::fprintf(stderr, "TIMELINE_CSV: cannot open %s\n", path);
    return;
  }
  if (std::ftell(f) == 0) std::fprintf(f, "label,cta,sm,unit,event,ns\n");
  for (std::size_t c = 0; c < ctas.size(); ++c) {
    const CtaTimeline& t = ctas[c];
    if (!t.entry_ns) continue;
    const long long entry = t.clock[0][int(TimelineEvent::entry)];
    for (int u = 0; u < kUnits; ++u)
      for (int e = 0; e < kTimelineEvents; ++e)
        if (t.clock[u][e])
          std::fprintf(f, "%s,%zu,%u,%d,%d,%.0f\n", label.c_str(), c, t.smid, u, e,
                       double(t.entry_ns - first_entry) + double(t.clock[u][e] - entry) / clock_ghz);
  }
  std::fclose(f);
}

// `mark_before` / `mark_after`: TIMELINE_REGIMES' markers around the launch (%globaltimer; 0 = none), which place
// the first CTA's entry and the last CTA's exit against the stream's order.
void report(const std::vector<CtaTimeline>& ctas, int k_tiles_first_unit, int bm, int bn, const std::string& label,
            unsigned long long mark_before = 0, unsigned long long mark_after = 0) {
  std::vector<double> ghz;
  unsigned long long first_entry = ~0ull, last_exit = 0;
  for (const auto& t : ctas) {
    if (!t.entry_ns) continue;
    first_entry = std::min(first_entry, t.entry_ns);
    if (t.exit_ns) last_exit = std::max(last_exit, t.exit_ns);
    const long long cycles = t.clock[0][int(TimelineEvent::exit)] - t.clock[0][int(TimelineEvent::entry)];
    if (t.exit_ns > t.entry_ns + 2000 && t.clock[0][int(TimelineEvent::exit)] > 0)
      ghz.push_back(double(cycles) / double(t.exit_ns - t.entry_ns));
  }
  const double clock_ghz = median(ghz);
  if (first_entry == ~0ull || clock_ghz <= 0) {
    std::printf("    no stamps came back\n");
    return;
  }
  if (const char* path = std::getenv("TIMELINE_CSV")) dump_csv(path, label, ctas, clock_ghz, first_entry);
  auto at = [](const CtaTimeline& t, int u, TimelineEvent e) { return t.clock[u][int(e)]; };
  // Each phase: from one event of unit 0 to another (the producer's startup steps, then the consumers').
  struct Span { const char* name; TimelineEvent from, to; };
  const Span spans[] = {
      {"entry -> parameters read", TimelineEvent::entry, TimelineEvent::params_read},
      {"parameters read -> tensor maps prefetched", TimelineEvent::params_read, TimelineEvent::maps_prefetched},
      {"prefetched -> barriers initialised", TimelineEvent::maps_prefetched, TimelineEvent::barriers_ready},
      {"barriers -> first unit decoded", TimelineEvent::barriers_ready, TimelineEvent::unit_decoded},
      {"unit decoded -> first k-tile's loads issued", TimelineEvent::unit_decoded, TimelineEvent::first_load},
      {"first loads -> every pre-barrier stage issued", TimelineEvent::first_load, TimelineEvent::loads_issued},
      {"entry -> consumers start", TimelineEvent::entry, TimelineEvent::consumer_start},
      {"first loads issued -> first k-tile landed", TimelineEvent::first_load, TimelineEvent::first_full},
      {"entry -> first k-tile landed", TimelineEvent::entry, TimelineEvent::first_full},
      {"unit 0 mainloop (first landed -> retired)", TimelineEvent::first_full, TimelineEvent::mainloop_end},
      {"unit 0 epilogue (retired -> stores issued)", TimelineEvent::mainloop_end, TimelineEvent::epilogue_end},
      {"  first chunk: retired -> packed", TimelineEvent::mainloop_end, TimelineEvent::chunk_packed},
      {"  first chunk: packed -> fenced", TimelineEvent::chunk_packed, TimelineEvent::chunk_fenced},
      {"  first chunk: fenced -> store issued", TimelineEvent::chunk_fenced, TimelineEvent::chunk_stored},
      {"CTA lifetime (entry -> exit)", TimelineEvent::entry, TimelineEvent::exit},
  };
  std::vector<Phase> phases = {{"entry after the first CTA's", {}}};
  for (const Span& sp : spans) phases.push_back({sp.name, {}});
  Phase tail{"last unit's stores issued -> exit", {}};
  std::map<int, Phase> unit_gap, unit_loop, unit_next, unit_setup, unit_wait, unit_issue;
  int ctas_stamped = 0;
  std::vector<unsigned> sms;
  for (const auto& t : ctas) {
    if (!t.entry_ns) continue;
    ++ctas_stamped;
    sms.push_back(t.smid);
    auto ns = [&](long long cycles) { return double(cycles) / clock_ghz; };
    phases[0].ns.push_back(double(t.entry_ns - first_entry));
    for (std::size_t i = 0; i < std::size(spans); ++i)
      if (at(t, 0, spans[i].from) && at(t, 0, spans[i].to))
        phases[i + 1].ns.push_back(ns(at(t, 0, spans[i].to) - at(t, 0, spans[i].from)));
    int last = -1;
    for (int u = 0; u < kUnits; ++u)
      if (at(t, u, TimelineEvent::epilogue_end)) last = u;
    // (Only where the CTA's units all fit the stamps: its last unit is then the last stamped.)
    if (last >= 0 && last < kUnits - 1 && at(t, 0, TimelineEvent::exit))
      tail.ns.push_back(ns(at(t, 0, TimelineEvent::exit) - at(t, last, TimelineEvent::epilogue_end)));
    for (int u = 1; u < kUnits; ++u) {
      if (!at(t, u, TimelineEvent::first_full) || !at(t, u - 1, TimelineEvent::mainloop_end)) continue;
      // The tensor pipe's idle time between two units of one CTA (cooperative: the epilogue sits in it).
      unit_gap[u].ns.push_back(ns(at(t, u, TimelineEvent::first_full) - at(t, u - 1, TimelineEvent::mainloop_end)));
      if (at(t, u - 1, TimelineEvent::epilogue_end) && at(t, u, TimelineEvent::unit_start))
        unit_next[u].ns.push_back(ns(at(t, u, TimelineEvent::unit_start) - at(t, u - 1, TimelineEvent::epilogue_end)));
      if (at(t, u, TimelineEvent::unit_start) && at(t, u, TimelineEvent::first_wait)) {
        unit_setup[u].ns.push_back(ns(at(t, u, TimelineEvent::first_wait) - at(t, u, TimelineEvent::unit_start)));
        unit_wait[u].ns.push_back(ns(at(t, u, TimelineEvent::first_full) - at(t, u, TimelineEvent::first_wait)));
      }
      // When the producer issued the unit's first k-tile, against the consumers' end of the unit before it.
      if (at(t, u, TimelineEvent::unit_loads))
        unit_issue[u].ns.push_back(ns(at(t, u, TimelineEvent::unit_loads) - at(t, u - 1, TimelineEvent::mainloop_end)));
      if (at(t, u, TimelineEvent::mainloop_end))
        unit_loop[u].ns.push_back(ns(at(t, u, TimelineEvent::mainloop_end) - at(t, u, TimelineEvent::first_full)));
    }
  }
  std::sort(sms.begin(), sms.end());
  const auto distinct = std::unique(sms.begin(), sms.end()) - sms.begin();
  std::printf("    %d CTAs on %ld SMs, SM clock %.3f GHz (clock64 against %%globaltimer); kernel span %.2f us (first "
              "entry to last exit)\n",
              ctas_stamped, long(distinct), clock_ghz, double(last_exit - first_entry) / 1e3);
  if (mark_before && mark_after)
    std::printf("    marker before -> first entry %.2f us, last exit -> marker after %.2f us (of %.2f us)\n",
                double(first_entry - mark_before) / 1e3, double(mark_after - last_exit) / 1e3,
                double(mark_after - mark_before) / 1e3);
  phases.push_back(tail);
  for (const auto& ph : phases)
    if (!ph.ns.empty())
      std::printf("    %-46s median %8.0f ns  max %8.0f ns  (%zu CTAs)\n", ph.name.c_str(), median(ph.ns),
                  maximum(ph.ns), ph.ns.size());
  // The dense bf16 rate is 4096 FLOP a cycle an SM (989.4 TFLOP/s over 132 SMs at 1.83 GHz), fp8's 8192: a k-tile
  // of a BM x BN tile (K = 64 bf16, or 128 fp8: 128 bytes either way) takes at least 2 BM BN 64 / 4096 cycles of
  // the tensor pipe in both dtypes.
  const double floor_cycles = 2.0 * bm * bn * 64 / 4096.0;
  const auto is_mainloop = [](const Span& sp) {
    return sp.from == TimelineEvent::first_full && sp.to == TimelineEvent::mainloop_end;
  };
  const Phase& mainloop = phases[1 + (std::find_if(std::begin(spans), std::end(spans), is_mainloop) - std::begin(spans))];
  if (!mainloop.ns.empty() && k_tiles_first_unit > 0)
    std::printf("    unit 0: %d k-tiles, %.0f ns a k-tile (the dense rate's floor: %.0f ns at this clock)\n",
                k_tiles_first_unit, median(mainloop.ns) / k_tiles_first_unit, floor_cycles / clock_ghz);
  for (auto& [u, ph] : unit_gap)
    std::printf("    unit %d: gap after unit %d's mainloop median %6.0f ns max %6.0f (its stores issued -> unit taken %.0f, "
                "-> set up %.0f, -> first k-tile there %.0f; its first loads issued %.0f ns after unit %d's mainloop); "
                "mainloop median %8.0f ns (%zu CTAs)\n",
                u, u - 1, median(ph.ns), maximum(ph.ns), median(unit_next[u].ns), median(unit_setup[u].ns),
                median(unit_wait[u].ns), median(unit_issue[u].ns), u - 1, median(unit_loop[u].ns), ph.ns.size());
}

void* stamps_address() {
  void* stamps = nullptr;
  AISPFLOW_CUDA_CHECK(cudaGetSymbolAddress(&stamps, g_timeline));
  return stamps;
}

void clear_stamps(cudaStream_t stream) {
  AISPFLOW_CUDA_CHECK(cudaMemsetAsync(stamps_address(), 0, sizeof(CtaTimeline) * kMaxCtas, stream));
}

// Every CTA's stamps since the last clear_stamps (waits for the stream).
std::vector<CtaTimeline> read_stamps(cudaStream_t stream) {
  std::vector<CtaTimeline> host(kMaxCtas);
  AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(host.data(), stamps_address(), sizeof(CtaTimeline) * kMaxCtas,
                                      cudaMemcpyDeviceToHost, stream));
  AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// TIMELINE_REGIMES: one launch between two markers, the stream gated so that the host's enqueueing is not in the
// span, in one of the regimes of the header; a rest of twice the span after each, as the harness rests.
enum class Regime { lone, noflush, after_itself, after_other };

class MarkedSpans {
 public:
  explicit MarkedSpans(Harness& harness) : harness_(harness) {
    AISPFLOW_CUDA_CHECK(cudaMalloc(&slots_, 2 * sizeof(unsigned long long)));
  }
  ~MarkedSpans() { cudaFree(slots_); }
  MarkedSpans(const MarkedSpans&) = delete;
  MarkedSpans& operator=(const MarkedSpans&) = delete;

  // TIMELINE_AFTER's predecessor: its name and its launch.
  void set_other(std::string name, BoundLaunch launch) {
    other_name_ = std::move(name);
    other_ = std::move(launch);
  }
  std::string name(Regime r) const {
    switch (r) {
      case Regime::lone: return "lone";
      case Regime::noflush: return "noflush";
      case Regime::after_itself: return "after itself";
      case Regime::after_other: return "after " + other_name_;
    }
    return "";
  }
  // The regimes this run measures: the three of the header, and `after_other` where TIMELINE_AFTER named one.
  std::vector<Regime> all() const {
    std::vector<Regime> out = {Regime::lone, Regime::noflush, Regime::after_itself};
    if (other_) out.push_back(Regime::after_other);
    return out;
  }

  // The marker-to-marker span of one launch of `launch` on `copy` (ns).
  double span_ns(Regime regime, const BoundLaunch& launch, int copy, int copies) {
    cudaStream_t stream = harness_.stream();
    const int previous_copy = (copy + copies - 1) % copies;
    if (regime == Regime::after_other) {   // the predecessor's sample and its rest, as in an interleaved round
      other_(stream, previous_copy);
      AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
      rest();
    }
    if (regime == Regime::lone || regime == Regime::after_other) harness_.flush_l2();
    gate_.close(stream);
    if (regime == Regime::after_itself) launch(stream, previous_copy);
    mark_time<<<1, 1, 0, stream>>>(slots_);
    launch(stream, copy);
    mark_time<<<1, 1, 0, stream>>>(slots_ + 1);
    gate_.open();
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
    AISPFLOW_CUDA_CHECK(cudaMemcpy(marks_, slots_, sizeof marks_, cudaMemcpyDeviceToHost));
    rest();
    return double(marks_[1] - marks_[0]);
  }
  // The median span of 21 launches in each regime, the copies rotating; printed on one line.
  void print_medians(const std::string& what, const BoundLaunch& launch, int copies) {
    std::printf("    regimes %-34s", what.c_str());
    for (Regime r : all()) {
      std::vector<double> ns;
      for (int i = 0; i < 21; ++i) ns.push_back(span_ns(r, launch, i % copies, copies));
      std::printf("  %s %.2f us", name(r).c_str(), median(ns) / 1e3);
    }
    std::printf("\n");
  }
  // The last span_ns's markers (%globaltimer, ns): before the launch and after it.
  unsigned long long last_before() const { return marks_[0]; }
  unsigned long long last_after() const { return marks_[1]; }

 private:
  // Twice the last span, idle, as the harness rests after a sample.
  void rest() const {
    std::this_thread::sleep_for(std::chrono::duration<double, std::nano>(2.0 * double(marks_[1] - marks_[0])));
  }

  Harness& harness_;
  StreamGate gate_;
  unsigned long long* slots_ = nullptr;
  unsigned long long marks_[2] = {};
  std::string other_name_;
  BoundLaunch other_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "128x64x64_c1x1_persistent";
  const std::string case_filter = argc > 2 ? argv[2] : "";
  std::vector<ProbeShape> cases = {{1000, 1000, 1008, 1, "bf16", "nn"}, {1024, 1024, 1024, 1, "bf16", "nn"},
                                   {1000, 896, 1008, 1, "bf16", "nn"},  {4096, 4096, 4096, 1, "bf16", "nt"},
                                   {4096, 4096, 4096, 1, "fp8_e4m3", "nt"}};
  if (const char* only = std::getenv("PROBE_SHAPE")) {
    const auto c = aispflow::bench::parse_probe_shape(only);
    if (!c || !lt_dtype(c->dtype)) {
      std::fprintf(stderr,
                   "PROBE_SHAPE=\"%s\": expected \"MxNxK[xBATCH] dtype layout\", e.g. \"1000x1000x1008 bf16 nn\"\n",
                   only);
      return 2;
    }
    cases = {*c};
  }
  if (system_info().devices.empty()) {
    std::printf("no GPU: %s\n", system_info().why_no_device.c_str());
    return 0;
  }
  GpuContext ctx(0);
  if (const char* skew = std::getenv("TIMELINE_SKEW_NS")) {
    const unsigned long long ns = std::strtoull(skew, nullptr, 10);
    AISPFLOW_CUDA_CHECK(cudaMemcpyToSymbol(g_entry_skew_ns, &ns, sizeof ns));
    std::printf("(every other pair of CTAs held back %llu ns at entry)\n", ns);
  }
  std::unique_ptr<MarkedSpans> regimes;
  if (const char* on = std::getenv("TIMELINE_REGIMES"); on && std::string(on) == "1")
    regimes = std::make_unique<MarkedSpans>(ctx.harness());
  TimingPolicy timing;
  timing.budget_s = 0.3;
  timing.max_samples = 40;
  const auto kernels = ours::cluster_kernels();
  const auto builds = instrumented();
  std::mt19937_64 rng(42);
  for (const ProbeShape& cs : cases) {
    const GemmShape s = aispflow::bench::probe_gemm_shape(cs.m, cs.n, cs.k, cs.batch);
    const std::string case_text = s.name + " " + cs.dtype + " " + cs.layout;
    if (!case_filter.empty() && case_text.find(case_filter) == std::string::npos) continue;
    const GemmCase gc{s, cs.dtype, cs.layout, "none"};
    const auto spec = lt_dtype(cs.dtype);   // a known dtype: the list's, or checked with PROBE_SHAPE
    const int copies = operand_copies_for(timing, s, *spec, 0);
    GemmProblem problem(s, *spec, rng(), ctx.stream(), copies, GemmVariant::of(gc));
    std::printf("== %s  (%d operand copies)\n", case_text.c_str(), copies);
    BoundLaunch predecessor;   // TIMELINE_AFTER's, bound before any override: the library's build
    if (const char* after = std::getenv("TIMELINE_AFTER"); regimes && after) {
      for (const auto& k : kernels)
        if (k->config()["name"].get<std::string>() == after && !k->unsupported(gc)) predecessor = k->bind(problem);
      if (!predecessor) {
        std::fprintf(stderr, "TIMELINE_AFTER=%s: no configuration of that name runs this case\n", after);
        return 2;
      }
      regimes->set_other(after, predecessor);
    }
    if (regimes) {
      try {
        if (const auto top = aispflow::bench::lt_heuristic_top(ctx, problem))
          regimes->print_medians("cublasLt heuristic top", *top, copies);
      } catch (const std::exception& e) { std::printf("    cublasLt: %s\n", e.what()); }
    }
    for (const auto& k : kernels) {
      const auto config = k->config();
      const std::string name = config["name"].get<std::string>();
      if (name.find(filter) == std::string::npos || k->unsupported(gc)) continue;
      const int bm = config["tile"][0].get<int>(), bn = config["tile"][1].get<int>();
      // cluster_kernels() are all Hopper configurations.
      const auto key = ours::hopper_config_of(*k)->instance_key(!problem.b_transposed());
      auto found = std::find_if(builds.begin(), builds.end(), [&](const auto& b) { return b.first == key; });
      if (found == builds.end()) {
        std::printf("  %-40s skipped: no timeline build of its instance here\n", name.c_str());
        continue;
      }
      // The candidate search's verification (kernels/cuda/candidate_search.hpp: the output poisoned, every element
      // of the first and the last operand copy against its reference); a failed build is reported, not timed.
      auto verified = [&](const BoundLaunch& launch, const char* build) {
        SearchCandidate candidate;
        candidate.launch = launch;
        candidate.extra_tolerance = k->extra_rounding();
        verify_candidate(candidate, problem, ctx.stream());
        if (!candidate.verified)
          std::printf("  %-40s FAILED (%s build): %s; not timed\n", name.c_str(), build, candidate.reason.c_str());
        return candidate.verified;
      };
      try {
        // The plain build first, for the stamps' cost.
        double plain_ms = 0;
        {
          BoundLaunch launch = k->bind(problem);
          if (!verified(launch, "plain")) continue;
          plain_ms = ctx.harness().time(timing, rotating_launch(launch, copies)).stats.median_ms;
          if (regimes) regimes->print_medians("plain build", launch, copies);
        }
        const ours::HopperInstanceOverride use_timeline(key, found->second);
        BoundLaunch launch = k->bind(problem);
        if (!verified(launch, "timeline")) continue;
        const double ms = ctx.harness().time(timing, rotating_launch(launch, copies)).stats.median_ms;
        // The stamps of the last of a round over the copies (it reads operands the round has not touched since).
        for (int copy = 0; copy + 1 < copies; ++copy) launch(ctx.stream(), copy);
        clear_stamps(ctx.stream());
        launch(ctx.stream(), copies - 1);
        const auto host = read_stamps(ctx.stream());
        std::printf("  %-40s verified  %.4f ms with stamps, %.4f ms without\n", name.c_str(), ms, plain_ms);
        const int bk = config["tile"][2].get<int>();   // elements of K a k-tile: 64 bf16, 128 fp8
        const int k_tiles = int((s.k + bk - 1) / bk);
        report(host, k_tiles, bm, bn, case_text + " " + name);
        if (regimes) {
          regimes->print_medians("stamped build", launch, copies);
          for (Regime r : regimes->all()) {
            if (r == Regime::noflush) continue;
            // The stamps of the timed launch (after itself: the one before it stamps first, and is overwritten).
            clear_stamps(ctx.stream());
            regimes->span_ns(r, launch, 1 % copies, copies);
            std::printf("   %s launch:\n", regimes->name(r).c_str());
            report(read_stamps(ctx.stream()), k_tiles, bm, bn, case_text + " " + name + " " + regimes->name(r),
                   regimes->last_before(), regimes->last_after());
          }
        }
      } catch (const std::exception& e) {
        std::printf("  %-40s ERROR %s\n", name.c_str(), e.what());
        cudaGetLastError();
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
