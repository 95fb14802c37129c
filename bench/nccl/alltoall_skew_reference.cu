// Reference for the `alltoall` node's nccl transport (issue 18): the same Zipf traffic matrix as the node
// (kernels/common/alltoall_traffic.cpp, computed before anything is timed), exchanged with raw grouped
// ncclSend/ncclRecv, one thread per GPU of this process (ncclCommInitAll, as nccl-tests -t), nothing of aispflow in
// the timed path. A gap between this and the node is ours; a gap between this and the link-bound ideal is NCCL's.
//
// Per point, the two measures of the node, by the same method:
//   - per exchange: the threads meet at a barrier, each records an event, enqueues one grouped exchange, records
//     another; the slowest GPU's time per exchange; p50/p99 over --iters exchanges;
//   - back to back: --window exchanges between one pair of events per GPU (nccl-tests' method), --windows windows,
//     the median window / --window per exchange.
// Before timing, one exchange is checked: every byte received equals what its sender wrote (a per-segment value).
// Prints one JSON document on stdout.
//
// Build (bench/run_multigpu_evidence.sh does it on the GPU host; NCCL_HOME holds include/nccl.h and lib/):
//   nvcc -O2 -std=c++20 -arch=sm_90 -I. -I$NCCL_HOME/include bench/nccl/alltoall_skew_reference.cu \
//        kernels/common/alltoall_traffic.cpp -L$NCCL_HOME/lib -l:libnccl.so.2 -o alltoall_skew_reference
// Usage:
//   alltoall_skew_reference --sizes 33554432,134217728 --skews 0,1.15 [--elem-bytes 2] [--iters 50] [--warmup 5]
//                           [--window 20] [--windows 3] [--local-copy 0|1] [--gpus n]
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/alltoall_traffic.hpp"

namespace {

#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define NCCL_OK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r_)); std::exit(1); } } while (0)

template <class T>
std::vector<T> list(const char* text) {
  std::vector<T> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) out.push_back(T(std::strtod(item.c_str(), nullptr)));
  return out;
}

struct Rank {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr, side = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr, fork = nullptr, join = nullptr;
  unsigned char *send = nullptr, *recv = nullptr;
};

struct Point {
  aispflow::comm::TrafficMatrix m;   // elements
  int width = 2;
  std::vector<std::vector<long long>> send_off, recv_off;   // [rank][peer], bytes
};

// Rank g's part of one exchange, on its stream: what the node's NcclAlltoall::exchange does, written out plainly.
void exchange(Rank& r, int g, int n, const Point& p, bool local_copy) {
  const bool copy = local_copy && p.m[g][g] > 0;
  if (copy) {
    CUDA_OK(cudaEventRecord(r.fork, r.stream));
    CUDA_OK(cudaStreamWaitEvent(r.side, r.fork, 0));
    CUDA_OK(cudaMemcpyAsync(r.recv + p.recv_off[g][g], r.send + p.send_off[g][g], size_t(p.m[g][g]) * p.width,
                            cudaMemcpyDeviceToDevice, r.side));
    CUDA_OK(cudaEventRecord(r.join, r.side));
  }
  NCCL_OK(ncclGroupStart());
  for (int q = 0; q < n; ++q) {
    if (q == g && copy) continue;
    if (p.m[g][q] > 0) NCCL_OK(ncclSend(r.send + p.send_off[g][q], size_t(p.m[g][q]) * p.width, ncclUint8, q, r.comm, r.stream));
    if (p.m[q][g] > 0) NCCL_OK(ncclRecv(r.recv + p.recv_off[g][q], size_t(p.m[q][g]) * p.width, ncclUint8, q, r.comm, r.stream));
  }
  NCCL_OK(ncclGroupEnd());
  if (copy) CUDA_OK(cudaStreamWaitEvent(r.stream, r.join, 0));
}

