// aispflow-comm-nccl-rank: one MPI rank of the `alltoall` node's nccl transport launched through mpirun
// (`transport: nccl, launch: mpirun`): one rank per GPU, on one machine or many. Rank 0 makes the NCCL unique
// id and broadcasts it over MPI, every rank joins the communicator with ncclCommInitRank on the GPU of its
// local rank (MPI_COMM_TYPE_SHARED), and every point is exchanged with grouped ncclSend/ncclRecv
// (kernels/cuda/alltoall_exchange.hpp: the same traffic, data check and event timing as the in-process
// transport). Wrong-element counts are summed over ranks (a mismatch fails the point, which is then never
// timed); per-iteration times are reduced with MAX (the slowest rank counts). Rank 0 writes the result JSON to
// a temporary name and renames it when every point is done, as aispflow-comm-rank does.
//
// Usage: aispflow-comm-nccl-rank <plan.json> <result.json>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/comm/rank_result.hpp"
#include "kernels/common/alltoall_traffic.hpp"
#include "kernels/cuda/alltoall_exchange.hpp"
#include "kernels/cuda/nccl.hpp"

namespace {

using json = nlohmann::json;
using namespace aispflow::kernels::cuda;

// Every rank says whether it can go on; if one cannot, rank 0 prints every reason and all leave with `code`.
bool all_ok(const std::string& why_not, int rank, int n) {
  int ok = why_not.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return true;
  char mine[512] = {};
  std::snprintf(mine, sizeof mine, "%s", why_not.c_str());
  std::vector<char> every(rank == 0 ? sizeof mine * std::size_t(n) : 1);
  MPI_Gather(mine, sizeof mine, MPI_CHAR, every.data(), sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < n; ++r)
      if (every[std::size_t(r) * sizeof mine]) std::fprintf(stderr, "rank %d: %s\n", r, &every[std::size_t(r) * sizeof mine]);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [rank, n] = aispflow::comm::start_rank_program(argc, argv, "aispflow-comm-nccl-rank");
  json plan;
  std::string why_not;
  try {
    std::ifstream in(argv[1]);
    plan = json::parse(in);
  } catch (const std::exception& e) {
    why_not = std::string("cannot read plan ") + argv[1] + ": " + e.what();
  }
  // The GPU of this rank: its index among the ranks of this machine.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0, gpus = 0;
  MPI_Comm_rank(node, &local);
  const cudaError_t counted = cudaGetDeviceCount(&gpus);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (why_not.empty() && (counted != cudaSuccess || gpus == 0))
    why_not = std::string("no CUDA device on ") + host + (counted != cudaSuccess ? std::string(": ") + cudaGetErrorString(counted) : "");
  else if (why_not.empty() && local >= gpus)
    why_not = std::string(host) + " has " + std::to_string(gpus) + " GPU(s) and more ranks than that: one rank per GPU "
              "(NCCL refuses two ranks on one GPU)";
  const Nccl& nccl = Nccl::instance();
  if (why_not.empty() && !nccl.available()) why_not = "NCCL unavailable: " + nccl.why_unavailable();
#if !AISPFLOW_HAS_NCCL_HEADER
  if (why_not.empty()) why_not = "built without nccl.h";
#endif
  if (!all_ok(why_not, rank, n)) {
    MPI_Finalize();
    return 4;
  }
#if AISPFLOW_HAS_NCCL_HEADER
  const auto& api = nccl.api();
  const int device = local;
  cudaSetDevice(device);
  ncclUniqueId id{};
  if (rank == 0) nccl.check(api.get_unique_id(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  try {
    nccl.check(api.comm_init_rank(&comm, n, id, rank), "ncclCommInitRank");
  } catch (const std::exception& e) {
    why_not = e.what();
  }
  if (!all_ok(why_not, rank, n)) {
    MPI_Finalize();
    return 4;
  }
  const int warmup = plan.value("warmup", 5), iterations = plan.value("iterations", 30);
  const int window = plan.value("window_exchanges", 20), windows = plan.value("windows", 3);
  std::size_t max_bytes = 0;
  for (const auto& p : plan.at("points"))
    max_bytes = std::max<std::size_t>(max_bytes, std::size_t(p.at("elements").get<std::int64_t>()) * n *
                                                     p.at("elem_bytes").get<int>());
  json results = json::array();
  {
    NcclAlltoall exchange(n, {{rank, device, comm}}, max_bytes);
    exchange.set_local_copy(plan.value("local_copy", false));
    for (const auto& point : plan.at("points")) {
      exchange.set_point(aispflow::comm::traffic_matrix(point.at("elements").get<std::int64_t>(), n,
                                                        point.at("skew").get<double>()),
                         point.at("elem_bytes").get<int>());
      unsigned long long wrong = exchange.exchange_and_count_wrong(), wrong_all = 0;
      MPI_Allreduce(&wrong, &wrong_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      json out = point;
      out["wrong"] = wrong_all;
      if (wrong_all == 0) {   // a mismatch is a failed point: never timed
        std::vector<double> times(static_cast<std::size_t>(iterations)), slowest(times.size());
        for (int it = -warmup; it < iterations; ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          const double s = exchange.timed_exchange();
          if (it >= 0) times[std::size_t(it)] = s;
        }
        MPI_Reduce(times.data(), slowest.data(), iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        out["times_s"] = slowest;
        // nccl-tests' measure: `window` exchanges back to back per timed window, the slowest rank per window.
        std::vector<double> window_s(static_cast<std::size_t>(windows)), window_slowest(window_s.size());
        for (int w = 0; w < windows; ++w) {
          MPI_Barrier(MPI_COMM_WORLD);
          window_s[std::size_t(w)] = exchange.timed_window(window);
        }
        MPI_Reduce(window_s.data(), window_slowest.data(), windows, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        out["window_s"] = window_slowest;
        out["window_exchanges"] = window;
      }
      results.push_back(out);
    }
  }
  // Where each rank ran: host and GPU.
  char mine[320] = {};
  std::snprintf(mine, sizeof mine, "%s:%d", host, device);
  std::vector<char> placement(rank == 0 ? sizeof mine * std::size_t(n) : 1);
  MPI_Gather(mine, sizeof mine, MPI_CHAR, placement.data(), sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    json ranks = json::array();
    for (int r = 0; r < n; ++r) ranks.push_back(std::string(&placement[std::size_t(r) * sizeof mine]));
    aispflow::comm::write_result_atomically(
        argv[2], {{"complete", true}, {"ranks", n}, {"mpi_library", aispflow::comm::mpi_library_version()},
                  {"nccl_version", nccl.version().value_or("")}, {"placement", ranks}, {"points", results}});
  }
#endif
  MPI_Finalize();
  return 0;
}
