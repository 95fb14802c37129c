// CPU kernel benchmark: the two speed targets of the CPU backend, measured in one process.
//
//   1. cpu.blocked reaches >= 50% of cpu.openblas (cblas_sgemm) at 2048^3 fp32.
//   2. The `peak` node's triad bandwidth is within 10% of a plain STREAM triad loop compiled here.
//
// Both comparisons interleave their two contestants (A, B, A, B, ...) so that whatever else the machine
// is doing at the time lands on both alike; each result is verified before it is timed. Prints one JSON
// document (bench/results/cpu/cpu_kernels.json) on stdout and a summary on stderr.
//
//   cpu_bench [--size N] [--rounds R] [--quick] [--commit SHA]
//   --rounds: most interleaved rounds per comparison (default 60; fewer when both spreads settle at 2%)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include "kernels/common/fingerprint.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/probes.hpp"

extern "C" char* openblas_get_config(void);   // OpenBLAS introspection (also in its cblas.h)

using nlohmann::json;
namespace k = aispflow::kernels;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return one;
}

json stats_json(const k::TimingStats& s) {
  return {{"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"max_ms", s.max_ms},
          {"stdrel", s.stdrel},       {"samples", s.samples}};
}

// Interleaved sampling of two contestants: a warm-up of each, then rounds of (a, b) with the order
// swapped every round, until both spreads settle (after min_rounds) or max_rounds. Besides each side's
// statistics it keeps the ratio b/a of every round (time of b over time of a = speed of a relative to b):
// the two samples of a round see the same machine, so the median of these pairwise ratios cancels load
// that drifts over seconds, which the ratio of the two medians does not.
struct Pair {
  k::TimingStats a, b;
  k::TimingStats speed_ratio;   // "ms" fields hold ratios here: median, min, max, stdrel of b_i / a_i
};
template <class A, class B>
Pair interleave(A&& run_a, B&& run_b, int min_rounds, int max_rounds, double target_stdrel) {
  run_a();
  run_b();
  std::vector<double> ta, tb, ratios;
  for (int r = 0; r < max_rounds; ++r) {
    if (r % 2 == 0) {
      ta.push_back(run_a());
      tb.push_back(run_b());
    } else {
      tb.push_back(run_b());
      ta.push_back(run_a());
    }
    ratios.push_back(tb.back() / ta.back());
    if (r + 1 >= min_rounds && k::summarize(ta, target_stdrel).converged && k::summarize(tb, target_stdrel).converged)
      break;
  }
  return {k::summarize(ta, target_stdrel), k::summarize(tb, target_stdrel), k::summarize(ratios, target_stdrel)};
}

json ratio_json(const k::TimingStats& r) {
  return {{"median", r.median_ms}, {"min", r.min_ms}, {"max", r.max_ms}, {"stdrel", r.stdrel}, {"rounds", r.samples}};
}

// ---- 1. GEMM ---------------------------------------------------------------------------------------------

json gemm_comparison(std::int64_t n, int max_rounds, json& targets) {
  const std::size_t count = std::size_t(n * n);
  std::vector<float> a(count), b(count), c_blocked(count), c_blas(count);
  k::fill_random(a, 1);
  k::fill_random(b, 2);
  const k::BlockedGemmConfig cfg = k::resolve_blocked_config();
  const int threads = tbb::this_task_arena::max_concurrency();

  auto run_blocked = [&] {
    const double t0 = now_ms();
    k::blocked_sgemm(n, n, n, a.data(), n, b.data(), n, c_blocked.data(), n, cfg);
    return now_ms() - t0;
  };
  auto run_blas = [&] {
    const double t0 = now_ms();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, a.data(), int(n),
                b.data(), int(n), 0.0f, c_blas.data(), int(n));
    return now_ms() - t0;
  };

  // Verify both before timing either.
  k::GemmShape shape;
  shape.name = "square" + std::to_string(n);
  shape.m = shape.n = shape.k = n;
  std::fill(c_blocked.begin(), c_blocked.end(), NAN);
  std::fill(c_blas.begin(), c_blas.end(), NAN);
  run_blocked();
  run_blas();
  const double tol = k::default_tolerance("fp32", n);
  const k::VerifyResult vb = k::verify_gemm(shape, a.data(), b.data(), c_blocked.data(), tol);
  const k::VerifyResult vo = k::verify_gemm(shape, a.data(), b.data(), c_blas.data(), tol);
  json out = {{"shape", shape.to_json()},
              {"dtype", "fp32"},
              {"blocked_kernel", k::blocked_gemm_identity(cfg, threads)},
              {"openblas_config", openblas_get_config()},
              {"verification",
               {{"cpu.blocked", {{"ok", vb.ok}, {"max_rel_err", vb.max_rel_err}, {"detail", vb.detail}}},
                {"cpu.openblas", {{"ok", vo.ok}, {"max_rel_err", vo.max_rel_err}, {"detail", vo.detail}}}}}};
  if (!vb.ok || !vo.ok) {
    targets.push_back({{"name", "cpu.blocked >= 50% of cpu.openblas at " + shape.name},
                       {"pass", false},
                       {"why", "verification failed; nothing was timed"}});
    return out;
  }

  const Pair p = interleave(run_blocked, run_blas, 10, max_rounds, 0.02);
  const double flops = shape.flops();
  const double gf_blocked = flops / (p.a.median_ms * 1e-3) / 1e9, gf_blas = flops / (p.b.median_ms * 1e-3) / 1e9;
  const double ratio = p.speed_ratio.median_ms;   // median over rounds of (openblas ms / blocked ms)
  out["cpu.blocked"] = stats_json(p.a);
  out["cpu.blocked"]["gflops"] = gf_blocked;
  out["cpu.openblas"] = stats_json(p.b);
  out["cpu.openblas"]["gflops"] = gf_blas;
  out["ratio_blocked_over_openblas"] = ratio_json(p.speed_ratio);
  out["ratio_of_medians"] = gf_blocked / gf_blas;
  // Context: the machine's fp32 FMA ceiling as the `peak` node measures it, and each GEMM's share of it.
  const k::Ceiling fma = k::measure_cpu_fma("fp32", k::TimingPolicy{});
  const double fma_gflops = fma["value"].get<double>() * 1e3;
  out["fp32_fma_ceiling"] = fma;
  out["cpu.blocked"]["fraction_of_fma_ceiling"] = gf_blocked / fma_gflops;
  out["cpu.openblas"]["fraction_of_fma_ceiling"] = gf_blas / fma_gflops;
  targets.push_back({{"name", "cpu.blocked >= 50% of cpu.openblas at " + shape.name + " fp32"},
                     {"target", ">= 0.50"},
                     {"value", ratio},
                     {"pass", ratio >= 0.5}});
  std::cerr << "gemm " << shape.name << ": cpu.blocked " << gf_blocked << " GFLOP/s (stdrel " << p.a.stdrel
            << "), cpu.openblas " << gf_blas << " GFLOP/s (stdrel " << p.b.stdrel << "), ratio " << ratio << "\n";
  return out;
}

