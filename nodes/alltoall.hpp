#pragma once
// What `aispflow hw` reports about the alltoall node's MPI transport (nodes/alltoall.cpp).
#include "pipeline/artifact.hpp"

namespace aispflow {
// {"mpirun": path, "version": "mpirun (Open MPI) 4.1.4", "worker": path} or {"unavailable": why}.
json mpi_launcher_info();
}  // namespace aispflow
