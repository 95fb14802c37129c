#pragma once
// A synthetic run for the HTML report at scale: one sweep node with `count` verified GEMM records. The report's
// integration test (FiveThousandRecordsStayUnder5MBAndAllDraw) checks that every record is drawn;
// bench/run_report_bench.sh (through bench/tools/report_fixture) times the drawing of the same run.
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace aispflow::test {

inline void write_report_fixture(const std::filesystem::path& run, int count) {
  using nlohmann::json;
  json records = json::array();
  for (int i = 0; i < count; ++i) {
    const std::string provider = i % 2 ? "cublaslt.sweep" : "ours.cluster";
    records.push_back(
        {{"provider", provider}, {"kernel", provider + " tile=128x256x64 stages=4 cluster=2x1 id=" + std::to_string(i)},
         {"shape", {{"name", "prefill_t" + std::to_string(i) + "_moe_down"}, {"m", 4096}, {"n", 2880}, {"k", 2880}}},
         {"dtype", "bf16"}, {"layout", "nt"}, {"status", "ok"}, {"verified", true}, {"max_rel_err", 1.2e-3},
         {"tolerance", 7.8e-3}, {"time_ms", {{"median", 0.123456}, {"stdrel", 0.0123}}}, {"samples", 40},
         {"converged", true}, {"tflops", 600.123456 + i}, {"gbytes_per_s", 512.3}, {"intensity", 1234.5},
         {"env", {{"gpu", "NVIDIA H100 80GB HBM3"}, {"driver", "580.1"}, {"build_id", "abc"}}}});
  }
  std::filesystem::create_directories(run / "nodes" / "sweep");
  std::ofstream(run / "nodes" / "sweep" / "artifact.json") << json{{"data", {{"records", records}}}}.dump();
  std::ofstream(run / "run.json") << json{{"workflow", run.filename().string()},
                                          {"file", run.filename().string() + ".yaml"},
                                          {"started", "2026-11-25T10:00:00Z"},
                                          {"seconds", 10.0},
                                          {"exit_code", 0},
                                          {"backend", "cuda"},
                                          {"aispflow_version", "0.1.0+abc"},
                                          {"nodes",
                                           {{{"name", "sweep"},
                                             {"type", "gemm_sweep"},
                                             {"status", "ran"},
                                             {"reason", "no cache entry"},
                                             {"seconds", 9.0},
                                             {"digest", "x"},
                                             {"inputs", json::array()}}}}}
                                             .dump();
}

}  // namespace aispflow::test
