// The MPI library's version text (MPI_Get_library_version, lines joined by "; " as the result file keeps it):
// the dependency it names and the thread level gpuscale asks it for.
#include <mpi.h>

#include <catch2/catch.hpp>

#include "comm/mpi_library.hpp"

using namespace gpuscale;

TEST_CASE("each MPI library's own words name it as a dependency", "[mpi_library]") {
  CHECK(mpi_dependency("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022") ==
        "openmpi@4.1.4");
  CHECK(mpi_dependency("MPICH Version:\t4.0.2; MPICH Release date:\tThu May 26 15:36:15 CDT 2022; MPICH ABI:\t"
                       "14:2:2") == "mpich@4.0.2");
  CHECK(mpi_dependency("MPI VERSION    : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2); MPI BUILD INFO : ") ==
        "cray-mpich@8.1.27.26");
  CHECK(mpi_dependency("MVAPICH2 Version      :\t2.3.7; MVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022") ==
        "mvapich2@2.3.7");
  CHECK(mpi_dependency("MVAPICH Version       :\t3.0; MVAPICH Release date  :\tFri Feb 23 2024") == "mvapich@3.0");
  CHECK(mpi_dependency("Intel(R) MPI Library 2021.10 for Linux* OS") == "intel-oneapi-mpi@2021.10");
}

TEST_CASE("an MPI library not known by name is kept by its first line", "[mpi_library]") {
  CHECK(mpi_dependency("Some\tMPI  7.1; built yesterday") == "mpi@Some MPI 7.1");
  CHECK(mpi_dependency("Vendor MPI 2.0, with options") == "mpi@Vendor MPI 2.0");
}

TEST_CASE("Open MPI versions whose UCX layer takes SERIALIZED for SINGLE are asked for MULTIPLE where UCX may "
          "carry the run", "[mpi_library]") {
  const auto ompi = [](const std::string& v) {
    return mpi_thread_level_to_request("Open MPI v" + v + ", package", true);
  };
  CHECK(ompi("4.0.7") == MPI_THREAD_MULTIPLE);
  CHECK(ompi("4.1.4") == MPI_THREAD_MULTIPLE);
  CHECK(ompi("4.1.6") == MPI_THREAD_MULTIPLE);
  CHECK(ompi("4.1.7") == MPI_THREAD_SERIALIZED);
  CHECK(ompi("4.1.8") == MPI_THREAD_SERIALIZED);
  CHECK(ompi("5.0.0") == MPI_THREAD_MULTIPLE);
  CHECK(ompi("5.0.3") == MPI_THREAD_MULTIPLE);
  CHECK(ompi("5.0.4") == MPI_THREAD_SERIALIZED);
  CHECK(ompi("5.1.0a1") == MPI_THREAD_SERIALIZED);
  CHECK(ompi("6.0") == MPI_THREAD_SERIALIZED);
  // Without UCX the lock MULTIPLE puts around every call is not needed.
  CHECK(mpi_thread_level_to_request("Open MPI v4.1.4, package", false) == MPI_THREAD_SERIALIZED);
  CHECK(mpi_thread_level_to_request("MPICH Version:\t4.0.2", true) == MPI_THREAD_SERIALIZED);
  CHECK(mpi_thread_level_to_request("Intel(R) MPI Library 2021.10 for Linux* OS", true) == MPI_THREAD_SERIALIZED);
  CHECK(ucx_needs_thread_multiple("Open MPI v4.1.4, package"));
  CHECK_FALSE(ucx_needs_thread_multiple("MPICH Version:\t4.0.2"));
}

TEST_CASE("UCX may carry an Open MPI run where OMPI_MCA_pml names it, or leaves it to a host with an RDMA device",
          "[mpi_library]") {
  CHECK(ucx_pml_possible("ucx", false));
  CHECK(ucx_pml_possible("ob1,ucx", false));
  CHECK(ucx_pml_possible(" ucx ", false));
  CHECK_FALSE(ucx_pml_possible("ob1", true));
  CHECK_FALSE(ucx_pml_possible("ucxx", true));
  CHECK_FALSE(ucx_pml_possible("^ucx", true));
  CHECK_FALSE(ucx_pml_possible("^cm,ucx", true));
  CHECK(ucx_pml_possible("^cm", true));
  CHECK_FALSE(ucx_pml_possible("^cm", false));
  CHECK(ucx_pml_possible(nullptr, true));
  CHECK_FALSE(ucx_pml_possible(nullptr, false));
}

TEST_CASE("thread levels are named as the standard names them", "[mpi_library]") {
  CHECK(mpi_thread_level_name(MPI_THREAD_SERIALIZED) == "MPI_THREAD_SERIALIZED");
  CHECK(mpi_thread_level_name(MPI_THREAD_MULTIPLE) == "MPI_THREAD_MULTIPLE");
  CHECK(mpi_thread_level_name(MPI_THREAD_SINGLE) == "MPI_THREAD_SINGLE");
  CHECK(mpi_thread_level_name(MPI_THREAD_FUNNELED) == "MPI_THREAD_FUNNELED");
}
