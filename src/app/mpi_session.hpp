// MPI_Init_thread / MPI_Finalize as a scope. Only `run` and `info` start MPI:
// `check` and `report` work without mpirun.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

#include "app/run_metadata.hpp"
#include "comm/mpi_library.hpp"

namespace gpuscale {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    // On the CPU backend the stream's worker thread makes the MPI calls of transfers, never at the same time
    // as the main thread: MPI_THREAD_SERIALIZED, or MULTIPLE where the library's UCX layer needs it
    // (mpi_library.hpp).
    const std::string library = mpi_library_version();
    requested_ = mpi_thread_level_to_request(library);
    MPI_Init_thread(argc, argv, requested_, &provided_);
    if (provided_ < MPI_THREAD_SERIALIZED) {
      std::fprintf(stderr, "gpuscale: error: %s provides %s; gpuscale needs MPI_THREAD_SERIALIZED\n",
                   mpi_runs_with().c_str(), mpi_thread_level_name(provided_).c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // UCX carries the run where nothing said it would (an Open MPI settings file chose it): at SERIALIZED,
    // that UCX would take the stream thread's calls for a second thread's.
    if (provided_ < MPI_THREAD_MULTIPLE && ucx_needs_thread_multiple(library) && open_mpi_selected_pml() == "ucx") {
      std::fprintf(stderr, "gpuscale: error: %s carries this run over UCX (pml ucx), which before 4.1.7 and 5.0.4 "
                   "takes %s for one thread only, and gpuscale's stream thread makes MPI calls: set OMPI_MCA_pml=ucx "
                   "in the ranks' environment (mpirun -x OMPI_MCA_pml=ucx) so that gpuscale asks for "
                   "MPI_THREAD_MULTIPLE, or run over ob1 (mpirun --mca pml ob1)\n",
                   mpi_runs_with().c_str(), mpi_thread_level_name(provided_).c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Errors come back as codes, which our checks turn into messages.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int requested() const { return requested_; }
  int provided() const { return provided_; }

 private:
  int requested_ = MPI_THREAD_SERIALIZED, provided_ = 0;
};

}  // namespace gpuscale
