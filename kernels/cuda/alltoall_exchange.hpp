#pragma once
// One all-to-all exchange over NCCL, for the GPUs this process drives: every GPU of the process (the `alltoall`
// node's in-process nccl transport, kernels/cuda/alltoall_nccl.cu) or the one GPU of an MPI rank
// (aispflow-comm-nccl-rank, kernels/comm/nccl_rank_worker.cpp). Both share the traffic (the Zipf matrix of
// kernels/common/alltoall_traffic.hpp), the on-device data check and the event timing here; they differ only in
// how the communicators are made and how per-rank counts and times are combined (nothing to do in one process,
// MPI reductions across processes).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/common/alltoall_traffic.hpp"
#include "kernels/cuda/nccl.hpp"

namespace aispflow::kernels::cuda {

#if AISPFLOW_HAS_NCCL_HEADER

class NcclAlltoall {
 public:
  struct LocalRank {
    int rank = 0;              // in the communicator (0 .. world-1)
    int device = 0;            // CUDA device this process drives it on
    ncclComm_t comm = nullptr; // owned from here on: destroyed with the object
  };
  // `max_bytes`: the largest send (and receive) buffer a point needs on one rank.
  NcclAlltoall(int world, std::vector<LocalRank> locals, std::size_t max_bytes);
  ~NcclAlltoall();
  NcclAlltoall(const NcclAlltoall&) = delete;
  NcclAlltoall& operator=(const NcclAlltoall&) = delete;

  // The point to exchange next: `m[s][d]` elements of `width` bytes from rank s to rank d.
  void set_point(const comm::TrafficMatrix& m, int width);
  // Writes every local rank's send pattern (pattern_value(src, dst, i)), fills its receive buffer with the
  // complement of what must arrive (an exchange that does not happen can never pass), exchanges once and
  // counts the received elements that differ, over the local ranks.
  std::uint64_t exchange_and_count_wrong();
  // One timed exchange: CUDA events around it on every local GPU; the slowest local GPU's seconds.
  double timed_exchange();

 private:
  void exchange();
  void release();   // frees buffers, events, streams and destroys the communicators (idempotent)
  int world_;
  std::vector<LocalRank> locals_;
  struct Buffers {
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    unsigned char *send = nullptr, *recv = nullptr;
    unsigned long long* wrong = nullptr;
  };
  std::vector<Buffers> buffers_;
  comm::TrafficMatrix m_;
  int width_ = 1;
  bool corrupt_for_test_ = false;   // AISPFLOW_COMM_TEST_CORRUPT=1 (docs/nodes-comm.md, test hooks)
  std::vector<std::vector<std::int64_t>> send_offset_, recv_offset_;   // [rank][peer], elements
};

#endif

}  // namespace aispflow::kernels::cuda
