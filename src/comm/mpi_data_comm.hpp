// The data plane over MPI. On the CPU backend device buffers are host memory
// and each operation runs on the device's stream (its worker thread), so it
// is as asynchronous as NCCL on a GPU. On CUDA, data is staged through pinned
// host buffers: device to host, the MPI call, host to device, in stream order.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/data_comm.hpp"
#include "device/device.hpp"

namespace gpuscale {

// Collective over `group`, which it duplicates (its messages never meet the
// control plane's).
std::unique_ptr<DataComm> make_mpi_data_comm(MPI_Comm group, Device& dev);

}  // namespace gpuscale
