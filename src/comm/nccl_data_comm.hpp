// The data plane over NCCL on the rank's CUDA stream (no NCCL or CUDA header
// here). Built only with NCCL (GPUSCALE_HAVE_NCCL).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/data_comm.hpp"
#include "device/device.hpp"

namespace gpuscale {

// Collective over `group`: its rank 0 creates the unique id and sends it with
// MPI_Bcast; every rank then joins with ncclCommInitRank. Each operation goes
// to the stream of dev's current lane at the time of the call, so `dev` must
// be a CUDA device that outlives the communicator.
std::unique_ptr<DataComm> make_nccl_data_comm(MPI_Comm group, Device& dev);

// The NCCL library's version, "2.28.9".
std::string nccl_version();

}  // namespace gpuscale
