// On a machine with a usable CUDA device: the probe sees it and backend auto
// reports it. Elsewhere: exit 77, which ctest reports as skipped.
#include <cstdio>

#include "device/backend.hpp"
#include "device/cuda_status.hpp"

int main() {
  using namespace gpuscale;
  const CudaStatus s = probe_cuda();
  if (!s.usable) {
    std::printf("skipped: %s\n", s.reason.c_str());
    return 77;
  }
  int failures = 0;
  if (s.device_count < 1) {
    std::printf("FAIL: usable but device_count = %d\n", s.device_count);
    ++failures;
  }
  const BackendChoice c = choose_backend("auto", s);
  if (c.reason.find("CUDA device") == std::string::npos) {
    std::printf("FAIL: backend auto does not mention the device: %s\n", c.reason.c_str());
    ++failures;
  }
  std::printf("%d CUDA device(s), runtime %s; auto chose %s: %s\n", s.device_count, s.runtime_version.c_str(),
              backend_name(c.backend), c.reason.c_str());
  return failures ? 1 : 0;
}
