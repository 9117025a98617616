// Choosing what moves data between ranks (comm = auto | mpi | nccl), like the
// backend: what runs and why, for the output and the result file.
#pragma once

#include <string>

#include "comm/groups.hpp"

namespace gpuscale {

bool nccl_built();  // this gpuscale has the NCCL data plane

struct CommChoice {
  CommKind comm = CommKind::mpi;
  std::string reason;  // why
};

// Before MPI starts. auto: NCCL on the CUDA backend where it is built, else
// MPI. InputError for "nccl" without the CUDA backend or without NCCL.
CommChoice choose_comm(const std::string& requested, Backend backend, bool nccl_built);

// Once every rank's GPU is known: NCCL refuses two ranks on one GPU.
// `shared` names such ranks ("" when none). auto falls back to MPI and says
// why; an explicit "nccl" is an InputError naming them.
CommChoice comm_for_shared_devices(const CommChoice& chosen, const std::string& requested, const std::string& shared);

// What makes each group's data plane: make_mpi_data_comm or make_nccl_data_comm.
DataCommFactory data_comm_factory(CommKind comm);

}  // namespace gpuscale
