// Test doubles of the Device interface: ForwardingDevice hands every call to
// a CpuDevice, so a test overrides only the call it wants to change.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "device/cpu_device.hpp"

namespace gpuscale::testing {

class ForwardingDevice : public Device {
 public:
  const DeviceInfo& info() const override { return cpu_.info(); }
  DeviceBuffer alloc(std::size_t b) override { return cpu_.alloc(b); }
  HostBuffer alloc_host(std::size_t b, bool pinned) override { return cpu_.alloc_host(b, pinned); }
  void copy_async(void* d, const void* s, std::size_t b, CopyKind k) override { cpu_.copy_async(d, s, b, k); }
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    cpu_.gemm(i, t, s, a, b, c);
  }
  void sum_squares(DType t, const DeviceBuffer& x, std::size_t n, DeviceBuffer& acc, bool accumulate) override {
    cpu_.sum_squares(t, x, n, acc, accumulate);
  }
  void multiply_add(DType t, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& r, std::size_t n) override {
    cpu_.multiply_add(t, a, b, r, n);
  }
  void synchronize() override { cpu_.synchronize(); }
  std::unique_ptr<DeviceEvent> create_event() override { return cpu_.create_event(); }
  double elapsed_s(const DeviceEvent& a, const DeviceEvent& b) const override { return cpu_.elapsed_s(a, b); }
  void set_threads(int n) override { cpu_.set_threads(n); }
  bool buffers_on_host() const override { return true; }
  void host_task(std::function<void()> fn) override { cpu_.host_task(std::move(fn)); }
  void* native_stream() const override { return nullptr; }

 protected:
  CpuDevice cpu_;
};

// Graphs as a GPU records them, on the CPU: while capturing, gemm and
// sum_squares calls are recorded instead of run, and a launch enqueues the
// recording. Counts what ran so a test can tell replays from fresh calls.
class RecordingDevice final : public ForwardingDevice {
 public:
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    if (recording_) {
      ++recorded;
      DeviceBuffer* out = &c;
      steps_.push_back([=, &a, &b] { cpu_.gemm(i, t, s, a, b, *out); });
      return;
    }
    ++eager_gemms;
    cpu_.gemm(i, t, s, a, b, c);
  }
  void copy_async(void* d, const void* s, std::size_t b, CopyKind k) override {
    if (recording_) {
      ++recorded;
      steps_.push_back([=] { cpu_.copy_async(d, s, b, k); });
      return;
    }
    cpu_.copy_async(d, s, b, k);
  }
  void synchronize() override {
    if (recording_) throw RuntimeError("synchronize while recording a graph");
    cpu_.synchronize();
  }
  std::unique_ptr<DeviceGraph> capture(const std::function<void()>& enqueue) override;

  int recorded = 0;     // calls recorded into graphs
  int replays = 0;      // graph launches
  int eager_gemms = 0;  // gemm calls run as they came

 private:
  class Graph;
  bool recording_ = false;
  std::vector<std::function<void()>> steps_;
};

class RecordingDevice::Graph final : public DeviceGraph {
 public:
  Graph(RecordingDevice& dev, std::vector<std::function<void()>> steps) : dev_(dev), steps_(std::move(steps)) {}
  void launch() override {
    ++dev_.replays;
    for (const auto& s : steps_) s();
  }

 private:
  RecordingDevice& dev_;
  std::vector<std::function<void()>> steps_;
};

inline std::unique_ptr<DeviceGraph> RecordingDevice::capture(const std::function<void()>& enqueue) {
  recording_ = true;
  steps_.clear();
  try {
    enqueue();
  } catch (...) {
    recording_ = false;
    throw;
  }
  recording_ = false;
  return std::make_unique<Graph>(*this, std::move(steps_));
}

}  // namespace gpuscale::testing
