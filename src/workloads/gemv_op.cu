#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "device/cuda/cuda_check.hpp"
#include "workloads/gemv_op.hpp"

namespace gpuscale {

// Row-major A (m x n) is column-major A^T (n x m, leading dimension n): y = A x is op T of it.
void GemvOp::on_cuda(const CudaLane& lane) const {
  if (!gemv_unsupported(Backend::cuda, t).empty()) DeviceOp::on_cuda(lane);  // says it is unsupported
  auto h = static_cast<cublasHandle_t>(lane.blas);
  if (t == DType::fp64) {
    const double one = 1.0, zero = 0.0;
    GPUSCALE_CUBLAS(cublasDgemv(h, CUBLAS_OP_T, n, m, &one, static_cast<const double*>(a), n,
                                static_cast<const double*>(x), 1, &zero, static_cast<double*>(y), 1));
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  if (t == DType::fp32) {
    GPUSCALE_CUBLAS(cublasSgemv(h, CUBLAS_OP_T, n, m, &one, static_cast<const float*>(a), n,
                                static_cast<const float*>(x), 1, &zero, static_cast<float*>(y), 1));
    return;
  }
  GPUSCALE_CUBLAS(cublasTSTgemvStridedBatched(h, CUBLAS_OP_T, n, m, &one, static_cast<const __nv_bfloat16*>(a), n, 0,
                                              static_cast<const __nv_bfloat16*>(x), 1, 0, &zero,
                                              static_cast<__nv_bfloat16*>(y), 1, 0, 1));
}

}  // namespace gpuscale
