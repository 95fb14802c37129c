// Reference for the alltoall node's mpi transport: a plain MPI_Alltoallv loop with uniform splits, each
// exchange between barriers timed with MPI_Wtime, slowest rank per iteration, median. Rank 0 prints one
// JSON line. bench/run_comm_bench.sh compares its bandwidth with the node's at the same setting.
//
//   mpirun -n 4 comm_mpi_reference [bytes_per_rank=2097152] [iterations=100] [warmup=5]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const long bytes = argc > 1 ? std::atol(argv[1]) : 2097152;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 100, warmup = argc > 3 ? std::atoi(argv[3]) : 5;
  const long per_dst = bytes / n;
  std::vector<unsigned char> send(per_dst * n, 1), recv(per_dst * n, 0);
  std::vector<int> counts(n, int(per_dst)), displs(n);
  for (int d = 0; d < n; ++d) displs[d] = int(d * per_dst);
  std::vector<double> t(iterations), slowest(iterations);
  for (int it = -warmup; it < iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, recv.data(), counts.data(), displs.data(),
                  MPI_BYTE, MPI_COMM_WORLD);
    if (it >= 0) t[it] = MPI_Wtime() - t0;
  }
  MPI_Reduce(t.data(), slowest.data(), iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::sort(slowest.begin(), slowest.end());
    const double median = iterations % 2 ? slowest[iterations / 2]
                                         : 0.5 * (slowest[iterations / 2 - 1] + slowest[iterations / 2]);
    std::printf("{\"ranks\": %d, \"bytes_per_rank\": %ld, \"iterations\": %d, \"p50_ms\": %.6f, \"algbw_gbps\": %.6f}\n",
                n, per_dst * n, iterations, median * 1e3, double(per_dst * n) / median / 1e9);
  }
  MPI_Finalize();
  return 0;
}
