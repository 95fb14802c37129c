#include "kernels/cuda/alltoall_exchange.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cuda/check.hpp"

namespace aispflow::kernels::cuda {

#if AISPFLOW_HAS_NCCL_HEADER

namespace {

__device__ std::uint32_t load_elem(const unsigned char* p, std::int64_t i, int width) {
  std::uint32_t v = 0;
  for (int b = 0; b < width; ++b) v |= std::uint32_t(p[i * width + b]) << (8 * b);
  return v;
}
__device__ void store_elem(unsigned char* p, std::int64_t i, int width, std::uint32_t v) {
  for (int b = 0; b < width; ++b) p[i * width + b] = (unsigned char)(v >> (8 * b));
}

// Writes pattern_value(src, dst, i) (or its complement) into `count` elements.
__global__ void fill_pattern(unsigned char* p, std::int64_t count, int width, int src, int dst, bool complement) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t v = comm::pattern_value(src, dst, i);
    store_elem(p, i, width, complement ? ~v : v);
  }
}

__global__ void count_wrong(const unsigned char* p, std::int64_t count, int width, int src, int dst,
                            unsigned long long* wrong) {
  const std::uint32_t mask = width >= 4 ? 0xffffffffu : ((1u << (8 * width)) - 1);
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (load_elem(p, i, width) != (comm::pattern_value(src, dst, i) & mask)) ++local;
  if (local) atomicAdd(wrong, local);
}

int grid_for(std::int64_t count) { return int(std::clamp<std::int64_t>((count + 255) / 256, 1, 1024)); }

}  // namespace

NcclAlltoall::NcclAlltoall(int world, std::vector<LocalRank> locals, std::size_t max_bytes)
    : world_(world), locals_(std::move(locals)), buffers_(locals_.size()) {
  const char* corrupt = std::getenv("AISPFLOW_COMM_TEST_CORRUPT");
  corrupt_for_test_ = corrupt && *corrupt && std::string(corrupt) != "0";
  try {
    for (std::size_t l = 0; l < locals_.size(); ++l) {
      Buffers& b = buffers_[l];
      AISPFLOW_CUDA_CHECK(cudaSetDevice(locals_[l].device));
      AISPFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
      AISPFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&b.side, cudaStreamNonBlocking));
      AISPFLOW_CUDA_CHECK(cudaEventCreate(&b.start));
      AISPFLOW_CUDA_CHECK(cudaEventCreate(&b.stop));
      AISPFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&b.fork, cudaEventDisableTiming));
      AISPFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&b.join, cudaEventDisableTiming));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&b.send, std::max<std::size_t>(max_bytes, 1)));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&b.recv, std::max<std::size_t>(max_bytes, 1)));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&b.wrong, sizeof(unsigned long long)));
    }
    threads_ = std::make_unique<RankThreads>(int(locals_.size()));
  } catch (...) {
    release();   // what was made so far; the members' own destructors run after this
    throw;
  }
}

NcclAlltoall::~NcclAlltoall() { release(); }

void NcclAlltoall::release() {
  threads_.reset();
  const auto& api = Nccl::instance().api();
  for (std::size_t l = 0; l < locals_.size(); ++l) {
    Buffers& b = buffers_[l];
    cudaSetDevice(locals_[l].device);
    if (b.send) cudaFree(b.send);
    if (b.recv) cudaFree(b.recv);
    if (b.wrong) cudaFree(b.wrong);
    if (b.start) cudaEventDestroy(b.start);
    if (b.stop) cudaEventDestroy(b.stop);
    if (b.fork) cudaEventDestroy(b.fork);
    if (b.join) cudaEventDestroy(b.join);
    if (b.stream) cudaStreamDestroy(b.stream);
    if (b.side) cudaStreamDestroy(b.side);
    if (locals_[l].comm) api.comm_destroy(locals_[l].comm);
    b = Buffers{};
    locals_[l].comm = nullptr;
  }
}

void NcclAlltoall::set_point(const comm::TrafficMatrix& m, int width) {
  m_ = m;
  width_ = width;
  send_offset_.assign(std::size_t(world_), std::vector<std::int64_t>(std::size_t(world_)));
  recv_offset_ = send_offset_;
  for (int s = 0; s < world_; ++s)
    for (std::int64_t d = 0, o = 0; d < world_; o += m[s][d], ++d) send_offset_[s][d] = o;
  for (int d = 0; d < world_; ++d)
    for (std::int64_t s = 0, o = 0; s < world_; o += m[s][d], ++s) recv_offset_[d][s] = o;
}

