// The ours.cluster default-pick model (kernels/common/gemm_pick_model.hpp) against autotune evidence:
//
//   fit_pick_model [--fit] [--loo] [--robust] [--scan NAME LO HI STEPS] [--penalty X] [--restarts N] [--seed S]
//                  [PATH...]
//                  PATH: a record file or a directory (default: h100_pick_evidence_runs() under
//                  bench/results/h100, the records of the kernel the constants pick for); --penalty, --restarts and
//                  --seed set the fit's FitOptions (gemm_pick_fit.hpp: the pick penalty per record, the random
//                  starts, their seed)
//
// Prints, per autotuned ours.cluster record, the configuration the model picks, the measured winner and their
// same-round ratio (winner time / pick time), with the committed constants; --fit re-fits the constants on all
// the evidence and prints them (paste them into h100_pick_constants()) with the table again; --loo fits once
// per record without it and reports that record's pick (how well the model predicts a shape it has not seen);
// --robust says how many picks hold when one constant moves by a little (constants are printed with 17 digits:
// a pick that sits on a near-tie flips with the 8th); --scan moves one constant over a range, the others held, and
// counts the picks within 3 % at each value (how a new term, unfitted at 0, would change the picks).
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/gemm_pick_fit.hpp"

using namespace aispflow::kernels;

namespace {

constexpr double kTarget = 0.97;   // issue 22: within 3% of the autotuned winner

void report(const std::vector<PickEvidence>& evidence, const PickConstants& c) {
  int within = 0;
  double worst = 1;
  for (const auto& e : evidence) {
    const PickOutcome o = evaluate_pick(e, c);
    const double r = o.ratio();
    within += r >= kTarget ? 1 : 0;
    worst = std::min(worst, r);
    std::printf("%-90s pick %-30s winner %-30s %-11s %.3f%s\n", e.source.c_str(),
                e.candidates[o.pick].config.name.c_str(), e.candidates[e.winner].config.name.c_str(),
                o.round ? o.round->round.c_str() : "-", r, r >= kTarget ? "" : "  MISS");
  }
  std::printf("%d of %zu records within 3%% of the winner; worst ratio %.3f\n", within, evidence.size(), worst);
}

int within_target(const std::vector<PickEvidence>& evidence, const PickConstants& c) {
  int within = 0;
  for (const auto& e : evidence) within += evaluate_pick(e, c).ratio() >= kTarget ? 1 : 0;
  return within;
}

// How many picks hold when one constant moves by a little: the fit's pick penalty pulls constants to the point
// where a pick just flips to the winner, so some picks rest on a hair. For each relative step, the fewest records
// within 3% over every constant moved by +-step on its own.
void robustness(const std::vector<PickEvidence>& evidence, const PickConstants& c) {
  std::printf("\n== robustness: the fewest records within 3%% with one constant moved by +-step\n");
  for (double step : {1e-6, 1e-4, 1e-3, 1e-2, 5e-2}) {
    int fewest = int(evidence.size());
    const char* weakest = "-";
    for (const auto& r : pick_constant_refs())
      for (double sign : {1.0, -1.0}) {
        if (r.member == &PickConstants::cluster4_slots) continue;   // a count: moved by one below
        PickConstants moved = c;
        moved.*r.member *= 1.0 + sign * step;
        const int n = within_target(evidence, moved);
        if (n < fewest) {
          fewest = n;
          weakest = r.name;
        }
      }
    std::printf("step %-6g %3d of %zu (weakest: %s)\n", step, fewest, evidence.size(), weakest);
  }
  for (double slots : {-1.0, 1.0}) {
    PickConstants moved = c;
    moved.cluster4_slots += slots;
    std::printf("cluster4_slots %+g: %d of %zu\n", slots, within_target(evidence, moved), evidence.size());
  }
}

void print_constants(const PickConstants& c) {
  for (const auto& r : pick_constant_refs()) std::printf("    k.%s = %.17g;   // %s\n", r.name, c.*r.member, r.meaning);
}

}  // namespace

