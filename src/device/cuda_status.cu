// probe_cuda() of a CUDA build: asks the runtime (which loads the driver itself)
// how many devices there are, and keeps the error's name and code when it fails.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "device/cuda_status.hpp"

namespace gpuscale {

namespace {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// Why no device answered. The runtime answers "driver version is insufficient" (error 35) both where the driver
// is older than the runtime and where there is no driver at all, which reads as "update the driver": the driver
// library is looked for first, as the runtime itself would load it.
std::string failure_reason(cudaError_t e, const std::string& runtime_version) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return "no NVIDIA driver found (libcuda.so.1 not loadable)";
  dlclose(driver);
  std::string s = std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ", error " +
                  std::to_string(static_cast<int>(e)) + ")";
  int driver_version = 0;
  if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver_version) == cudaSuccess &&
      driver_version > 0) {
    s += ": the driver supports CUDA up to " + cuda_version_text(driver_version) + ", this gpuscale needs " +
         runtime_version + "; update the NVIDIA driver";
  }
  return s;
}

}  // namespace

CudaStatus probe_cuda() {
  CudaStatus s;
  s.built = true;
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) s.runtime_version = cuda_version_text(rt);
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    s.reason = failure_reason(e, s.runtime_version);
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

std::vector<std::vector<int>> peer_access_matrix() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) return {};
  std::vector<std::vector<int>> m(n, std::vector<int>(n, 1));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      int can = 0;  // stays 0 where the runtime cannot say
      if (i != j) m[i][j] = cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can ? 1 : 0;
    }
  }
  return m;
}

}  // namespace gpuscale
