#include "kernels/cuda/alltoall_nccl.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/alltoall_traffic.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/nccl.hpp"

namespace aispflow::kernels::cuda {
namespace {

using json = nlohmann::json;

__device__ std::uint32_t load_elem(const unsigned char* p, std::int64_t i, int width) {
  std::uint32_t v = 0;
  for (int b = 0; b < width; ++b) v |= std::uint32_t(p[i * width + b]) << (8 * b);
  return v;
}
__device__ void store_elem(unsigned char* p, std::int64_t i, int width, std::uint32_t v) {
  for (int b = 0; b < width; ++b) p[i * width + b] = (unsigned char)(v >> (8 * b));
}

// Writes pattern_value(src, dst, i) (or its complement: the receive buffer before the check, so an
// exchange that does not happen can never pass) into `count` elements.
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

// NCCL reads most NCCL_* settings once per process: a second node asking for other values would silently
// run with the first one's. Remember what the first init used and refuse a different request.
std::mutex env_mutex;
std::map<std::string, std::string>* first_env = nullptr;

void apply_env(const std::map<std::string, std::string>& env) {
  std::lock_guard lock(env_mutex);
  if (first_env) {
    if (*first_env != env)
      throw std::runtime_error("nccl_env differs from the NCCL settings this process already initialised NCCL "
                               "with (NCCL reads them once per process): run this variant in its own aispflow run");
    return;
  }
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  first_env = new std::map<std::string, std::string>(env);
}

struct Gpu {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  unsigned char *send = nullptr, *recv = nullptr;
  unsigned long long* wrong = nullptr;
};

}  // namespace

json run_alltoall_nccl(const json& plan) {
  const Nccl& nccl = Nccl::instance();
  if (!nccl.available()) throw std::runtime_error("NCCL unavailable: " + nccl.why_unavailable());
#if !AISPFLOW_HAS_NCCL_HEADER
  throw std::runtime_error("built without nccl.h");
#else
  const auto& api = nccl.api();
  std::map<std::string, std::string> env = plan.value("nccl_env", std::map<std::string, std::string>{});
  env["NCCL_NVLS_ENABLE"] = "0";
  apply_env(env);

  int available = 0;
  AISPFLOW_CUDA_CHECK(cudaGetDeviceCount(&available));
  const int asked = plan.value("ranks", 0);
  if (asked > available)
    throw std::runtime_error("ranks: " + std::to_string(asked) + " GPUs asked, " + std::to_string(available) + " present");
  const int n = asked > 0 ? asked : available;
  const int warmup = plan.value("warmup", 5), iterations = plan.value("iterations", 30);

  std::vector<Gpu> gpus(n);
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devices(n);
  for (int g = 0; g < n; ++g) devices[g] = gpus[g].device = g;
  nccl.check(api.comm_init_all(comms.data(), n, devices.data()), "ncclCommInitAll");
  for (int g = 0; g < n; ++g) gpus[g].comm = comms[g];   // owned by gpus from here: release() destroys them
  // Sized for the largest point; freed whatever happens.
  std::size_t max_bytes = 0;
  for (const auto& p : plan.at("points"))
    max_bytes = std::max<std::size_t>(max_bytes, std::size_t(p.at("elements").get<std::int64_t>()) * n *
                                                     p.at("elem_bytes").get<int>());
  auto release = [&] {
    for (auto& g : gpus) {
      cudaSetDevice(g.device);
      if (g.send) cudaFree(g.send);
      if (g.recv) cudaFree(g.recv);
      if (g.wrong) cudaFree(g.wrong);
      if (g.start) cudaEventDestroy(g.start);
      if (g.stop) cudaEventDestroy(g.stop);
      if (g.stream) cudaStreamDestroy(g.stream);
      if (g.comm) api.comm_destroy(g.comm);
    }
  };
  json points = json::array();
  try {
    for (int g = 0; g < n; ++g) {
      Gpu& x = gpus[g];
      AISPFLOW_CUDA_CHECK(cudaSetDevice(x.device));
      AISPFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
      AISPFLOW_CUDA_CHECK(cudaEventCreate(&x.start));
      AISPFLOW_CUDA_CHECK(cudaEventCreate(&x.stop));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&x.send, std::max<std::size_t>(max_bytes, 1)));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&x.recv, std::max<std::size_t>(max_bytes, 1)));
      AISPFLOW_CUDA_CHECK(cudaMalloc(&x.wrong, sizeof(unsigned long long)));
    }
    for (const auto& point : plan.at("points")) {
      const std::int64_t elements = point.at("elements").get<std::int64_t>();
      const int width = point.at("elem_bytes").get<int>();
      const comm::TrafficMatrix m = comm::traffic_matrix(elements, n, point.at("skew").get<double>());
      // Offsets (elements) of each destination's segment in a sender's buffer and each source's in a receiver's.
      std::vector<std::vector<std::int64_t>> soff(n, std::vector<std::int64_t>(n)), roff = soff;
      for (int s = 0; s < n; ++s)
        for (int d = 0, o = 0; d < n; o += int(m[s][d]), ++d) soff[s][d] = o;
      for (int d = 0; d < n; ++d)
        for (int s = 0, o = 0; s < n; o += int(m[s][d]), ++s) roff[d][s] = o;
      auto exchange = [&] {
        nccl.check(api.group_start(), "ncclGroupStart");
        for (int g = 0; g < n; ++g)
          for (int p = 0; p < n; ++p) {
            if (m[g][p] > 0)
              nccl.check(api.send(gpus[g].send + soff[g][p] * width, std::size_t(m[g][p]) * width, ncclUint8, p,
                                  gpus[g].comm, gpus[g].stream), "ncclSend");
            if (m[p][g] > 0)
              nccl.check(api.recv(gpus[g].recv + roff[g][p] * width, std::size_t(m[p][g]) * width, ncclUint8, p,
                                  gpus[g].comm, gpus[g].stream), "ncclRecv");
          }
        nccl.check(api.group_end(), "ncclGroupEnd");
      };
      // Write the pattern, receive once into complemented buffers, verify every element on the device.
      for (int g = 0; g < n; ++g) {
        AISPFLOW_CUDA_CHECK(cudaSetDevice(g));
        for (int d = 0; d < n; ++d)
          fill_pattern<<<grid_for(m[g][d]), 256, 0, gpus[g].stream>>>(gpus[g].send + soff[g][d] * width, m[g][d],
                                                                      width, g, d, false);
        for (int s = 0; s < n; ++s)
          fill_pattern<<<grid_for(m[s][g]), 256, 0, gpus[g].stream>>>(gpus[g].recv + roff[g][s] * width, m[s][g],
                                                                      width, s, g, true);
        AISPFLOW_CUDA_CHECK_LAUNCH();
        AISPFLOW_CUDA_CHECK(cudaMemsetAsync(gpus[g].wrong, 0, sizeof(unsigned long long), gpus[g].stream));
      }
      exchange();
      unsigned long long wrong = 0;
      for (int g = 0; g < n; ++g) {
        AISPFLOW_CUDA_CHECK(cudaSetDevice(g));
        for (int s = 0; s < n; ++s)
          count_wrong<<<grid_for(m[s][g]), 256, 0, gpus[g].stream>>>(gpus[g].recv + roff[g][s] * width, m[s][g],
                                                                     width, s, g, gpus[g].wrong);
        AISPFLOW_CUDA_CHECK_LAUNCH();
        unsigned long long w = 0;
        AISPFLOW_CUDA_CHECK(cudaMemcpyAsync(&w, gpus[g].wrong, sizeof w, cudaMemcpyDeviceToHost, gpus[g].stream));
        AISPFLOW_CUDA_CHECK(cudaStreamSynchronize(gpus[g].stream));
        wrong += w;
      }
      json out = point;
      out["wrong"] = wrong;
      if (wrong == 0) {   // a mismatch is a failed point: never timed
        std::vector<double> times;
        for (int it = -warmup; it < iterations; ++it) {
          for (int g = 0; g < n; ++g) {
            AISPFLOW_CUDA_CHECK(cudaSetDevice(g));
            AISPFLOW_CUDA_CHECK(cudaEventRecord(gpus[g].start, gpus[g].stream));
          }
          exchange();
          double slowest = 0;
          for (int g = 0; g < n; ++g) {
            AISPFLOW_CUDA_CHECK(cudaSetDevice(g));
            AISPFLOW_CUDA_CHECK(cudaEventRecord(gpus[g].stop, gpus[g].stream));
          }
          for (int g = 0; g < n; ++g) {
            AISPFLOW_CUDA_CHECK(cudaEventSynchronize(gpus[g].stop));
            float ms = 0;
            AISPFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, gpus[g].start, gpus[g].stop));
            slowest = std::max(slowest, double(ms) * 1e-3);
          }
          if (it >= 0) times.push_back(slowest);
        }
        out["times_s"] = times;
      }
      points.push_back(out);
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  return {{"complete", true}, {"ranks", n}, {"nccl_version", nccl.version().value_or("")}, {"points", points}};
#endif
}

}  // namespace aispflow::kernels::cuda
