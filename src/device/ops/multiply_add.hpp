// r[i] += a[i] * b[i] for i < count, one pass over three arrays: the
// elementwise workload's memory-bound op. fp32 and fp64; the CPU backend
// splits a pass over the threads Device::set_threads allows.
#pragma once

#include <cstddef>

#include "device/device.hpp"

namespace gpuscale {

// RuntimeError for another dtype or a buffer smaller than the count.
void multiply_add(Device& dev, DType t, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& r,
                  std::size_t count);

struct MultiplyAddOp final : DeviceOp {
  DType t = DType::fp64;
  const void* a = nullptr;
  const void* b = nullptr;
  void* r = nullptr;
  std::size_t count = 0;

  std::string name() const override { return "multiply_add"; }
  void on_cpu(const CpuLane& lane) const override;
#ifdef GPUSCALE_HAVE_CUDA
  void on_cuda(const CudaLane& lane) const override;
#endif
};

}  // namespace gpuscale
