// Choosing the backend of a run (auto | cpu | cuda) and making its device.
#pragma once

#include <memory>
#include <string>

#include "device/cuda_status.hpp"
#include "device/device.hpp"

namespace gpuscale {

struct BackendChoice {
  Backend backend = Backend::cpu;  // what runs
  std::string reason;   // why, for the output and the result file
};

// Throws InputError when "cuda" is asked for and cannot be had.
BackendChoice choose_backend(const std::string& requested, const CudaStatus& cuda);

// The device of this rank: for CUDA, local_rank picks among the node's visible devices.
std::unique_ptr<Device> make_device(const BackendChoice& choice, int local_rank);

}  // namespace gpuscale
