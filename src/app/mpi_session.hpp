// MPI_Init_thread / MPI_Finalize as a scope. Only `run` and `info` start MPI:
// `check` and `report` work without mpirun.
#pragma once

#include <mpi.h>

#include <cstdio>

namespace gpuscale {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    // On the CPU backend the stream's worker thread makes the MPI calls of
    // transfers, never at the same time as the main thread.
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      std::fprintf(stderr, "gpuscale: error: this MPI library provides thread level %d; gpuscale needs "
                           "MPI_THREAD_SERIALIZED\n", provided);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Errors come back as codes, which our checks turn into messages.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace gpuscale
