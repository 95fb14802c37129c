#include "kernels/common/gemm_pick_fit.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

namespace aispflow::kernels {

std::optional<SameRound> same_round(const RoundTimes& pick, const RoundTimes& winner) {
  if (pick.full_ms && winner.full_ms) return SameRound{"interleaved", *pick.full_ms, *winner.full_ms};
  if (pick.screen_ms && winner.screen_ms) return SameRound{"screen", *pick.screen_ms, *winner.screen_ms};
  return std::nullopt;
}

std::optional<double> PickEvidence::fit_ms(std::size_t i) const {
  const bool all_screened = std::all_of(candidates.begin(), candidates.end(),
                                        [](const EvidenceCandidate& c) { return !c.ok || c.times.screen_ms; });
  const auto& t = candidates.at(i).times;
  return all_screened ? t.screen_ms : t.full_ms;
}

namespace {

std::optional<double> median_of(const nlohmann::json& c, const char* key) {
  if (!c.contains(key) || !c[key].is_object() || !c[key].contains("median")) return std::nullopt;
  return c[key]["median"].get<double>();
}

void collect(const nlohmann::json& j, const std::string& path, std::vector<PickEvidence>& out) {
  if (j.is_array()) {
    for (const auto& x : j) collect(x, path, out);
    return;
  }
  if (!j.is_object()) return;
  if (!j.contains("provider")) {
    for (const auto& [key, value] : j.items()) collect(value, path, out);
    return;
  }
  if (j["provider"] != "ours.cluster" || j.value("status", "") != "ok" || !j.contains("candidates") ||
      !j["candidates"].is_array())
    return;
  const auto& s = j.at("shape");
  PickEvidence e;
  e.shape = {s.at("m").get<std::int64_t>(), s.at("n").get<std::int64_t>(), s.at("k").get<std::int64_t>(),
             s.value("batch", std::int64_t(1))};
  e.dtype = j.at("dtype").get<std::string>();
  e.shape.b_mn_major = b_stored_mn_major(j.value("layout", "nn"), is_fp8(e.dtype));
  e.source = path + ": " + s.value("name", std::string("?")) + " " + e.dtype + " " + j.value("layout", "nn") + " " +
             j.value("epilogue", "none");
  const std::string winner = j.contains("config") ? j["config"].value("name", std::string()) : std::string();
  for (const auto& c : j["candidates"]) {
    // Split-K over the cluster (NOTES.md step 41, branch clusterk) ran in run-e89f7ea only: slower on every shape,
    // not built on main, and not a configuration this model prices.
    if (c.contains("config") && c["config"].value("cluster_k", 1) > 1) continue;
    EvidenceCandidate ec;
    try {
      ec.config = pick_config_from_json(c.at("config"));
      // Records from before the configuration said so (run-d734c37, run-9b47bed) name the trim in the kernel.
      if (c.value("kernel", std::string()).find(kATrimKernelNote) != std::string::npos)
        ec.config.a_box_trim = true;
    } catch (const std::exception& ex) {
      throw std::runtime_error(e.source + ": candidate: " + ex.what());
    }
    ec.times = {median_of(c, "screen_time_ms"), median_of(c, "time_ms")};
    ec.ok = c.value("status", "") == "ok" && (ec.times.screen_ms || ec.times.full_ms);
    e.candidates.push_back(std::move(ec));
  }
  const auto won = std::find_if(e.candidates.begin(), e.candidates.end(),
                                [&](const EvidenceCandidate& c) { return c.config.name == winner; });
  if (won == e.candidates.end())
    throw std::runtime_error(e.source + ": its winner '" + winner + "' is none of the candidates the model prices");
  e.winner = std::size_t(won - e.candidates.begin());
  if (won->ok) out.push_back(std::move(e));
}

}  // namespace

std::vector<PickEvidence> read_pick_evidence(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  std::vector<PickEvidence> out;
  try {
    collect(j, path, out);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": an ours.cluster record without the expected fields: " + e.what());
  }
  return out;
}

