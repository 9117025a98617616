// What a result file says about where and how it was made: date, versions of
// the libraries, the relevant environment.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device/cuda_status.hpp"

namespace gpuscale {

std::string software_version();
std::string iso8601_now();             // 2026-11-22T07:10:00+0000
std::string compact_timestamp_now();   // 20261122-071000, for file names
// "openmpi@4.1.4;hdf5@1.10.8;openblas@0.3.21;cuda@13.0". Call after MPI_Init.
std::string software_dependencies(const CudaStatus& cuda);
// The MPI library as its mpi.h named it at build time ("Open MPI 4.1.4", "MPICH 4.0.2"; the MPI standard
// version where the header names no library), and as the library this process loaded names itself
// (MPI_Get_library_version's first line; callable before MPI_Init).
std::string mpi_built_with();
std::string mpi_runs_with();
// MPI_Get_library_version's whole text, its lines joined by "; " (the result file's mpiLibrary).
std::string mpi_library_version();
// The library's settings that pick its collective algorithms (mpi_tuning_names), read through MPI_T after
// MPI_Init: those it has, each as a number or a string.
std::vector<std::pair<std::string, std::string>> mpi_tuning_settings();
// gpuscale --version: the version, the MPI library it was built with and runs with, and that library's launcher
// as the build found it (the last line, "mpiexec: PATH", is read by jobs/local/mpirun.sh).
std::string version_text();
// SLURM_*, OMPI_*, MPIR_CVAR_*, MPICH_*, HYDRA_*, I_MPI_*, UCX_*, CUDA_*, NCCL_*, OPENBLAS_*, OMP_*, PMI_SIZE and
// MPI_LOCALNRANKS, sorted.
std::vector<std::pair<std::string, std::string>> relevant_environment();

}  // namespace gpuscale
