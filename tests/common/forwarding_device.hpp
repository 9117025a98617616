// Test doubles of the Device interface: ForwardingDevice hands every call to
// a CpuDevice, so a test overrides only the call it wants to change.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
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
  void run(const DeviceOp& op) override { cpu_.run(op); }
  void use_lane(Lane l) override { cpu_.use_lane(l); }
  Lane lane() const override { return cpu_.lane(); }
  void wait(Lane waiter, Lane on) override { cpu_.wait(waiter, on); }
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
// copy calls are recorded instead of run (other ops run at once), and a launch enqueues the
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

// A device whose lanes wait for each other on purpose, to make an overlap
// deterministic in a test: wait_until gives up after 2 s and sets timed_out,
// and from then on no wait waits (so a lane order that cannot overlap ends).
class HandshakingDevice : public ForwardingDevice {
 public:
  std::atomic<bool> timed_out{false};

 protected:
  template <class Ready>
  void wait_until(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!timed_out && !ready()) {
      if (std::chrono::steady_clock::now() > until) timed_out = true;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

// Makes a pipeline's overlap deterministic. Matmul i (i > 0) waits until
// the copy of result i-1 has landed, and that copy waits until matmul i has
// begun: a pipeline that copies each result while the next matmul runs
// passes straight through, with copy i-1 inside matmul i's interval whatever
// the scheduler does. One that copies only after all matmuls makes matmul 1
// wait in vain for 2 s (`timed_out`; later ones then no longer wait).
class HandshakeDevice final : public HandshakingDevice {
 public:
  explicit HandshakeDevice(int ops) : ops_(ops) {}  // the pipeline's matmuls per sample
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    const int index = gemms_++;  // counted over all samples: each sample's copies all land before the next
    cpu_.host_task([this, index] {
      ++started_;
      wait_until([&] { return copies_done_ >= index; });
    });
    cpu_.gemm(i, t, s, a, b, c);
  }
  void copy_async(void* d, const void* s, std::size_t b, CopyKind k) override {
    if (k != CopyKind::d2h) return cpu_.copy_async(d, s, b, k);
    const int index = copies_++;
    const int sample_start = index - index % ops_;  // matmuls of earlier samples
    cpu_.host_task([this, index, sample_start] {
      wait_until([&] { return started_ >= sample_start + std::min(index - sample_start + 2, ops_); });
    });
    cpu_.copy_async(d, s, b, k);
    cpu_.host_task([this] { ++copies_done_; });
  }

 private:
  int ops_;
  int gemms_ = 0, copies_ = 0;                        // enqueued (host thread)
  std::atomic<int> started_{0}, copies_done_{0};    // reached (lane workers)
};

// Makes distributed_gemm's overlap deterministic. The ring transfer of step
// s (a host task on the comm lane: MPI) waits until the block product of
// step s has begun, and that product waits until the transfer has begun.
// With the transfer enqueued before the product on another lane (overlap =
// true) both go through and the transfer lies inside the product's interval;
// enqueued after the product (false), the product waits in vain for 2 s
// (`timed_out`; later waits then give up at once).
class RingHandshakeDevice final : public HandshakingDevice {
 public:
  explicit RingHandshakeDevice(int group_size) : g_(group_size) {}
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    const int index = gemms_++;  // counted over all samples
    const int sample = index / g_, step = index % g_;
    const int needed = sample * (g_ - 1) + std::min(step + 1, g_ - 1);  // transfers begun by now
    cpu_.host_task([this, needed] {
      ++gemms_begun_;
      wait_until([&] { return transfers_begun_ >= needed; });
    });
    cpu_.gemm(i, t, s, a, b, c);
  }
  void host_task(std::function<void()> fn) override {
    if (lane() != Lane::comm) return cpu_.host_task(std::move(fn));
    const int index = transfers_++;
    const int product = index / (g_ - 1) * g_ + index % (g_ - 1);  // the product of the same step
    cpu_.host_task([this, product, fn = std::move(fn)] {
      wait_until([&] { return gemms_begun_ > product; });
      ++transfers_begun_;
      fn();
    });
  }

 private:
  int g_;
  int gemms_ = 0, transfers_ = 0;                         // enqueued (host thread)
  std::atomic<int> gemms_begun_{0}, transfers_begun_{0};  // reached by the lanes
};

}  // namespace gpuscale::testing