// ---- 2. STREAM triad -------------------------------------------------------------------------------------

// The plain reference: the STREAM triad loop, each of `threads` std::threads owning one contiguous slice,
// compiled with -O3 -march=native like the rest of this file. It runs over the peak probe's own arrays:
// on the VM this was developed on, two sets of arrays allocated one after the other stream at speeds up
// to 20% apart (where the host placed their pages), which would swamp the difference between two loops.
double plain_triad_ms(double* a, const double* b, const double* c, std::int64_t n, int threads) {
  const double s = 3.0;
  const double t0 = now_ms();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      const std::int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
    });
  for (auto& th : pool) th.join();
  return now_ms() - t0;
}

json stream_comparison(int max_rounds, json& targets) {
  const std::int64_t array_bytes = k::default_bandwidth_array_bytes();
  const int threads = tbb::this_task_arena::max_concurrency();

  // What the `peak` node publishes, exactly as it calls it (its own samples, one kernel after another).
  const std::vector<k::Ceiling> published = k::measure_cpu_bandwidth(array_bytes, k::TimingPolicy{});

  // The comparison: the peak probe's triad (the same StreamArrays code measure_cpu_bandwidth runs) and the
  // plain loop, sample for sample in alternation over the same arrays.
  k::StreamArrays probe(array_bytes);
  const Pair p = interleave([&] { return probe.triad_ms(); },
                            [&] { return plain_triad_ms(probe.a(), probe.b(), probe.c(), probe.elements(), threads); },
                            10, max_rounds, 0.02);
  const double bytes = 3.0 * probe.array_bytes();
  const double peak = bytes / (p.a.median_ms * 1e-3) / 1e9, reference = bytes / (p.b.median_ms * 1e-3) / 1e9;
  const double ratio = p.speed_ratio.median_ms;   // median over rounds of (plain ms / peak ms)
  targets.push_back({{"name", "peak dram.triad within 10% of a plain STREAM triad loop"},
                     {"target", "0.90 <= ratio <= 1.10"},
                     {"value", ratio},
                     {"pass", ratio >= 0.9 && ratio <= 1.1}});
  std::cerr << "triad: peak " << peak << " GB/s (stdrel " << p.a.stdrel << "), plain STREAM " << reference
            << " GB/s (stdrel " << p.b.stdrel << "), ratio " << ratio << "\n";
  json out = {{"array_bytes", array_bytes},
              {"threads", threads},
              {"peak_triad", stats_json(p.a)},
              {"plain_stream_triad", stats_json(p.b)},
              {"ratio_peak_over_plain", ratio_json(p.speed_ratio)},
              {"ratio_of_medians", peak / reference},
              {"plain_method", "a[i] = b[i] + 3.0*c[i] over fp64 arrays, " + std::to_string(threads) +
                                   " std::threads with contiguous slices, -O3 -march=native, over the probe's own arrays "
                                   "(first-touched by the probe's TBB partition); bytes = 3 arrays"},
              {"peak_node_ceilings", published}};
  out["peak_triad"]["gb_per_s"] = peak;
  out["plain_stream_triad"]["gb_per_s"] = reference;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t size = 2048;
  int rounds = 60;
  std::string commit = "unknown";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--size" && i + 1 < argc) size = std::atoll(argv[++i]);
    else if (arg == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (arg == "--commit" && i + 1 < argc) commit = argv[++i];
    else if (arg == "--quick") size = 512, rounds = 12;
    else {
      std::cerr << "usage: cpu_bench [--size N] [--rounds R] [--quick] [--commit SHA]\n";
      return 2;
    }
  }
  if (size < 1 || rounds < 1) {
    std::cerr << "cpu_bench: --size and --rounds must be >= 1\n";
    return 2;
  }

  json targets = json::array();
  const double load_before = load_average();
  const std::string started = utc_now();
  json gemm = gemm_comparison(size, rounds, targets);
  json stream = stream_comparison(rounds, targets);
  const double load_after = load_average();

  bool all_pass = true;
  for (const auto& t : targets) all_pass = all_pass && t.value("pass", false);
  const json fp = k::cpu_fingerprint();
  json doc = {{"benchmark", "cpu_kernels"},
              {"device", "cpu"},
              {"cpu_model", fp["cpu_model"]},
              {"cores", fp["logical_cpus"]},
              {"commit", commit},
              {"date", started},
              {"fingerprint", fp},
              {"hardware", k::cpu_hardware_info()},
              // Other processes share this machine: the 1-minute load average before and after says how
              // quiet it was. Interleaving keeps the ratios fair either way.
              {"load_average_1min", {{"before", load_before}, {"after", load_after}}},
              {"gemm", gemm},
              {"stream", stream},
              {"targets", targets},
              {"all_targets_pass", all_pass}};
  std::cout << doc.dump(2) << "\n";
  return all_pass ? 0 : 1;
}
