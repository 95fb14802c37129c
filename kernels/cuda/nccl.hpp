#pragma once
// NCCL, loaded at run time with dlopen("libnccl.so.2"), typed against the toolkit's nccl.h.
//
// Why not link it: NCCL ships apart from the CUDA runtime on most machines (a separate package, a 200 MB
// library). Linking it into libaispflow_cuda.so would make the whole CUDA backend unloadable on a
// single-GPU box without NCCL, for the sake of the collective probes alone. Loaded on demand, a missing
// NCCL only makes those probes skip with the reason, while `aispflow hw` reports which NCCL a run would
// use. The function types come from nccl.h (found at configure time), so a signature change in a new
// toolkit is a compile error here, not a crash on the GPU host.
#include <optional>
#include <string>

#if AISPFLOW_HAS_NCCL_HEADER
#include <nccl.h>
#endif

namespace aispflow::kernels::cuda {

// "2.28.9" from an NCCL_VERSION_CODE (2.9 and later: major*10000 + minor*100 + patch; before: *1000).
std::string nccl_version_string(int code);

class Nccl {
 public:
  // The process-wide instance; loads the library on first use (thread-safe).
  static const Nccl& instance();

  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }
  // Of the loaded library (ncclGetVersion), e.g. "2.28.9"; nullopt when unavailable.
  std::optional<std::string> version() const;
  // The nccl.h this build was compiled against, or empty when it had none.
  static std::string header_version();

#if AISPFLOW_HAS_NCCL_HEADER
  // The entry points the collective probes use; all non-null when available().
  struct Api {
    decltype(&::ncclGetVersion) get_version = nullptr;
    decltype(&::ncclGetErrorString) error_string = nullptr;
    decltype(&::ncclCommInitAll) comm_init_all = nullptr;
    decltype(&::ncclGetUniqueId) get_unique_id = nullptr;   // one rank per process (the MPI launch)
    decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
    decltype(&::ncclCommDestroy) comm_destroy = nullptr;
    decltype(&::ncclGroupStart) group_start = nullptr;
    decltype(&::ncclGroupEnd) group_end = nullptr;
    decltype(&::ncclAllReduce) all_reduce = nullptr;
    decltype(&::ncclSend) send = nullptr;
    decltype(&::ncclRecv) recv = nullptr;
  };
  const Api& api() const { return api_; }
  // Throws std::runtime_error naming `what` and NCCL's message when `result` is not ncclSuccess.
  void check(ncclResult_t result, const char* what) const;
#endif

  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;
  ~Nccl();

 private:
  Nccl();
#if AISPFLOW_HAS_NCCL_HEADER
  Api api_;
#endif
  void* library_ = nullptr;
  bool available_ = false;
  int version_code_ = 0;
  std::string why_;
};

}  // namespace aispflow::kernels::cuda
