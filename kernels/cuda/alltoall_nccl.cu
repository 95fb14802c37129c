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
#include "kernels/common/scoped_env.hpp"
#include "kernels/cuda/alltoall_exchange.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/nccl.hpp"

namespace aispflow::kernels::cuda {
namespace {

using json = nlohmann::json;

// NCCL reads its NCCL_* settings from the environment once per process (each parameter is cached on its first
// read, most of them during the first communicator init, the transport ones when the first connections are made,
// which the first exchange does): a second node asking for other values would silently run with the first one's.
// Remember what the first exchange used and refuse a different request.
std::mutex env_mutex;
std::map<std::string, std::string>* first_env = nullptr;

void check_env(const std::map<std::string, std::string>& env) {
  std::lock_guard lock(env_mutex);
  if (first_env) {
    if (*first_env != env)
      throw std::runtime_error("nccl_env differs from the NCCL settings this process already initialised NCCL "
                               "with (NCCL reads them once per process): run this variant in its own aispflow run");
    return;
  }
  first_env = new std::map<std::string, std::string>(env);
}

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
  check_env(env);
  // Set for this exchange only (init, connections, every point) and restored when it returns, so the settings
  // never leak into later nodes (a command node's shell, say) whose cache keys do not hold them. The node is
  // exclusive: nothing else runs, reads the environment or forks meanwhile.
  kernels::ScopedEnvironment scoped_env(env);

  int available = 0;
  AISPFLOW_CUDA_CHECK(cudaGetDeviceCount(&available));
  const int asked = plan.value("ranks", 0);
  if (asked > available)
    throw std::runtime_error("ranks: " + std::to_string(asked) + " GPUs asked, " + std::to_string(available) + " present");
  const int n = asked > 0 ? asked : available;
  const int warmup = plan.value("warmup", 5), iterations = plan.value("iterations", 30);
  const int window = plan.value("window_exchanges", 20), windows = plan.value("windows", 3);

  std::vector<ncclComm_t> comms(n);
  std::vector<int> devices(n);
  for (int g = 0; g < n; ++g) devices[g] = g;
  nccl.check(api.comm_init_all(comms.data(), n, devices.data()), "ncclCommInitAll");
  std::vector<NcclAlltoall::LocalRank> locals;
  for (int g = 0; g < n; ++g) locals.push_back({g, g, comms[g]});
  // Sized for the largest point.
  std::size_t max_bytes = 0;
  for (const auto& p : plan.at("points"))
    max_bytes = std::max<std::size_t>(max_bytes, std::size_t(p.at("elements").get<std::int64_t>()) * n *
                                                     p.at("elem_bytes").get<int>());
  NcclAlltoall exchange(n, std::move(locals), max_bytes);   // owns the communicators from here
  exchange.set_local_copy(plan.value("local_copy", false));
  json points = json::array();
  for (const auto& point : plan.at("points")) {
    exchange.set_point(comm::traffic_matrix(point.at("elements").get<std::int64_t>(), n, point.at("skew").get<double>()),
                       point.at("elem_bytes").get<int>());
    json out = point;
    out["wrong"] = exchange.exchange_and_count_wrong();
    if (out["wrong"] == 0) {   // a mismatch is a failed point: never timed
      std::vector<double> times;
      for (int it = -warmup; it < iterations; ++it) {
        const double s = exchange.timed_exchange();
        if (it >= 0) times.push_back(s);
      }
      out["times_s"] = times;
      // nccl-tests' measure: exchanges back to back, one window timed (after the warm-up above).
      std::vector<double> window_s;
      for (int w = 0; w < windows; ++w) window_s.push_back(exchange.timed_window(window));
      out["window_s"] = window_s;
      out["window_exchanges"] = window;
    }
    points.push_back(out);
  }
  return {{"complete", true}, {"ranks", n}, {"nccl_version", nccl.version().value_or("")}, {"points", points}};
#endif
}

}  // namespace aispflow::kernels::cuda
