// aispflow-comm-rank: one MPI rank of the `alltoall` node's mpi transport, launched by the node through
// mpirun. It reads a JSON plan (points: size/dtype/skew), and for every point: builds the Zipf traffic
// (kernels/common/alltoall_traffic.hpp), exchanges once and verifies every received element (a mismatch
// fails the point, which is then never timed), then times warm-up + iterations of MPI_Alltoallv with
// MPI_Wtime between barriers, and `windows` windows of `window_exchanges` exchanges back to back. Per-iteration times are reduced with MAX over ranks (the slowest rank
// counts). Rank 0 writes the result JSON to a temporary name and renames it only when every point is
// done, so a partial run never leaves a complete-looking result.
//
// Usage: aispflow-comm-rank <plan.json> <result.json>
// Test hooks (environment, used by the integration tests):
//   AISPFLOW_COMM_TEST_CORRUPT=1     rank 0 corrupts one element it sends to the last rank
//   AISPFLOW_COMM_TEST_DIE_RANK=r    rank r exits with status 7 after the first point
//   AISPFLOW_COMM_TEST_HANG_RANK=r   rank r sleeps forever after the first point
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/comm/rank_result.hpp"
#include "kernels/common/alltoall_traffic.hpp"

namespace {

using json = nlohmann::json;
using namespace aispflow::comm;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

MPI_Datatype mpi_type(int bytes) {
  switch (bytes) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    default: return MPI_UINT32_T;
  }
}

// Element `i` of a buffer of `width`-byte elements, as an unsigned value.
std::uint32_t load(const std::vector<unsigned char>& buf, std::int64_t i, int width) {
  std::uint32_t v = 0;
  std::memcpy(&v, buf.data() + i * width, width);
  return v;
}
void store(std::vector<unsigned char>& buf, std::int64_t i, int width, std::uint32_t v) {
  std::memcpy(buf.data() + i * width, &v, width);   // little-endian: the low bytes
}
std::uint32_t truncated(std::uint32_t v, int width) { return width >= 4 ? v : v & ((1u << (8 * width)) - 1); }

json run_point(const json& point, int rank, int n, int warmup, int iterations, int window, int windows) {
  const std::int64_t elements = point.at("elements").get<std::int64_t>();
  const int width = point.at("elem_bytes").get<int>();
  const double skew = point.at("skew").get<double>();
  const TrafficMatrix m = traffic_matrix(elements, n, skew);
  const std::vector<std::int64_t> recv_total = receive_counts(m);

  std::vector<int> scount(n), sdispl(n), rcount(n), rdispl(n);
  for (int d = 0, off = 0; d < n; ++d) { scount[d] = int(m[rank][d]); sdispl[d] = off; off += scount[d]; }
  for (int s = 0, off = 0; s < n; ++s) { rcount[s] = int(m[s][rank]); rdispl[s] = off; off += rcount[s]; }
  std::vector<unsigned char> send(std::size_t(elements) * width), recv(std::size_t(recv_total[rank]) * width);
  for (int d = 0; d < n; ++d)
    for (std::int64_t i = 0; i < scount[d]; ++i) store(send, sdispl[d] + i, width, pattern_value(rank, d, i));
  if (rank == 0 && env_int("AISPFLOW_COMM_TEST_CORRUPT", 0) && scount[n - 1] > 0)
    store(send, sdispl[n - 1], width, ~load(send, sdispl[n - 1], width));
  const MPI_Datatype type = mpi_type(width);

  // Verify first: one exchange into a buffer filled with the complement of what must arrive.
  for (int s = 0; s < n; ++s)
    for (std::int64_t i = 0; i < rcount[s]; ++i) store(recv, rdispl[s] + i, width, ~pattern_value(s, rank, i));
  MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), type, recv.data(), rcount.data(), rdispl.data(), type,
                MPI_COMM_WORLD);
  long long wrong = 0;
  for (int s = 0; s < n; ++s)
    for (std::int64_t i = 0; i < rcount[s]; ++i)
      if (load(recv, rdispl[s] + i, width) != truncated(pattern_value(s, rank, i), width)) ++wrong;
  long long wrong_all = 0;
  MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  json out = point;
  out["wrong"] = wrong_all;
  if (wrong_all > 0) return out;   // a mismatch is a failed point: never timed

  std::vector<double> times(iterations), slowest(iterations);
  for (int it = -warmup; it < iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), type, recv.data(), rcount.data(), rdispl.data(), type,
                  MPI_COMM_WORLD);
    const double t1 = MPI_Wtime();
    if (it >= 0) times[it] = t1 - t0;
  }
  MPI_Reduce(times.data(), slowest.data(), iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  out["times_s"] = slowest;
  // Back to back (nccl-tests' measure): `window` exchanges between one barrier and the clock, per window.
  std::vector<double> window_s(windows), window_slowest(windows);
  for (int w = 0; w < windows; ++w) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < window; ++i)
      MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), type, recv.data(), rcount.data(), rdispl.data(), type,
                    MPI_COMM_WORLD);
    window_s[w] = MPI_Wtime() - t0;
  }
  MPI_Reduce(window_s.data(), window_slowest.data(), windows, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  out["window_s"] = window_slowest;
  out["window_exchanges"] = window;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [rank, n] = start_rank_program(argc, argv, "aispflow-comm-rank");
  json plan;
  try {
    std::ifstream in(argv[1]);
    plan = json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot read plan %s: %s\n", rank, argv[1], e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int warmup = plan.value("warmup", 5), iterations = plan.value("iterations", 30);
  const int window = plan.value("window_exchanges", 20), windows = plan.value("windows", 3);
  const int die_rank = env_int("AISPFLOW_COMM_TEST_DIE_RANK", -1);
  const int hang_rank = env_int("AISPFLOW_COMM_TEST_HANG_RANK", -1);

  json results = json::array();
  for (const auto& point : plan.at("points")) {
    results.push_back(run_point(point, rank, n, warmup, iterations, window, windows));
    if (rank == die_rank) {
      std::fprintf(stderr, "rank %d: test hook AISPFLOW_COMM_TEST_DIE_RANK: exiting mid-run\n", rank);
      std::fflush(stderr);
      std::_Exit(7);
    }
    if (rank == hang_rank) {
      std::fprintf(stderr, "rank %d: test hook AISPFLOW_COMM_TEST_HANG_RANK: hanging\n", rank);
      std::fflush(stderr);
      for (;;) pause();
    }
  }
  if (rank == 0)
    write_result_atomically(argv[2], {{"complete", true}, {"ranks", n}, {"mpi_library", mpi_library_version()},
                                      {"points", results}});
  MPI_Finalize();
  return 0;
}
