// MPI_Init_thread / MPI_Finalize as a scope. Only `run` and `info` start MPI:
// `check` and `report` work without mpirun.
#pragma once

#include <mpi.h>

namespace gpuscale {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    // Errors come back as codes, which our checks turn into messages.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace gpuscale
