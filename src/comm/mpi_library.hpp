// What the MPI library's own version text (MPI_Get_library_version) tells:
// its name and version as a dependency, and the thread level to ask it for.
// Pure functions of that text, so every library's wording is unit-tested.
#pragma once

#include <string>

namespace gpuscale {

// "openmpi@4.1.4", "mpich@4.0.2", "intel-oneapi-mpi@2021.10", "cray-mpich@8.1.27", "mvapich2@2.3.7" (Spack's
// package names), else "mpi@" and the text's first line.
std::string mpi_dependency(const std::string& library_version);

// gpuscale needs MPI_THREAD_SERIALIZED: the CPU backend's stream thread makes the MPI calls of transfers,
// never at the same time as the main thread. Open MPI's UCX layer took SERIALIZED for SINGLE (one thread
// only) before 4.1.7 and 5.0.4 (ompi #12613, #12608), so those versions are asked for MPI_THREAD_MULTIPLE.
int mpi_thread_level_to_request(const std::string& library_version);

// "MPI_THREAD_SERIALIZED" and so on; "thread level N" for a value the standard does not name.
std::string mpi_thread_level_name(int level);

}  // namespace gpuscale
