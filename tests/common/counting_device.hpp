// A test double that counts the bytes allocated through it, for checking the
// memory need of a case against what the workload really allocates.
#pragma once

#include "common/forwarding_device.hpp"

namespace gpuscale::testing {

// `on_host = false` makes workloads and MPI's data plane stage through host
// memory, as on a GPU.
class CountingDevice final : public ForwardingDevice {
 public:
  explicit CountingDevice(bool on_host = true) : on_host_(on_host) {}
  DeviceBuffer alloc(std::size_t b) override {
    device_bytes += static_cast<double>(b);
    return ForwardingDevice::alloc(b);
  }
  HostBuffer alloc_host(std::size_t b, bool pinned) override {
    host_bytes += static_cast<double>(b);
    return ForwardingDevice::alloc_host(b, pinned);
  }
  bool buffers_on_host() const override { return on_host_; }
  double device_bytes = 0, host_bytes = 0;  // ever allocated: no workload frees a buffer before it is done

 private:
  bool on_host_;
};

}  // namespace gpuscale::testing
