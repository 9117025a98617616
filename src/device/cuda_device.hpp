// The CUDA backend's device, behind the Device interface (no CUDA header
// here). Built only with CUDA (GPUSCALE_HAVE_CUDA).
#pragma once

#include <memory>

#include "device/device.hpp"

namespace gpuscale {

// Opens device (local_rank modulo the visible devices): CUDA_VISIBLE_DEVICES
// and Slurm's per-task binding (one visible device: device 0) are honoured
// by the runtime's numbering.
std::unique_ptr<Device> make_cuda_device(int local_rank);

}  // namespace gpuscale
