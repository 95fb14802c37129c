#pragma once
// The pick model (gemm_pick_model.hpp) against measured evidence: the autotuned ours.cluster records (each
// lists every candidate configuration with its times), how far the model's pick lands from the measured
// winner, and the fit of the model's constants. Used by the unit test (tests/unit/test_gemm_pick_model.cpp)
// and by bench/tools/fit_pick_model.cpp (the re-fit on new evidence).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/gemm_pick_model.hpp"

namespace aispflow::kernels {

// A candidate's medians from one search: screening (every verified candidate, when there were more than the
// finalists) and the interleaved finalists' rounds.
struct RoundTimes {
  std::optional<double> screen_ms, full_ms;
};

// The pick's and the winner's times from the same round of one search: the interleaved finalists' rounds when
// both were finalists, else the screening round (every candidate was screened). nullopt when no round timed both.
struct SameRound {
  std::string round;   // "interleaved" | "screen"
  double pick_ms = 0, winner_ms = 0;
  double ratio_to_winner() const { return winner_ms / pick_ms; }
};
std::optional<SameRound> same_round(const RoundTimes& pick, const RoundTimes& winner);

struct EvidenceCandidate {
  PickConfig config;
  RoundTimes times;
  bool ok = false;   // verified and timed
};

// One autotuned ours.cluster record: its shape, dtype and every candidate; the record lists the winner first.
struct PickEvidence {
  std::string source;   // "file: shape dtype layout epilogue"
  PickShape shape;
  std::string dtype;
  std::vector<EvidenceCandidate> candidates;
  std::size_t winner = 0;
  // The time the fit compares with: screening medians when every ok candidate has one, else the finalists'.
  std::optional<double> fit_ms(std::size_t i) const;
};

// Every `ok` record of provider ours.cluster with a `candidates` list in a JSON file (a gemm_sweep artifact, a
// {"records": [...]} file or a record array, at any depth). Throws std::runtime_error naming the file and the
// record on a malformed candidate.
std::vector<PickEvidence> read_pick_evidence(const std::string& path);
// read_pick_evidence on every *.json under `dir`, recursively, in path order.
std::vector<PickEvidence> read_pick_evidence_dir(const std::string& dir);
// The runs (directories under bench/results/h100) of the kernel h100_pick_constants() picks for: what the
// constants were fitted on, and what the unit test holds the model to. A kernel change that re-ranks the
// configurations starts a new list (the records of earlier kernels measured another kernel).
const std::vector<std::string>& h100_pick_evidence_runs();
// Every record of those runs under `results_dir` (bench/results/h100).
std::vector<PickEvidence> read_h100_pick_evidence(const std::string& results_dir);

struct PickOutcome {
  std::size_t pick = 0;   // index into the evidence's candidates
  std::optional<SameRound> round;
  double ratio() const { return round ? round->ratio_to_winner() : 0.0; }
};
PickOutcome evaluate_pick(const PickEvidence& e, const PickConstants& constants, int sms = 132);

struct FitOptions {
  int restarts = 8;            // random starting points besides the given one
  int sweeps = 150;            // coordinate-descent sweeps per start
  double focus = 0.15;         // weight exp(-log(t / t_best) / focus): the near-best candidates matter most
  double pick_penalty = 5.0;   // added per record: penalty x max(0, log(t_pick / t_best) - 0.02)
  unsigned seed = 1;
};
// The loss the fit minimises (weighted log-residuals of the relative times, per record, plus the pick penalty).
double pick_loss(const std::vector<PickEvidence>& evidence, const PickConstants& c, const FitOptions& o, int sms = 132);
// Coordinate descent within each constant's range (pick_constant_refs) from `start` and from random starts.
PickConstants fit_pick_constants(const std::vector<PickEvidence>& evidence, const PickConstants& start,
                                 const FitOptions& options = {}, int sms = 132);

}  // namespace aispflow::kernels
