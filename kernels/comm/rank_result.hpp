#pragma once
// What both rank programs (aispflow-comm-rank, aispflow-comm-nccl-rank) share: starting MPI with their
// `<plan.json> <result.json>` arguments, and at the end, on rank 0, naming the MPI library and writing the result
// so that a partial run never leaves a complete-looking file.
#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace aispflow::comm {

struct MpiWorld {
  int rank = 0, size = 1;
};

// MPI_Init, this rank and the world size; with other than two arguments, rank 0 prints the usage of `program`
// and the job ends with status 2.
inline MpiWorld start_rank_program(int& argc, char**& argv, const char* program) {
  MPI_Init(&argc, &argv);
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  if (argc != 3) {
    if (w.rank == 0) std::fprintf(stderr, "usage: %s <plan.json> <result.json>\n", program);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return w;
}

// The first line of MPI_Get_library_version ("Open MPI v4.1.4, package: ...").
inline std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string lib(version, std::size_t(len));
  if (auto nl = lib.find('\n'); nl != std::string::npos) lib.resize(nl);
  return lib;
}

// Writes `doc` to `path` through a temporary name and a rename; aborts the job when it cannot.
inline void write_result_atomically(const std::string& path, const nlohmann::json& doc) {
  const std::string tmp = path + ".partial";
  std::ofstream(tmp) << doc.dump() << "\n";
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "rank 0: cannot write %s\n", path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

}  // namespace aispflow::comm
