#include "device/cuda/cuda_check.hpp"
#include "device/ops/multiply_add.hpp"
#include "elementwise.hpp"

namespace gpuscale {

void MultiplyAddOp::on_cuda(const CudaLane& lane) const {
  GPUSCALE_CUDA(kernels::launch_multiply_add(t, a, b, r, count, lane.stream));
}

}  // namespace gpuscale
