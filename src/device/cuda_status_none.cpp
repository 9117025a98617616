// probe_cuda() of a build without the CUDA toolkit.
#include "device/cuda_status.hpp"

namespace gpuscale {

CudaStatus probe_cuda() {
  CudaStatus s;
  s.reason = "this gpuscale was built without CUDA (no nvcc at configure time, or GPUSCALE_CUDA=OFF)";
  return s;
}

std::vector<std::vector<int>> peer_access_matrix() { return {}; }

}  // namespace gpuscale
