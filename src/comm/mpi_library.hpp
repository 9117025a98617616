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
// never at the same time as the main thread. Open MPI's UCX layer (pml ucx) took SERIALIZED for SINGLE (one
// thread only) before 4.1.7 and 5.0.4 (ompi #12613, #12608): true for those versions.
bool ucx_needs_thread_multiple(const std::string& library_version);

// Whether Open MPI may carry the run over UCX, from what is known before MPI_Init: OMPI_MCA_pml
// (`ompi_mca_pml`, null when unset) names ucx, or is unset on a host with an RDMA device (`rdma_devices`:
// pml ucx takes only hosts with a device of its list, mlx* by default). Open MPI's settings files are not
// read: Debian's excludes ucx (pml = ^ucx), so a Debian host with such a device is asked for more than needed.
bool ucx_pml_possible(const char* ompi_mca_pml, bool rdma_devices);

// MPI_THREAD_MULTIPLE where ucx_needs_thread_multiple and the UCX layer may carry the run, else
// MPI_THREAD_SERIALIZED. Open MPI 4.1 locks around its calls at any level above SINGLE, at MULTIPLE a little more
// (osu_latency's 8 B here: 0.11 us at SINGLE, 0.16 at SERIALIZED; in another run 0.12 and 0.18 at MULTIPLE;
// bench/README.md).
int mpi_thread_level_to_request(const std::string& library_version, bool ucx_possible);
// The same for this process: its environment and /sys/class/infiniband.
int mpi_thread_level_to_request(const std::string& library_version);

// After MPI_Init: the point-to-point layer Open MPI selected ("ob1", "ucx", "cm"), from its record of it
// (mca_pml_base_selected_component, laid out as mca_base_component_2_1_0_t); "" for another library, or where
// that record does not read as one.
std::string open_mpi_selected_pml();

// "MPI_THREAD_SERIALIZED" and so on; "thread level N" for a value the standard does not name.
std::string mpi_thread_level_name(int level);

}  // namespace gpuscale
