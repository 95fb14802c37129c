#pragma once
// `aispflow replay --record FILE --index I [--kernel K] [--warmup N] [--out RESULT.json]`: a hidden subcommand
// the `ncu` node runs under Nsight Compute (nodes/ncu.cpp). It relaunches, once and warm, exactly the verified
// kernel launch that record I of FILE timed, between cudaProfilerStart/Stop (kernels/cuda/replay.hpp).
#include <string>

namespace aispflow::cli {

struct ReplayArgs {
  std::string record_file;   // a JSON array of records, or {"records": [...]}
  int index = -1;            // which record
  std::string kernel;        // another candidate's kernel (a record's `candidates`); empty: the record's own
  int warmup = 3;
  std::string out;           // the result JSON here; empty: on stdout
};

// 0: replayed and verified; 1: the GPU work failed or the output was wrong; 2: the request is at fault.
int replay_command(const ReplayArgs& args);

}  // namespace aispflow::cli
