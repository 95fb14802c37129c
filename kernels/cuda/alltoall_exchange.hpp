#pragma once
// One all-to-all exchange over NCCL, for the GPUs this process drives: every GPU of the process (the `alltoall`
// node's in-process nccl transport, kernels/cuda/alltoall_nccl.cu) or the one GPU of an MPI rank
// (aispflow-comm-nccl-rank, kernels/comm/nccl_rank_worker.cpp). Both share the traffic (the Zipf matrix of
// kernels/common/alltoall_traffic.hpp), the on-device data check and the event timing here; they differ only in
// how the communicators are made and how per-rank counts and times are combined (nothing to do in one process,
// MPI reductions across processes). Several local ranks are each driven from their own thread
// (kernels/common/rank_threads.hpp), as nccl-tests -t does, so no rank's launch waits for another's.
//
// Two measures: timed_exchange() times one exchange (what a MoE layer waits for: its p50/p99 over many),
// timed_window(n) times n exchanges back to back in one window (nccl-tests' method: time per exchange = window / n,
// launch gaps hidden behind the work in flight). docs/nodes-comm.md says which to hold against what.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/alltoall_traffic.hpp"
#include "kernels/common/rank_threads.hpp"
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
  // The share a rank keeps (m[g][g]): false, through NCCL as a send/recv to itself; true, as a device-to-device
  // copy on a side stream beside the NCCL exchange (what MoE runtimes do), joined before the exchange ends.
  void set_local_copy(bool on) { local_copy_ = on; }
  // Writes every local rank's send pattern (pattern_value(src, dst, i)), fills its receive buffer with the
  // complement of what must arrive (an exchange that does not happen can never pass), exchanges once and
  // counts the received elements that differ, over the local ranks.
  std::uint64_t exchange_and_count_wrong();
  // One timed exchange: the local ranks lined up, then CUDA events around it on every local GPU; the slowest
  // local GPU's seconds.
  double timed_exchange();
  // `exchanges` exchanges back to back between one pair of events per local GPU (lined up first); the slowest
  // local GPU's seconds for the whole window.
  double timed_window(int exchanges);

 private:
  void exchange(std::size_t l);   // local rank l's part of one exchange, on its stream
  double timed(int exchanges);
  void release();   // frees buffers, events, streams and destroys the communicators (idempotent)
  int world_;
  std::vector<LocalRank> locals_;
  struct Buffers {
    cudaStream_t stream = nullptr, side = nullptr;   // side: the local share's copy (set_local_copy)
    cudaEvent_t start = nullptr, stop = nullptr, fork = nullptr, join = nullptr;
    unsigned char *send = nullptr, *recv = nullptr;
    unsigned long long* wrong = nullptr;
  };
  std::vector<Buffers> buffers_;
  comm::TrafficMatrix m_;
  int width_ = 1;
  bool local_copy_ = false;
  std::unique_ptr<RankThreads> threads_;
  bool corrupt_for_test_ = false;   // AISPFLOW_COMM_TEST_CORRUPT=1 (docs/nodes-comm.md, test hooks)
  std::vector<std::vector<std::int64_t>> send_offset_, recv_offset_;   // [rank][peer], elements
};

#endif

}  // namespace aispflow::kernels::cuda
