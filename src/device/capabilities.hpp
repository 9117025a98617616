// What each backend can run, known before any device is opened, so a config
// asking for the impossible is refused up front (exit 2) with the choices.
#pragma once

#include <string>

#include "device/device.hpp"

namespace gpuscale {

// "" when `backend` runs this gemm, else why not, e.g.
// "dtype fp16 needs the CUDA backend (the CPU backend has fp64, fp32)".
std::string gemm_unsupported(Backend backend, GemmImpl impl, DType t);

}  // namespace gpuscale