void NcclAlltoall::exchange(std::size_t l) {
  const Nccl& nccl = Nccl::instance();
  const auto& api = nccl.api();
  const int g = locals_[l].rank;
  Buffers& b = buffers_[l];
  const bool copy_local = local_copy_ && m_[g][g] > 0;
  if (copy_local) {   // the kept share beside the exchange: forked from the stream, joined back before it ends
    AISPFLOW_CUDA_CHECK(cudaEventRecord(b.fork, b.stream));
    AISPFLOW_CUDA_CHECK(cudaStreamWaitEvent(b.side, b.fork, 0));
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(b.recv + recv_offset_[g][g] * width_, b.send + send_offset_[g][g] * width_,
                                        std::size_t(m_[g][g]) * width_, cudaMemcpyDeviceToDevice, b.side));
    AISPFLOW_CUDA_CHECK(cudaEventRecord(b.join, b.side));
  }
  nccl.check(api.group_start(), "ncclGroupStart");
  for (int p = 0; p < world_; ++p) {
    if (p == g && copy_local) continue;
    if (m_[g][p] > 0)
      nccl.check(api.send(b.send + send_offset_[g][p] * width_, std::size_t(m_[g][p]) * width_, ncclUint8, p,
                          locals_[l].comm, b.stream), "ncclSend");
    if (m_[p][g] > 0)
      nccl.check(api.recv(b.recv + recv_offset_[g][p] * width_, std::size_t(m_[p][g]) * width_, ncclUint8, p,
                          locals_[l].comm, b.stream), "ncclRecv");
  }
  nccl.check(api.group_end(), "ncclGroupEnd");
  if (copy_local) AISPFLOW_CUDA_CHECK(cudaStreamWaitEvent(b.stream, b.join, 0));
}

std::uint64_t NcclAlltoall::exchange_and_count_wrong() {
  std::vector<unsigned long long> wrong(locals_.size());
  threads_->run([&](int li) {
    const std::size_t l = std::size_t(li);
    const int g = locals_[l].rank;
    Buffers& b = buffers_[l];
    AISPFLOW_CUDA_CHECK(cudaSetDevice(locals_[l].device));
    for (int d = 0; d < world_; ++d)
      fill_pattern<<<grid_for(m_[g][d]), 256, 0, b.stream>>>(b.send + send_offset_[g][d] * width_, m_[g][d], width_, g, d,
                                                              false);
    for (int s = 0; s < world_; ++s)
      fill_pattern<<<grid_for(m_[s][g]), 256, 0, b.stream>>>(b.recv + recv_offset_[g][s] * width_, m_[s][g], width_, s, g,
                                                              true);
    // Test hook (as aispflow-comm-rank's): rank 0 sends one wrong element to the last rank, so the check
    // below is seen to fail (tests/gpu/test_alltoall_nccl.cpp).
    if (g == 0 && corrupt_for_test_ && m_[0][world_ - 1] > 0)
      fill_pattern<<<1, 1, 0, b.stream>>>(b.send + send_offset_[0][world_ - 1] * width_, 1, width_, 0, world_ - 1, true);
    AISPFLOW_CUDA_CHECK_LAUNCH();
    AISPFLOW_CUDA_CHECK(cudaMemsetAsync(b.wrong, 0, sizeof(unsigned long long), b.stream));
    exchange(l);
    for (int s = 0; s < world_; ++s)
      count_wrong<<<grid_for(m_[s][g]), 256, 0, b.stream>>>(b.recv + recv_offset_[g][s] * width_, m_[s][g], width_, s, g,
                                                             b.wrong);
    AISPFLOW_CUDA_CHECK_LAUNCH();
    AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&wrong[l], b.wrong, sizeof wrong[l], cudaMemcpyDeviceToHost, b.stream));
    AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  });
  std::uint64_t total = 0;
  for (auto w : wrong) total += w;
  return total;
}

double NcclAlltoall::timed(int exchanges) {
  std::vector<double> seconds(locals_.size());
  threads_->run([&](int li) {
    const std::size_t l = std::size_t(li);
    Buffers& b = buffers_[l];
    AISPFLOW_CUDA_CHECK(cudaSetDevice(locals_[l].device));
    AISPFLOW_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
    for (int i = 0; i < exchanges; ++i) exchange(l);
    AISPFLOW_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
    AISPFLOW_CUDA_CHECK(cudaEventSynchronize(b.stop));
    float ms = 0;
    AISPFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, b.start, b.stop));
    seconds[l] = double(ms) * 1e-3;
  }, /*line_up=*/true);
  return *std::max_element(seconds.begin(), seconds.end());
}

double NcclAlltoall::timed_exchange() { return timed(1); }

double NcclAlltoall::timed_window(int exchanges) { return timed(std::max(1, exchanges)); }

#endif

}  // namespace aispflow::kernels::cuda
