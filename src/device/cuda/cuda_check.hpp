// Checked CUDA and cuBLAS calls: a failure throws a RuntimeError naming the
// call, the error's name and text, and file:line (the command line adds the
// rank and host).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace gpuscale {

// A failure reported here is cleared from the runtime's last error, so that no later launch check takes it for
// its own (call_errors.hpp).
inline void cuda_check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc == cudaSuccess) return;
  (void)cudaGetLastError();
  throw RuntimeError(std::string(call) + " failed: " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ") at " +
                     file + ":" + std::to_string(line));
}

inline void cublas_check(cublasStatus_t rc, const char* call, const char* file, int line) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(std::string(call) + " failed: " + cublasGetStatusName(rc) + " (" + cublasGetStatusString(rc) +
                     ") at " + file + ":" + std::to_string(line));
}

}  // namespace gpuscale

#define GPUSCALE_CUDA(call)                                                        \
  do {                                                                             \
    ::gpuscale::cuda_check(static_cast<cudaError_t>(call), #call, __FILE__, __LINE__); \
  } while (0)

#define GPUSCALE_CUBLAS(call)                                 \
  do {                                                        \
    ::gpuscale::cublas_check((call), #call, __FILE__, __LINE__); \
  } while (0)
