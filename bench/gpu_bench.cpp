// GPU benchmark evidence for issue 5, through the host-only backend API (so this file builds with or
// without CUDA): cuBLASLt (top heuristic) and cuBLASLt sweep at 4096^3 and 8192^3 in bf16 and fp8 e4m3,
// the GPU peaks (bandwidth kernels beside cudaMemcpy D2D, FMA, tensor-core GEMMs) and the datasheet figures.
// Prints one JSON document on stdout (saved as bench/results/<device>/gpu_bench.json by
// bench/run_gpu_checks.sh) and a summary table with the target checks on stderr.
//
//   gpu_bench [--quick]      --quick: 2048^3 only, short timing (a smoke test)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/common/backend.hpp"
#include "pipeline/build_id.hpp"


using nlohmann::json;
using namespace aispflow::kernels;

namespace {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

double median_of(const json& record) {
  return record.contains("time_ms") ? record["time_ms"]["median"].get<double>() : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend("cuda");
  } catch (const std::exception& e) {
    std::cout << json{{"bench", "gpu_bench"}, {"error", e.what()}}.dump(2) << "\n";
    std::cerr << "gpu_bench: " << e.what() << "\n";
    return 1;
  }
  const json env = backend->fingerprint();
  json out;
  out["bench"] = "gpu_bench";
  out["date"] = now_iso8601();
  const char* commit = std::getenv("AISPFLOW_COMMIT");
  out["commit"] = commit ? commit : aispflow::build_id();
  out["device"] = env.value("gpu", "unknown");
  out["driver"] = env.value("driver", "unknown");
  out["env"] = env;
  out["hw"] = backend->hardware_info();

  TimingPolicy policy;
  policy.warmup = 3;
  policy.min_samples = quick ? 3 : 10;
  policy.max_samples = quick ? 20 : 300;
  policy.target_stdrel = 0.02;
  policy.budget_s = quick ? 0.2 : 3.0;
  out["timing_policy"] = policy.to_json();

  const std::vector<std::int64_t> sizes = quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{4096, 8192};
  const auto t0 = std::chrono::steady_clock::now();
  json records = json::array();
  for (const std::int64_t n : sizes) {
    for (const std::string dtype : {"bf16", "fp8_e4m3"}) {
      for (const std::string provider : {"cublaslt", "cublaslt.sweep"}) {
        GemmShape shape;
        shape.name = "square_" + std::to_string(n);
        shape.m = shape.n = shape.k = n;
        for (const auto& r : backend->provider(provider)->run(GemmCase{shape, dtype}, policy)) records.push_back(r.to_json(env));
      }
    }
  }
  out["records"] = records;

