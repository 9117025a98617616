// Checked MPI calls: a failure names the call, the MPI error string and file:line.
#pragma once

#include <mpi.h>

#include <string>

#include "core/error.hpp"

namespace gpuscale {

inline void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeError(std::string(call) + " failed: " + std::string(msg, len) + " (" + file + ":" + std::to_string(line) +
                     ")");
}

}  // namespace gpuscale

#define GPUSCALE_MPI(call)                                   \
  do {                                                       \
    ::gpuscale::mpi_check((call), #call, __FILE__, __LINE__); \
  } while (0)
