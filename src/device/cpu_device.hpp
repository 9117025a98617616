// The CPU backend: host memory and OpenBLAS, with a worker thread as each
// lane's stream (CpuStream), so work is asynchronous as on a GPU. "Device" memory is
// ordinary host memory, and pinned host memory is the same as pageable.
#pragma once

#include <array>
#include <memory>

#include "device/cpu_stream.hpp"
#include "device/device.hpp"

namespace gpuscale {

class CpuDevice final : public Device {
 public:
  CpuDevice();
  ~CpuDevice() override;
  const DeviceInfo& info() const override { return info_; }
  DeviceBuffer alloc(std::size_t bytes) override;
  HostBuffer alloc_host(std::size_t bytes, bool pinned) override;
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind) override;
  void gemm(GemmImpl impl, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b,
            DeviceBuffer& c) override;
  void run(const DeviceOp& op) override;
  void use_lane(Lane l) override { lane_ = l; }
  Lane lane() const override { return lane_; }
  void wait(Lane waiter, Lane on) override;
  void synchronize() override;
  std::unique_ptr<DeviceEvent> create_event() override;
  double elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const override;
  // The lane's worker thread's wait for a core between the two events (NaN: recorded on different lanes).
  double waited_s(const DeviceEvent& start, const DeviceEvent& stop) const override;
  void set_threads(int threads) override;
  bool buffers_on_host() const override { return true; }
  void host_task(std::function<void()> fn) override { stream().enqueue(std::move(fn)); }
  void* native_stream() const override { return nullptr; }
  void begin_batch() override;
  void end_batch() override;
  // The current lane's stream.
  CpuStream& stream() { return *lanes_[static_cast<int>(lane_)]; }

 private:
  DeviceInfo info_;
  int threads_ = 1;  // set_threads: OpenBLAS's threads and the CpuLane's (ops that split their work)
  // One worker thread per lane, so work on different lanes really overlaps.
  std::array<std::unique_ptr<CpuStream>, kLanes> lanes_;
  Lane lane_ = Lane::compute;
};

// "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();
// "OpenBLAS 0.3.21 ..." as the library reports itself.
std::string blas_version();

}  // namespace gpuscale
