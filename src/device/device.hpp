// A rank's compute device: owns its buffers, runs gemm and copies in stream
// order, and times work with events. CpuDevice always exists; a CUDA device
// implements the same interface, so workloads and the runner never change.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "device/dtype.hpp"

namespace gpuscale {

struct DeviceInfo {
  std::string kind;  // "cpu" | "cuda"
  std::string name;  // e.g. the CPU model, or the GPU name
  std::string uuid;  // empty where the device has none
  std::string pci_bus_id;
};

// Memory owned by a device; freed by the device's own deallocator.
class DeviceBuffer {
 public:
  using Free = void (*)(void*) noexcept;
  DeviceBuffer() = default;
  DeviceBuffer(void* p, std::size_t bytes, Free f) : ptr_(p, f), bytes_(bytes) {}
  void* data() const { return ptr_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<void, Free> ptr_{nullptr, [](void*) noexcept {}};
  std::size_t bytes_ = 0;
};

// A point in the device's stream of work.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  virtual void record() = 0;
};

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual DeviceBuffer alloc(std::size_t bytes) = 0;
  virtual void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes) = 0;

  // C = A * B, row-major, A m x k, B k x n, C m x n, all of one dtype.
  virtual void gemm(DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) = 0;

  // Threads the device's host-side library may use (BLAS on the CPU backend).
  virtual void set_threads(int threads) = 0;
  virtual void synchronize() = 0;

  virtual std::unique_ptr<DeviceEvent> create_event() = 0;
  // Seconds of device time between two recorded events (after synchronize).
  virtual double elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const = 0;
};

}  // namespace gpuscale
