// The CPU backend: host memory and OpenBLAS. Work runs synchronously on the
// calling thread, so an event is a host timestamp.
#pragma once

#include "device/device.hpp"

namespace gpuscale {

class CpuDevice final : public Device {
 public:
  CpuDevice();
  const DeviceInfo& info() const override { return info_; }
  DeviceBuffer alloc(std::size_t bytes) override;
  void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes) override;
  void gemm(DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override;
  void set_threads(int threads) override;
  void synchronize() override {}
  std::unique_ptr<DeviceEvent> create_event() override;
  double elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const override;

 private:
  DeviceInfo info_;
};

// "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();
// "OpenBLAS 0.3.21 ..." as the library reports itself.
std::string blas_version();

}  // namespace gpuscale