unsigned char segment_value(int src, int dst) { return (unsigned char)(src * 31 + dst * 7 + 1); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> sizes = {32768, 8 << 20, 128 << 20};
  std::vector<double> skews = {0, 1.0, 1.15, 1.35};
  int width = 2, iters = 50, warmup = 5, window = 20, windows = 3, gpus = 0;
  bool local_copy = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--sizes") sizes = list<long long>(argv[i + 1]);
    else if (k == "--skews") skews = list<double>(argv[i + 1]);
    else if (k == "--elem-bytes") width = std::atoi(argv[i + 1]);
    else if (k == "--iters") iters = std::atoi(argv[i + 1]);
    else if (k == "--warmup") warmup = std::atoi(argv[i + 1]);
    else if (k == "--window") window = std::atoi(argv[i + 1]);
    else if (k == "--windows") windows = std::atoi(argv[i + 1]);
    else if (k == "--local-copy") local_copy = std::atoi(argv[i + 1]) != 0;
    else if (k == "--gpus") gpus = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
  }
  int available = 0;
  CUDA_OK(cudaGetDeviceCount(&available));
  const int n = gpus > 0 ? std::min(gpus, available) : available;
  long long max_bytes = 0;
  for (long long s : sizes) max_bytes = std::max(max_bytes, s / width * width * n);   // the hot rank may receive n x
  std::vector<Rank> ranks(static_cast<size_t>(n));
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  std::vector<int> devices(static_cast<size_t>(n));
  for (int g = 0; g < n; ++g) devices[size_t(g)] = g;
  NCCL_OK(ncclCommInitAll(comms.data(), n, devices.data()));
  for (int g = 0; g < n; ++g) {
    Rank& r = ranks[size_t(g)];
    r.device = g;
    r.comm = comms[size_t(g)];
    CUDA_OK(cudaSetDevice(g));
    CUDA_OK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&r.side, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreate(&r.start));
    CUDA_OK(cudaEventCreate(&r.stop));
    CUDA_OK(cudaEventCreateWithFlags(&r.fork, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&r.join, cudaEventDisableTiming));
    CUDA_OK(cudaMalloc(&r.send, size_t(std::max(max_bytes, 1LL))));
    CUDA_OK(cudaMalloc(&r.recv, size_t(std::max(max_bytes, 1LL))));
  }
  int version = 0;
  ncclGetVersion(&version);
  std::printf("{\"program\": \"alltoall_skew_reference\", \"nccl_version_code\": %d, \"gpus\": %d, \"elem_bytes\": %d, "
              "\"iters\": %d, \"warmup\": %d, \"window_exchanges\": %d, \"windows\": %d, \"local_copy\": %s, \"points\": [",
              version, n, width, iters, warmup, window, windows, local_copy ? "true" : "false");
  bool first_point = true;
  std::barrier line_up(n);
  for (long long size : sizes)
    for (double skew : skews) {
      Point p;
      p.width = width;
      const long long elements = size / width;
      p.m = aispflow::comm::traffic_matrix(elements, n, skew);
      p.send_off.assign(size_t(n), std::vector<long long>(size_t(n)));
      p.recv_off = p.send_off;
      for (int s = 0; s < n; ++s)
        for (long long d = 0, o = 0; d < n; o += p.m[s][d] * width, ++d) p.send_off[s][d] = o;
      for (int d = 0; d < n; ++d)
        for (long long s = 0, o = 0; s < n; o += p.m[s][d] * width, ++s) p.recv_off[d][s] = o;
      std::vector<long long> wrong(static_cast<size_t>(n));
      std::vector<std::vector<double>> per_exchange(static_cast<size_t>(n)), per_window(static_cast<size_t>(n));
      std::vector<std::thread> threads;
      for (int g = 0; g < n; ++g)
        threads.emplace_back([&, g] {
          Rank& r = ranks[size_t(g)];
          CUDA_OK(cudaSetDevice(r.device));
          // The check: each segment filled with its (sender, receiver) value, the receive side with its complement.
          for (int d = 0; d < n; ++d)
            CUDA_OK(cudaMemsetAsync(r.send + p.send_off[g][d], segment_value(g, d), size_t(p.m[g][d]) * width, r.stream));
          for (int s = 0; s < n; ++s)
            CUDA_OK(cudaMemsetAsync(r.recv + p.recv_off[g][s], (unsigned char)~segment_value(s, g), size_t(p.m[s][g]) * width, r.stream));
          line_up.arrive_and_wait();
          exchange(r, g, n, p, local_copy);
          CUDA_OK(cudaStreamSynchronize(r.stream));
          for (int s = 0; s < n; ++s) {
            std::vector<unsigned char> got(size_t(p.m[s][g]) * width);
            if (got.empty()) continue;
            CUDA_OK(cudaMemcpy(got.data(), r.recv + p.recv_off[g][s], got.size(), cudaMemcpyDeviceToHost));
            wrong[size_t(g)] += std::count_if(got.begin(), got.end(), [&](unsigned char c) { return c != segment_value(s, g); });
          }
          for (int it = -warmup; it < iters; ++it) {
            line_up.arrive_and_wait();
            CUDA_OK(cudaEventRecord(r.start, r.stream));
            exchange(r, g, n, p, local_copy);
            CUDA_OK(cudaEventRecord(r.stop, r.stream));
            CUDA_OK(cudaEventSynchronize(r.stop));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, r.start, r.stop));
            if (it >= 0) per_exchange[size_t(g)].push_back(ms);
          }
          for (int w = 0; w < windows; ++w) {
            line_up.arrive_and_wait();
            CUDA_OK(cudaEventRecord(r.start, r.stream));
            for (int i = 0; i < window; ++i) exchange(r, g, n, p, local_copy);
            CUDA_OK(cudaEventRecord(r.stop, r.stream));
            CUDA_OK(cudaEventSynchronize(r.stop));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, r.start, r.stop));
            per_window[size_t(g)].push_back(ms / window);
          }
        });
      for (auto& t : threads) t.join();
      // The slowest GPU per exchange (per window), as the node counts.
      std::vector<double> slowest(static_cast<size_t>(iters), 0.0), slowest_window(static_cast<size_t>(windows), 0.0);
      long long wrong_all = 0;
      for (int g = 0; g < n; ++g) {
        wrong_all += wrong[size_t(g)];
        for (int i = 0; i < iters; ++i) slowest[size_t(i)] = std::max(slowest[size_t(i)], per_exchange[size_t(g)][size_t(i)]);
        for (int w = 0; w < windows; ++w) slowest_window[size_t(w)] = std::max(slowest_window[size_t(w)], per_window[size_t(g)][size_t(w)]);
      }
      // Percentiles as the node takes them (linear interpolation; not in the timed path).
      const double p50 = aispflow::comm::percentile(slowest, 0.5), p99 = aispflow::comm::percentile(slowest, 0.99);
      const double b2b = aispflow::comm::percentile(slowest_window, 0.5);
      const double bytes = double(elements) * width, factor = n > 1 ? double(n - 1) / n : 0.0;
      std::printf("%s\n  {\"size_bytes\": %lld, \"skew\": %g, \"wrong_bytes\": %lld, \"p50_ms\": %.6f, \"p99_ms\": %.6f, "
                  "\"busbw_gbps\": %.3f, \"b2b_time_ms\": %.6f, \"b2b_algbw_gbps\": %.3f, \"b2b_busbw_gbps\": %.3f}",
                  first_point ? "" : ",", (long long)bytes, skew, wrong_all, p50, p99, bytes / (p50 * 1e-3) / 1e9 * factor,
                  b2b, bytes / (b2b * 1e-3) / 1e9, bytes / (b2b * 1e-3) / 1e9 * factor);
      first_point = false;
      std::fflush(stdout);
    }
  std::printf("\n]}\n");
  for (auto& r : ranks) ncclCommDestroy(r.comm);
  return 0;
}