  PeakOptions peak_options;
  peak_options.timing = policy;
  if (quick) peak_options.bandwidth_bytes = double(std::size_t(256) << 20);
  out["peaks"] = backend->measure_peaks(peak_options);
  out["datasheet"] = backend->datasheet_ceilings();
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // ---- the targets, measured in this same run ----
  json checks = json::array();
  json observations = json::array();   // figures worth seeing that are true by construction: not targets
  std::map<std::string, json> by_key;   // "provider|shape|dtype"
  for (const auto& r : records)
    by_key[r["provider"].get<std::string>() + "|" + r["shape"]["name"].get<std::string>() + "|" +
           r["dtype"].get<std::string>()] = r;
  for (const std::int64_t n : sizes) {
    const std::string shape = "square_" + std::to_string(n);
    for (const std::string dtype : {"bf16", "fp8_e4m3"}) {
      const json& top = by_key["cublaslt|" + shape + "|" + dtype];
      const json& sweep = by_key["cublaslt.sweep|" + shape + "|" + dtype];
      for (const json* r : {&top, &sweep}) {
        const bool ok = (*r).value("status", "") == "ok" && (*r).value("verified", false);
        checks.push_back({{"check", (*r).value("provider", "") + " " + dtype + " " + shape + " verified"}, {"pass", ok},
                          {"detail", ok ? "max_rel_err " + std::to_string((*r)["max_rel_err"].get<double>())
                                        : (*r).value("reason", "")}});
        if (ok && dtype == "bf16") {
          const double stdrel = (*r)["time_ms"]["stdrel"].get<double>();
          checks.push_back({{"check", (*r)["provider"].get<std::string>() + " bf16 " + shape + " stdrel <= 2%"},
                            {"pass", stdrel <= 0.02}, {"value", stdrel}});
        }
      }
      if (median_of(top) > 0 && median_of(sweep) > 0) {
        // Two separate measurements differ by their noise even for the same kernel: "not slower" is judged
        // against twice the larger relative spread (and said so), beside the strict ratio.
        const double ratio = median_of(sweep) / median_of(top);
        const double noise = 2.0 * std::max(top["time_ms"]["stdrel"].get<double>(), sweep["time_ms"]["stdrel"].get<double>());
        checks.push_back({{"check", "cublaslt.sweep not slower than cublaslt, " + dtype + " " + shape},
                          {"pass", ratio <= 1.0 + noise},
                          {"value", ratio},
                          {"detail", std::string(ratio <= 1.0 ? "faster or equal" : "slower by less than the noise") +
                                         " (sweep/top median ratio; noise allowance " + std::to_string(noise) + ")"}});
        // Inside the sweep the heuristic's top choice is a finalist sampled in the same rounds as the winner,
        // and the winner is the fastest finalist: "winner <= top" holds by construction, so it is no target.
        // The ratio is reported as an observation (how much the sweep gained in its own rounds).
        for (const auto& c : sweep["candidates"])
          if (c["heuristic_rank"] == 0 && c.contains("time_ms"))
            observations.push_back({{"observation", "sweep winner / heuristic top in the same rounds, " + dtype + " " + shape},
                                    {"value", median_of(sweep) / c["time_ms"]["median"].get<double>()}});
      }
    }
  }
  std::map<std::string, double> peak;
  for (const auto& c : out["peaks"])
    if (c.contains("value")) peak[c["name"].get<std::string>()] = c["value"].get<double>();
  if (peak.count("hbm.copy") && peak.count("hbm.memcpy_d2d"))
    checks.push_back({{"check", "copy kernel >= 97% of cudaMemcpy D2D"},
                      {"pass", peak["hbm.copy"] >= 0.97 * peak["hbm.memcpy_d2d"]},
                      {"value", peak["hbm.copy"] / peak["hbm.memcpy_d2d"]}});
  std::string best_memory;
  double best = 0;
  for (const auto& c : out["peaks"])
    if (c["kind"] == "memory" && c.contains("value") && c["value"].get<double>() > best) {
      best = c["value"].get<double>();
      best_memory = c["name"];
    }
  out["best_memory_ceiling"] = {{"name", best_memory}, {"value", best}};
  out["checks"] = checks;
  out["observations"] = observations;
  std::cout << out.dump(2) << "\n";

  // ---- summary on stderr ----
  std::fprintf(stderr, "\n%-16s %-12s %-9s %-7s %10s %9s %8s  %s\n", "provider", "shape", "dtype", "status", "median_ms",
               "TFLOP/s", "stdrel", "kernel");
  for (const auto& r : records)
    std::fprintf(stderr, "%-16s %-12s %-9s %-7s %10.4f %9.1f %7.2f%%  %s\n", r["provider"].get<std::string>().c_str(),
                 r["shape"]["name"].get<std::string>().c_str(), r["dtype"].get<std::string>().c_str(),
                 r["status"].get<std::string>().c_str(), median_of(r), r.value("tflops", 0.0),
                 r.contains("time_ms") ? 100 * r["time_ms"]["stdrel"].get<double>() : 0.0,
                 r.value("kernel", std::string("")).c_str());
  std::fprintf(stderr, "\n%-22s %12s  %s\n", "ceiling", "value", "method");
  for (const auto& c : out["peaks"]) {
    if (!c.contains("value")) {
      std::fprintf(stderr, "%-22s %12s  %s\n", c["name"].get<std::string>().c_str(), "-",
                   c.value("reason", std::string("not measured")).c_str());
      continue;
    }
    std::fprintf(stderr, "%-22s %9.1f %s  %s\n", c["name"].get<std::string>().c_str(), c["value"].get<double>(),
                 c["unit"].get<std::string>().c_str(), c["method"].get<std::string>().substr(0, 90).c_str());
  }
  std::fprintf(stderr, "\n");
  int failed = 0;
  for (const auto& c : checks) {
    const bool pass = c["pass"].get<bool>();
    failed += pass ? 0 : 1;
    std::fprintf(stderr, "[%s] %s%s\n", pass ? "PASS" : "MISS", c["check"].get<std::string>().c_str(),
                 c.contains("value") ? (" (" + std::to_string(c["value"].get<double>()) + ")").c_str() : "");
  }
  for (const auto& o : observations)
    std::fprintf(stderr, "[info] %s (%f)\n", o["observation"].get<std::string>().c_str(), o["value"].get<double>());
  std::fprintf(stderr, "%d of %zu targets missed; %.1f s\n", failed, checks.size(), out["seconds"].get<double>());
  return 0;
}
