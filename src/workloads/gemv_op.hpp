// y = A x, A row-major m x n, x of n and y of m elements, all of one dtype:
// the gemv workload's op. CPU: OpenBLAS's sgemv / dgemv (fp32, fp64); CUDA:
// cuBLAS's Sgemv / Dgemv, and TSTgemvStridedBatched for bf16 (float accumulation).
#pragma once

#include <string>

#include "device/device.hpp"

namespace gpuscale {

// "" when `backend` has gemv in dtype `t`, else why not.
std::string gemv_unsupported(Backend backend, DType t);

// RuntimeError for a buffer smaller than its part of the shape.
void gemv(Device& dev, DType t, int m, int n, const DeviceBuffer& a, const DeviceBuffer& x, DeviceBuffer& y);

struct GemvOp final : DeviceOp {
  DType t = DType::fp32;
  int m = 0, n = 0;
  const void* a = nullptr;
  const void* x = nullptr;
  void* y = nullptr;

  std::string name() const override { return std::string("gemv ") + dtype_name(t); }
  void on_cpu(const CpuLane& lane) const override;
#ifdef GPUSCALE_HAVE_CUDA
  void on_cuda(const CudaLane& lane) const override;
#endif
};

}  // namespace gpuscale
