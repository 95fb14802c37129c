#pragma once
// `aispflow replay` (pipeline/cli/replay_command.cpp) runs this inside the CUDA plugin: it launches again, for a
// profiler, exactly the kernel launch a GEMM record timed. The case is rebuilt from the record (provider, shape,
// dtype, layout, epilogue, and the seed that made its operands, so the operands are the same values); the
// provider lists its candidates for the case (kernels/cuda/candidate_search.hpp: CandidateSource) and the one
// named by the record's `kernel` is taken, verified as the search verified it, warmed up, and launched once more
// between cudaProfilerStart and cudaProfilerStop: `ncu --profile-from-start off` sees that launch and nothing
// else (not the operand fill, the reference GEMM or the warm-up). The output of the profiled launch is checked too.
#include <nlohmann/json.hpp>

namespace aispflow::kernels::cuda {

// request: {"record": {...a record of docs/records.md with `seed`...}, "kernel"?: "<another candidate's kernel>",
//           "warmup"?: 3}
// Returns {"provider", "kernel", "shape", "dtype", "layout", "epilogue", "seed", "device", "candidates",
// "warmup", "verified", "max_rel_err", "tolerance", "profiled": {"verified", "max_rel_err"}}.
// Throws std::invalid_argument when the request cannot describe a replayable launch (no seed, a provider that
// lists no candidates, a kernel it does not offer for the case) and std::runtime_error when the GPU work fails
// or the output is wrong.
nlohmann::json replay_gemm(const nlohmann::json& request);

}  // namespace aispflow::kernels::cuda
