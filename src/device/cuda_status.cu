// probe_cuda() of a CUDA build: asks the runtime (which loads the driver itself)
// how many devices there are, and keeps the error's name and code when it fails.
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "device/cuda_status.hpp"

namespace gpuscale {

CudaStatus probe_cuda() {
  CudaStatus s;
  s.built = true;
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) {
    s.runtime_version = std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
  }
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    s.reason = std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ", error " +
               std::to_string(static_cast<int>(e)) + ")";
    return s;
  }
  if (n == 0) {
    const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
    s.reason = std::string("the CUDA runtime sees no device") +
               (vis ? std::string(" (CUDA_VISIBLE_DEVICES=") + vis + ")" : std::string());
    return s;
  }
  s.usable = true;
  s.device_count = n;
  for (int d = 0; d < n; ++d) {  // the smallest, for the check that every case fits
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    const double bytes = static_cast<double>(p.totalGlobalMem);
    if (s.device_memory_bytes == 0 || bytes < s.device_memory_bytes) s.device_memory_bytes = bytes;
  }
  return s;
}

}  // namespace gpuscale