std::vector<PickEvidence> read_pick_evidence_dir(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() == ".json") files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  std::vector<PickEvidence> out;
  for (const auto& f : files) {
    auto part = read_pick_evidence(f);
    std::move(part.begin(), part.end(), std::back_inserter(out));
  }
  return out;
}

const std::vector<std::string>& h100_pick_evidence_runs() {
  // The kernel the constants pick for: step 127's (GPC order: 1x2 pairs 1-26 % faster, 2x1 pairs 0-4 %), which
  // re-ranked configurations, so its runs start a new list (as steps 105 and 108 did): run-8a141a2, on which
  // cluster_1x2_extra was re-fitted (a scan: 60 of 61 within 3 % from -0.05 to -0.003, 58 at its previous 0.041;
  // the other constants are run-655c061's fit), and, held out, rerun-8a141a2 (the same bundle in the next call: 60
  // of 61). The runs of earlier kernels are archived as what those kernels measured (issue22/README.md,
  // superseded-runs-14.tar.xz: run-655c061, run-cb3b65f, run-71c87f0, run-9e57c21). Steps 130 (bands balanced
  // per shape) and 132 (interleaved rounds in a shuffled order) re-ranked nothing beyond the noise, so their run
  // joins the list, held out: run-8cb4315, 60 of 61 (all 43 of the two workflows). So does run-018f591, the first
  // with primed interleaved samples (NOTES.md step 136: every sample's code warm, as in the confirmation round),
  // held out: 60 of 61, all 43; rerun-8a141a2 (held out, 60 of 61) left the list for it and is archived in
  // superseded-runs-16.tar.xz, to keep the committed evidence inside the device's carry. run-bdadb1c (the same
  // kernel; step 138 changed only CUTLASS's default rows) took run-8cb4315's place the same way, held out: 60 of
  // 61, all 43 (run-8cb4315 is in superseded-runs-17.tar.xz). Step 143 (a cluster's CTAs load their own copy of the
  // first k-tile before the cluster barrier: clusters 1.5-6 % faster at shapes of one or two waves) moved three
  // small unaligned.yaml winners from a lone CTA to a 2x1 pair, which the model, held out, does not follow: its
  // run-6b87410 joins the list in run-8a141a2's place (archived in superseded-runs-18.tar.xz) with those misses
  // listed in the test, 57 of 61 and 42 of 43 (square_4096 bf16 nt at 0.961, a screening near-tie; all 43 in
  // rerun-6b87410). A re-fit on both runs took 57 and 59 of their 61, in sample, and still missed the 1000-row
  // pairs, so the constants stay (docs/kernels.md). Step 145 added a configuration (128 x 240 in a 2x1 pair, the
  // winner at N = 2880 in bf16) and priced an MN-major B's loads in whole 64-column boxes, no constant changed:
  // run-bb21035, held out, 59 of 61 and all 43 of the two workflows (the 240 pair picked and winning at every
  // 4096 x 2880 row), joins the list in run-018f591's place (archived in superseded-runs-19.tar.xz).
  static const std::vector<std::string> runs = {"issue22/run-bdadb1c", "issue22/run-6b87410", "issue22/run-bb21035"};
  return runs;
}

std::vector<PickEvidence> read_h100_pick_evidence(const std::string& results_dir) {
  std::vector<PickEvidence> out;
  for (const auto& run : h100_pick_evidence_runs()) {
    auto part = read_pick_evidence_dir(results_dir + "/" + run);
    std::move(part.begin(), part.end(), std::back_inserter(out));
  }
  return out;
}

// The model chooses among the candidates that ran (verified and timed): those are the configurations that can run
// the case, as the provider's pick would.
PickOutcome evaluate_pick(const PickEvidence& e, const PickConstants& constants, int sms) {
  std::vector<PickConfig> configs;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < e.candidates.size(); ++i)
    if (e.candidates[i].ok) {
      configs.push_back(e.candidates[i].config);
      index.push_back(i);
    }
  PickOutcome o;
  o.pick = index.at(pick_argmin(e.shape, e.dtype, configs, constants, sms));
  o.round = same_round(e.candidates[o.pick].times, e.candidates[e.winner].times);
  return o;
}

