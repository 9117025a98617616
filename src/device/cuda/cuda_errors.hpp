// call_errors.hpp's rule on the CUDA runtime: every launch of our own kernels
// goes through checked_launch, every query of a stream through stream_done.
#pragma once

#include <cuda_runtime.h>

#include "device/call_errors.hpp"

namespace gpuscale::cuda {

struct CudaRuntime {
  static constexpr int success = cudaSuccess;
  static constexpr int not_ready = cudaErrorNotReady;
  static int take_last() { return static_cast<int>(cudaGetLastError()); }
};

// The launch's own cudaError_t as an int (0: launched).
template <class Launch>
int checked_launch(Launch&& launch) {
  return launch_checked<CudaRuntime>(launch);
}

inline QueryAnswer stream_done(cudaStream_t s) {
  return query_done<CudaRuntime>([s] { return cudaStreamQuery(s); });
}

}  // namespace gpuscale::cuda
