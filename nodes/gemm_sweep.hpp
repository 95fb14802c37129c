#pragma once
// The loop behind the `gemm_sweep` node type, separate from the node so that tests can drive it with a
// fake backend and deliberately wrong providers.
#include <functional>
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"
#include "pipeline/artifact.hpp"

namespace aispflow {

struct SweepPlan {
  std::vector<std::string> providers;      // already expanded (no "auto"), each known to the backend
  std::vector<kernels::GemmShape> shapes;
  std::vector<std::string> dtypes;
  kernels::TimingPolicy timing;
  std::vector<std::string> layouts = {"nn"};      // the `layout` axis (kernels::GemmCase)
  std::vector<std::string> epilogues = {"none"};  // the `epilogue` axis
  json provider_options = json::object();         // provider -> options (GemmCase::options)
};

struct SweepHooks {
  std::function<bool()> cancelled;                  // polled before every run; true => NodeError("cancelled")
  std::function<void(const std::string&)> log;      // one progress line per run
};

// `auto` becomes backend.auto_providers(); duplicates are dropped (first occurrence kept). Throws
// std::invalid_argument naming the unknown provider and listing the backend's providers.
std::vector<std::string> expand_providers(const kernels::Backend& backend, const std::vector<std::string>& requested);

// Runs every provider x shape x dtype x layout x epilogue and returns the sweep artifact:
// {"records": [...], "env": fingerprint, "backend": name, "providers": [...], "dtypes": [...],
//  "timing": {...}, "summary": {"ok": n, "failed": n, "skipped": n}}.
// A provider whose requirements the backend reports unmet gives `skipped` records with the backend's exact
// reason; an unsupported (shape, dtype) gives a `skipped` record with the provider's reason. A record the
// provider calls ok without having verified it is turned into `failed`, and a record that is not ok never
// carries timing: nothing unverified is ever reported as a measurement.
json run_sweep(kernels::Backend& backend, const SweepPlan& plan, const SweepHooks& hooks = {});

// True for provider names that need a GPU (the CUDA backend's cublaslt, cublaslt.sweep, ..., plugin providers).
bool is_gpu_provider_name(const std::string& name);
// "auto" and every provider name built into aispflow (CPU and GPU): names a plugin may not take.
std::vector<std::string> builtin_provider_names();

}  // namespace aispflow
