// acc (one double on the device) = (accumulate ? acc : 0) + sum of x[i]^2,
// over `count` elements of dtype `t`: the norm a sample logs after a matmul.
#pragma once

#include <cstddef>

#include "device/device.hpp"

namespace gpuscale {

// RuntimeError where a buffer is smaller than the count.
void sum_squares(Device& dev, DType t, const DeviceBuffer& x, std::size_t count, DeviceBuffer& acc, bool accumulate);

struct SumSquaresOp final : DeviceOp {
  DType t = DType::fp64;
  const void* x = nullptr;
  std::size_t count = 0;
  double* acc = nullptr;
  bool accumulate = false;

  std::string name() const override { return "sum_squares"; }
  void on_cpu(const CpuLane& lane) const override;
#ifdef GPUSCALE_HAVE_CUDA
  void on_cuda(const CudaLane& lane) const override;
#endif
};

}  // namespace gpuscale