double pick_loss(const std::vector<PickEvidence>& evidence, const PickConstants& c, const FitOptions& o, int sms) {
  double loss = 0;
  for (const auto& e : evidence) {
    std::vector<double> predicted, measured;
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
      const auto t = e.fit_ms(i);
      if (!e.candidates[i].ok || !t) continue;
      // An unpriced candidate (an unfitted constant: infinite time, never picked) has no residual to weigh.
      const double time = predict_pick(e.shape, e.dtype, e.candidates[i].config, c, sms).time;
      if (!std::isfinite(time)) continue;
      predicted.push_back(std::log(time));
      measured.push_back(std::log(*t));
    }
    if (measured.empty()) continue;
    const double best = *std::min_element(measured.begin(), measured.end());
    // Relative times: the residuals' weighted mean is the record's unknown scale.
    double wsum = 0, mean = 0;
    std::vector<double> w(measured.size());
    for (std::size_t i = 0; i < measured.size(); ++i) {
      w[i] = std::exp(-(measured[i] - best) / o.focus);
      wsum += w[i];
      mean += w[i] * (predicted[i] - measured[i]);
    }
    mean /= wsum;
    for (std::size_t i = 0; i < measured.size(); ++i) loss += w[i] * std::pow(predicted[i] - measured[i] - mean, 2);
    const std::size_t pick = std::size_t(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
    loss += o.pick_penalty * std::max(0.0, measured[pick] - best - 0.02);
  }
  return loss;
}

PickConstants fit_pick_constants(const std::vector<PickEvidence>& evidence, const PickConstants& start,
                                 const FitOptions& o, int sms) {
  const auto& refs = pick_constant_refs();
  std::mt19937 rng(o.seed);
  // An unfitted constant (0, below its range: gemm_pick_model.cpp) starts mid-range, so that records which
  // exercise it can move it; the end restores it where none does.
  PickConstants from = start;
  for (const auto& r : refs)
    if (from.*r.member < r.lo) from.*r.member = (r.lo + r.hi) / 2;
  PickConstants best = from;
  double best_loss = pick_loss(evidence, from, o, sms);
  for (int restart = 0; restart <= o.restarts; ++restart) {
    PickConstants c = from;
    if (restart > 0)
      for (const auto& r : refs) c.*r.member = std::uniform_real_distribution<double>(r.lo, r.hi)(rng);
    double loss = pick_loss(evidence, c, o, sms);
    std::vector<double> step;
    for (const auto& r : refs) step.push_back((r.hi - r.lo) / 8);
    for (int sweep = 0; sweep < o.sweeps; ++sweep) {
      bool improved = false;
      for (std::size_t i = 0; i < refs.size(); ++i) {
        for (double sign : {1.0, -1.0}) {
          PickConstants trial = c;
          trial.*refs[i].member = std::clamp(c.*refs[i].member + sign * step[i], refs[i].lo, refs[i].hi);
          const double l = pick_loss(evidence, trial, o, sms);
          if (l < loss) {
            loss = l;
            c = trial;
            improved = true;
            break;
          }
        }
      }
      if (!improved)
        for (double& s : step) s /= 2;
    }
    if (loss < best_loss) {
      best_loss = loss;
      best = c;
    }
  }
  // A constant no record depends on (the loss is the same whatever it is: no candidate of the evidence uses it)
  // keeps its start value instead of whatever a restart drew for it.
  for (const auto& r : refs) {
    PickConstants trial = best;
    trial.*r.member = start.*r.member;
    PickConstants moved = best;
    moved.*r.member = r.lo + (r.hi - r.lo) * 0.37;
    if (pick_loss(evidence, moved, o, sms) == best_loss && pick_loss(evidence, trial, o, sms) == best_loss)
      best.*r.member = start.*r.member;
  }
  return best;
}

}  // namespace aispflow::kernels
