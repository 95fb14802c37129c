#include "kernels/cuda/nccl.hpp"

#include <stdexcept>

#include "kernels/cuda/shared_library.hpp"

namespace aispflow::kernels::cuda {

std::string nccl_version_string(int code) {
  if (code <= 0) return "unknown";
  const int scale = code >= 10000 ? 10000 : 1000;  // the encoding widened in NCCL 2.9
  return std::to_string(code / scale) + "." + std::to_string((code % scale) / 100) + "." + std::to_string(code % 100);
}

const Nccl& Nccl::instance() {
  static const Nccl nccl;  // thread-safe initialisation of function-local statics
  return nccl;
}

std::string Nccl::header_version() {
#if AISPFLOW_HAS_NCCL_HEADER
  return nccl_version_string(NCCL_VERSION_CODE);
#else
  return {};
#endif
}

std::optional<std::string> Nccl::version() const {
  if (!available_) return std::nullopt;
  return nccl_version_string(version_code_);
}

#if AISPFLOW_HAS_NCCL_HEADER

Nccl::Nccl() {
  library_ = open_shared_library("libnccl.so.2", "NCCL", why_);
  if (!library_) return;
  load_symbol(library_, "ncclGetVersion", api_.get_version);
  load_symbol(library_, "ncclGetErrorString", api_.error_string);
  load_symbol(library_, "ncclCommInitAll", api_.comm_init_all);
  load_symbol(library_, "ncclGetUniqueId", api_.get_unique_id);
  load_symbol(library_, "ncclCommInitRank", api_.comm_init_rank);
  load_symbol(library_, "ncclCommDestroy", api_.comm_destroy);
  load_symbol(library_, "ncclGroupStart", api_.group_start);
  load_symbol(library_, "ncclGroupEnd", api_.group_end);
  load_symbol(library_, "ncclAllReduce", api_.all_reduce);
  load_symbol(library_, "ncclSend", api_.send);
  load_symbol(library_, "ncclRecv", api_.recv);
  const void* entries[] = {reinterpret_cast<const void*>(api_.get_version), reinterpret_cast<const void*>(api_.error_string),
                           reinterpret_cast<const void*>(api_.comm_init_all), reinterpret_cast<const void*>(api_.comm_destroy),
                           reinterpret_cast<const void*>(api_.group_start), reinterpret_cast<const void*>(api_.group_end),
                           reinterpret_cast<const void*>(api_.all_reduce), reinterpret_cast<const void*>(api_.send),
                           reinterpret_cast<const void*>(api_.recv), reinterpret_cast<const void*>(api_.get_unique_id),
                           reinterpret_cast<const void*>(api_.comm_init_rank)};
  for (const void* entry : entries) {
    if (!entry) {
      why_ = "libnccl.so.2 lacks an entry point aispflow needs (NCCL older than 2.7?)";
      return;
    }
  }
  if (api_.get_version(&version_code_) != ncclSuccess) {
    why_ = "ncclGetVersion failed";
    return;
  }
  available_ = true;
}

void Nccl::check(ncclResult_t result, const char* what) const {
  if (result == ncclSuccess) return;
  throw std::runtime_error(std::string(what) + " failed: " +
                           (api_.error_string ? api_.error_string(result) : "NCCL error " + std::to_string(result)));
}

#else

Nccl::Nccl() { why_ = "this build of aispflow found no nccl.h (install NCCL's headers and rebuild)"; }

#endif

Nccl::~Nccl() {
  // Left loaded on purpose: NCCL keeps helper threads and CUDA state whose teardown after main() returns
  // is not ordered against the CUDA runtime's own.
}

}  // namespace aispflow::kernels::cuda
