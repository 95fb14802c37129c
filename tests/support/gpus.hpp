#pragma once
// How many GPUs the tests that run `aispflow` as a process will find: nvidia-smi's count (0 where there is no
// driver), read without linking CUDA, so the same test binary runs on a CPU-only CI machine and skips there.
#include <cstdio>

namespace aispflow::test {

inline int nvidia_smi_gpu_count() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null | grep -c '^GPU'", "r");
  if (!p) return 0;
  int n = 0;
  if (std::fscanf(p, "%d", &n) != 1) n = 0;
  pclose(p);
  return n;
}

}  // namespace aispflow::test
