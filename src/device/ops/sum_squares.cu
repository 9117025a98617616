#include "device/cuda/cuda_check.hpp"
#include "device/ops/sum_squares.hpp"
#include "gemm_kernels.hpp"

namespace gpuscale {

void SumSquaresOp::on_cuda(const CudaLane& lane) const {
  GPUSCALE_CUDA(kernels::launch_sum_squares(t, x, count, acc, accumulate, lane.stream));
}

}  // namespace gpuscale
