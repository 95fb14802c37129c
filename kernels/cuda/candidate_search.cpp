#include "kernels/cuda/candidate_search.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace aispflow::kernels::cuda {

namespace {

// Poison C, run once, compare with the reference, on the first and last operand copy (other addresses,
// same data: what could differ is alignment-dependent behaviour).
void verify(SearchCandidate& cand, GemmProblem& problem, cudaStream_t stream) {
  try {
    for (int copy : {0, problem.copies() - 1}) {
      problem.poison_output(stream, copy);
      cand.launch(stream, copy);
      AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
      const Comparison cmp = problem.check_output(stream, copy);
      cand.max_rel_err = std::max(cand.max_rel_err, cmp.max_rel_err);
      cand.verified = cmp.non_finite == 0 && cmp.max_rel_err <= problem.tolerance();
      if (!cand.verified) {
        char tol[32];
        std::snprintf(tol, sizeof tol, "%.3g", problem.tolerance());
        cand.status = "failed";
        cand.reason = "verification failed" + (copy > 0 ? " on operand copy " + std::to_string(copy) : std::string()) +
                      ": " + cmp.describe(problem.shape().n) + ", tolerance " + tol;
        return;
      }
      if (problem.copies() == 1) break;
    }
  } catch (const CudaError& e) {
    cand.status = "failed";
    cand.verified = false;
    cand.reason = e.what();
  }
}

std::function<void(cudaStream_t)> rotating(const SearchCandidate& cand, int copies) {
  auto next = std::make_shared<int>(0);
  return [&cand, copies, next](cudaStream_t s) { cand.launch(s, (*next)++ % copies); };
}

TimingPolicy screening_policy(const TimingPolicy& full) {
  TimingPolicy p = full;
  p.min_samples = std::min(full.min_samples, 5);
  p.max_samples = std::min(full.max_samples, 30);
  p.budget_s = std::min(full.budget_s, 0.25);
  p.warmup = std::max(1, std::min(full.warmup, 2));
  return p;
}

}  // namespace

nlohmann::json SearchCandidate::to_json() const {
  nlohmann::json j = {{"kernel", kernel}, {"status", status}, {"verified", verified}, {"max_rel_err", max_rel_err}};
  for (const auto& [key, value] : identity.items()) j[key] = value;
  if (!reason.empty()) j["reason"] = reason;
  if (screen) j["screen_time_ms"] = screen->stats.to_json();
  if (full) j["time_ms"] = full->stats.to_json();
  return j;
}

int run_candidate_search(std::vector<SearchCandidate>& candidates, GemmProblem& problem, Harness& harness,
                         const TimingPolicy& timing, cudaStream_t stream, const SearchOptions& options) {
  for (auto& c : candidates)
    if (c.status == "ok") verify(c, problem, stream);

  std::vector<SearchCandidate*> finalists;
  if (!options.screen) {
    for (auto& c : candidates)
      if (c.verified) finalists.push_back(&c);
  } else {
    std::vector<SearchCandidate*> ranked;
    for (auto& c : candidates) {
      if (!c.verified) continue;
      try {
        c.screen = harness.time(screening_policy(timing), rotating(c, problem.copies()));
        ranked.push_back(&c);
      } catch (const CudaError& e) {
        c.status = "failed";
        c.reason = std::string("timing failed: ") + e.what();
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const SearchCandidate* a, const SearchCandidate* b) {
      return a->screen->stats.median_ms < b->screen->stats.median_ms;
    });
    for (std::size_t i = 0; i < ranked.size() && int(i) < options.finalists; ++i) finalists.push_back(ranked[i]);
    if (options.always_final >= 0 && std::size_t(options.always_final) < candidates.size()) {
      SearchCandidate* d = &candidates[std::size_t(options.always_final)];
      if (d->screen && std::find(finalists.begin(), finalists.end(), d) == finalists.end()) finalists.push_back(d);
    }
  }
  if (finalists.empty()) return -1;
  std::vector<std::function<void(cudaStream_t)>> launches;
  for (SearchCandidate* c : finalists) launches.push_back(rotating(*c, problem.copies()));
  try {
    if (finalists.size() == 1) {
      finalists[0]->full = harness.time(timing, launches[0]);
      finalists[0]->full->operand_copies = problem.copies();
    } else {
      auto measured = harness.time_interleaved(timing, launches);
      for (std::size_t i = 0; i < finalists.size(); ++i) {
        measured[i].operand_copies = problem.copies();
        finalists[i]->full = std::move(measured[i]);
      }
    }
  } catch (const CudaError& e) {
    for (SearchCandidate* c : finalists) {
      c->status = "failed";
      c->reason = std::string("timing failed: ") + e.what();
    }
    return -1;
  }
  int winner = -1;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    if (c.status == "ok" && c.full &&
        (winner < 0 || c.full->stats.median_ms < candidates[std::size_t(winner)].full->stats.median_ms))
      winner = int(i);
  }
  return winner;
}

void record_search(GemmRecord& rec, const std::vector<SearchCandidate>& candidates, int winner, bool list_all) {
  if (list_all) {
    nlohmann::json all = nlohmann::json::array();
    int verified = 0;
    for (const auto& c : candidates) {
      all.push_back(c.to_json());
      verified += c.verified ? 1 : 0;
    }
    rec.extra["candidates"] = all;
    rec.extra["search"] = {{"candidates", candidates.size()}, {"verified", verified}};
  }
  if (winner < 0) {
    rec.verified = false;
    rec.time.reset();
    // The first candidate that was tried says why; a list of only skipped ones makes the record skipped.
    const SearchCandidate* first = nullptr;
    for (const auto& c : candidates)
      if (c.status == "failed") { first = &c; break; }
    if (!first) {
      rec.status = "skipped";
      rec.reason = candidates.empty() ? "no candidate kernel for this case" : candidates.front().reason;
      if (candidates.size() > 1) rec.reason = "no candidate of " + std::to_string(candidates.size()) +
                                              " can run this case; first: " + rec.reason;
    } else {
      rec.status = "failed";
      rec.kernel = first->kernel;
      rec.max_rel_err = first->max_rel_err;
      rec.reason = first->reason;
    }
    return;
  }
  const SearchCandidate& w = candidates[std::size_t(winner)];
  rec.status = "ok";
  rec.kernel = w.kernel;
  rec.verified = true;
  rec.max_rel_err = w.max_rel_err;
  rec.time = w.full->stats;
  rec.extra["timing"] = w.full->timing_json();
  if (!w.full->warnings.empty()) rec.extra["warnings"] = w.full->warnings;
  if (list_all) rec.extra["search"]["winner"] = winner;
}

}  // namespace aispflow::kernels::cuda
