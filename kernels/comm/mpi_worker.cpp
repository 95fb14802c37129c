// aispflow-comm-worker: one MPI rank of the `alltoall` node's `mpi` transport (nodes/alltoall.cpp launches N of
// them through mpirun). For every (dtype, skew, payload) point of the spec it runs MPI_Alltoallv on host buffers
// with the traffic model of kernels/common/alltoall.hpp: warm-up, then timed iterations (a barrier, then
// MPI_Wtime around the call; the slowest rank's time counts), then it verifies every received byte against the
// pattern its sender wrote. Rank 0 writes the result file (temporary name, then rename: a killed run leaves none).
//
//   aispflow-comm-worker SPEC.json RESULT.json
//   SPEC: {"points": [{"dtype": "bf16", "element_bytes": 2, "payload_bytes": N, "skew": a}, ...],
//          "warmup": 5, "iterations": 30}
// Test hooks (tests/integration/test_alltoall.cpp): AISPFLOW_COMM_TEST_CORRUPT=1 flips one received byte on rank
// 0 before the check; AISPFLOW_COMM_TEST_ABORT_RANK=r makes rank r abort at its first timed iteration.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/alltoall.hpp"

using nlohmann::json;
namespace comm = aispflow::kernels::comm;

namespace {

struct Buffers {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;   // bytes
  std::vector<std::uint8_t> send, recv;
};

Buffers make_buffers(const std::vector<std::int64_t>& split, int element_bytes, int me, int ranks) {
  Buffers b;
  b.send_counts.resize(std::size_t(ranks));
  b.recv_counts.resize(std::size_t(ranks));
  b.send_displs.resize(std::size_t(ranks));
  b.recv_displs.resize(std::size_t(ranks));
  int send_total = 0, recv_total = 0;
  for (int r = 0; r < ranks; ++r) {
    b.send_counts[std::size_t(r)] = int(split[std::size_t(r)] * element_bytes);   // what I send to r
    b.recv_counts[std::size_t(r)] = int(split[std::size_t(me)] * element_bytes);  // every sender uses the same split
    b.send_displs[std::size_t(r)] = send_total;
    b.recv_displs[std::size_t(r)] = recv_total;
    send_total += b.send_counts[std::size_t(r)];
    recv_total += b.recv_counts[std::size_t(r)];
  }
  b.send.resize(std::size_t(send_total));
  b.recv.resize(std::size_t(recv_total));
  for (int d = 0; d < ranks; ++d)
    for (int i = 0; i < b.send_counts[std::size_t(d)]; ++i)
      b.send[std::size_t(b.send_displs[std::size_t(d)] + i)] = comm::pattern_byte(me, d, i);
  return b;
}

std::int64_t count_wrong(const Buffers& b, int me, int ranks) {
  std::int64_t wrong = 0;
  for (int s = 0; s < ranks; ++s)
    for (int i = 0; i < b.recv_counts[std::size_t(s)]; ++i)
      wrong += b.recv[std::size_t(b.recv_displs[std::size_t(s)] + i)] != comm::pattern_byte(s, me, i) ? 1 : 0;
  return wrong;
}

double timed_alltoallv(Buffers& b) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  MPI_Alltoallv(b.send.data(), b.send_counts.data(), b.send_displs.data(), MPI_BYTE, b.recv.data(),
                b.recv_counts.data(), b.recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  return (MPI_Wtime() - t0) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 3) {
    if (me == 0) std::fprintf(stderr, "usage: aispflow-comm-worker SPEC.json RESULT.json\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  json spec;
  try {
    std::ifstream in(argv[1]);
    spec = json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot read spec %s: %s\n", me, argv[1], e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int warmup = spec.value("warmup", 5), iterations = spec.value("iterations", 30);
  const char* corrupt = std::getenv("AISPFLOW_COMM_TEST_CORRUPT");
  const char* abort_rank = std::getenv("AISPFLOW_COMM_TEST_ABORT_RANK");

  json points = json::array();
  for (const auto& p : spec.at("points")) {
    const int element_bytes = p.at("element_bytes").get<int>();
    const std::int64_t payload = p.at("payload_bytes").get<std::int64_t>();
    const auto split = comm::zipf_split(payload / element_bytes, ranks, p.at("skew").get<double>());
    Buffers b = make_buffers(split, element_bytes, me, ranks);
    for (int i = 0; i < warmup; ++i) timed_alltoallv(b);
    comm::AlltoallPoint point;
    point.transport = "mpi";
    point.dtype = p.at("dtype").get<std::string>();
    point.ranks = ranks;
    point.payload_bytes = 0;   // the payload in whole elements, as split
    for (auto c : split) point.payload_bytes += c * element_bytes;
    point.skew = p.at("skew").get<double>();
    point.split_elements = split;
    point.element_bytes = element_bytes;
    std::int64_t wrong = 0;
    for (int i = 0; i < iterations; ++i) {
      if (abort_rank && std::atoi(abort_rank) == me) {
        std::fprintf(stderr, "rank %d: aborting on purpose (AISPFLOW_COMM_TEST_ABORT_RANK)\n", me);
        std::abort();
      }
      // The last iteration's receive buffer is poisoned first, so bytes a transport never wrote are caught too.
      if (i == iterations - 1) std::memset(b.recv.data(), 0xA5, b.recv.size());
      const double local_ms = timed_alltoallv(b);
      double slowest_ms = 0;
      MPI_Reduce(&local_ms, &slowest_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (me == 0) point.times_ms.push_back(slowest_ms);
    }
    if (corrupt && std::atoi(corrupt) == 1 && me == 0 && !b.recv.empty()) b.recv[b.recv.size() / 2] ^= 0x01;
    const std::int64_t my_wrong = count_wrong(b, me, ranks);
    MPI_Reduce(&my_wrong, &wrong, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    point.wrong = wrong;
    if (me == 0) points.push_back(point.to_json());
  }
  if (me == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string library(version, std::size_t(length));
    while (!library.empty() && (library.back() == '\n' || library.back() == ' ')) library.pop_back();
    const json result = {{"ranks", ranks}, {"mpi", library}, {"points", points}};
    const std::string tmp = std::string(argv[2]) + ".tmp";
    {
      std::ofstream out(tmp);
      out << result.dump(2) << "\n";
    }
    std::filesystem::rename(tmp, argv[2]);
  }
  MPI_Finalize();
  return 0;
}
