#pragma once
// The provider behind ours.naive, ours.tiled, ours.wgmma and ours.cluster: one family of OurKernel
// configurations, a rule that picks one per case, and the shared candidate search (kernels/cuda/candidate_search)
// that verifies before it times. Options (gemm_sweep's provider_options):
//   config: "<name>"   run this configuration (names: docs/kernels.md, or the error message lists them)
//   autotune: true     every configuration that can run the case goes through the search (families that allow it)
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/backend.hpp"
#include "kernels/cuda/candidate_search.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/ours/our_kernel.hpp"

namespace aispflow::kernels::cuda {

using KernelList = std::vector<std::unique_ptr<OurKernel>>;
// Index of the configuration a family runs for a case when neither `config` nor `autotune` says otherwise.
using ConfigPicker = std::function<std::size_t(const KernelList&, const GemmCase&)>;

class OursProvider final : public GemmProvider, public CandidateSource {
 public:
  OursProvider(std::string name, std::function<GpuContext&()> context, KernelList kernels, ConfigPicker pick,
               bool can_autotune);
  std::string name() const override { return name_; }
  Requirements requirements() const override;
  std::string check_options(const json& options) const override;
  std::optional<std::string> unsupported(const GemmCase& c) const override;
  std::vector<GemmRecord> run(const GemmCase& c, const TimingPolicy& timing) override;
  // Every configuration that can run `c`, whatever `config` or `autotune` chose when the record was made.
  std::vector<SearchCandidate> candidates_for(const GemmCase& c, const GemmProblem& problem) override;

 private:
  // The configurations a case runs: the named one, every capable one (autotune), or the picked one.
  std::vector<const OurKernel*> chosen(const GemmCase& c) const;

  std::string name_;
  std::function<GpuContext&()> context_;
  KernelList kernels_;
  ConfigPicker pick_;
  bool can_autotune_;
};

// ours.naive | ours.tiled | ours.wgmma | ours.cluster | cublaslt.unfused; nullptr for another name.
std::unique_ptr<GemmProvider> make_ours_provider(const std::string& name, std::function<GpuContext&()> context);

}  // namespace aispflow::kernels::cuda