int main(int argc, char** argv) {
  bool fit = false, loo = false, robust = false;
  FitOptions options;
  std::vector<std::string> paths;
  std::string scan_name;   // --scan NAME LO HI STEPS: the picks within 3 % as one constant moves, the others held
  double scan_lo = 0, scan_hi = 0;
  int scan_steps = 0;
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--fit] [--loo] [--robust] [--scan NAME LO HI STEPS] [--penalty X] [--restarts N] [--seed S] "
                 "[record file or directory...]\n",
                 argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; ++i) try {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--fit")) fit = true;
    else if (!std::strcmp(argv[i], "--penalty") && has_value) options.pick_penalty = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--restarts") && has_value) options.restarts = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && has_value) options.seed = unsigned(std::stoul(argv[++i]));
    else if (!std::strcmp(argv[i], "--loo")) loo = true;
    else if (!std::strcmp(argv[i], "--robust")) robust = true;
    else if (!std::strcmp(argv[i], "--scan") && i + 4 < argc) {
      scan_name = argv[++i];
      scan_lo = std::stod(argv[++i]);
      scan_hi = std::stod(argv[++i]);
      scan_steps = std::stoi(argv[++i]);
    }
    else if (argv[i][0] == '-') return usage();
    else paths.push_back(argv[i]);
  } catch (const std::logic_error&) {   // std::stod and friends: not a number
    std::fprintf(stderr, "%s: %s needs a number\n", argv[0], argv[i - 1]);
    return usage();
  }
  try {
    // Default: the records of the kernel the committed constants pick for (h100_pick_evidence_runs).
    std::vector<PickEvidence> evidence = paths.empty() ? read_h100_pick_evidence("bench/results/h100")
                                                       : std::vector<PickEvidence>{};
    for (const auto& p : paths) {
      auto part = std::filesystem::is_directory(p) ? read_pick_evidence_dir(p) : read_pick_evidence(p);
      evidence.insert(evidence.end(), part.begin(), part.end());
    }
    if (evidence.empty()) {
      std::fprintf(stderr, "no autotuned ours.cluster records (with candidates) found\n");
      return 1;
    }
    std::printf("== committed constants (h100_pick_constants)\n");
    report(evidence, h100_pick_constants());
    if (robust) robustness(evidence, h100_pick_constants());
    if (!scan_name.empty()) {
      const PickConstantRef* ref = nullptr;
      for (const auto& r : pick_constant_refs())
        if (scan_name == r.name) ref = &r;
      if (!ref) throw std::invalid_argument("--scan: no constant named '" + scan_name + "'");
      std::printf("\n== %s from %g to %g, every other constant as committed\n", ref->name, scan_lo, scan_hi);
      for (int step = 0; step <= scan_steps; ++step) {
        PickConstants moved = h100_pick_constants();
        moved.*ref->member = scan_lo + (scan_hi - scan_lo) * step / std::max(1, scan_steps);
        std::printf("%s = %-10.4g %d of %zu within 3%%\n", ref->name, moved.*ref->member,
                    within_target(evidence, moved), evidence.size());
      }
    }
    if (fit) {
      const PickConstants c = fit_pick_constants(evidence, h100_pick_constants(), options);
      std::printf("\n== fitted on %zu records (loss %.4f; committed %.4f)\n", evidence.size(),
                  pick_loss(evidence, c, options), pick_loss(evidence, h100_pick_constants(), options));
      print_constants(c);
      report(evidence, c);
    }
    if (loo) {
      std::printf("\n== leave one out: fitted without each record, then its pick\n");
      int within = 0;
      double worst = 1;
      // From the middle of every constant's range, not from the committed values (fitted with the record).
      PickConstants neutral;
      for (const auto& r : pick_constant_refs()) neutral.*r.member = (r.lo + r.hi) / 2;
      for (std::size_t i = 0; i < evidence.size(); ++i) {
        std::vector<PickEvidence> rest = evidence;
        rest.erase(rest.begin() + std::ptrdiff_t(i));
        const PickOutcome o = evaluate_pick(evidence[i], fit_pick_constants(rest, neutral, options));
        within += o.ratio() >= kTarget ? 1 : 0;
        worst = std::min(worst, o.ratio());
        std::printf("%-90s pick %-30s %.3f\n", evidence[i].source.c_str(),
                    evidence[i].candidates[o.pick].config.name.c_str(), o.ratio());
      }
      std::printf("leave one out: %d of %zu within 3%%; worst %.3f\n", within, evidence.size(), worst);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fit_pick_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
