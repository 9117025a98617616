// A rank's compute device: owns its buffers, and runs copies, gemm and other
// compute ops (device_op.hpp) in order on one stream. Calls return once the work is enqueued;
// synchronize() waits for it, and events time it on the device. CpuDevice
// always exists; CudaDevice implements the same interface, so workloads and
// the runner are the same on both.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/device_op.hpp"
#include "device/dtype.hpp"

namespace gpuscale {

// What runs a rank's work: an enum in memory, its name (backend_name) in configs, files and print.
enum class Backend { cpu, cuda };
const char* backend_name(Backend b);  // "cpu" | "cuda"
// The backend of a name as backend_name writes it; none for another text ("auto" included).
std::optional<Backend> parse_backend(const std::string& s);

struct DeviceInfo {
  Backend kind = Backend::cpu;
  std::string name;  // the CPU model, or the GPU name
  std::string uuid;  // empty where the device has none
  std::string pci_bus_id;
};

// Memory with its own deallocator (device memory, pinned or pageable host memory).
class Buffer {
 public:
  using Free = void (*)(void*) noexcept;
  Buffer() = default;
  Buffer(void* p, std::size_t bytes, Free f) : ptr_(p, f), bytes_(bytes) {}
  void* data() const { return ptr_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<void, Free> ptr_{nullptr, [](void*) noexcept {}};
  std::size_t bytes_ = 0;
};
using DeviceBuffer = Buffer;
using HostBuffer = Buffer;

// A point in the device's stream of work.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  virtual void record() = 0;
};

// Stream work recorded once and replayed as a whole (a CUDA graph): one
// launch call instead of one per operation.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void launch() = 0;  // enqueues one replay on the device's stream
};

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// vendor: cuBLAS / OpenBLAS. The others are our kernels (kernels/), a ladder
// from the simplest to the fastest: naive, tiled, blocked (fp64, fp32), then
// tensor cores (fp16, bf16) through WMMA (tensor), mma.sync fed by ldmatrix
// (mma), and that with a cp.async pipeline (mma_async). The CPU backend has a
// naive loop as well.
enum class GemmImpl { vendor, naive, tiled, blocked, tensor, mma, mma_async };
GemmImpl parse_gemm_impl(const std::string& s);  // throws std::invalid_argument
const char* gemm_impl_name(GemmImpl i);
const std::vector<std::string>& gemm_impl_names();

enum class CopyKind { h2d, d2h, d2d };

// A device's streams: work on different lanes may run at the same time, in
// order within a lane, and across lanes only where Device::wait says so.
// The data plane runs on the lane that is current when it is called.
enum class Lane { compute, copy, comm };
constexpr int kLanes = 3;
const char* lane_name(Lane l);

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual DeviceBuffer alloc(std::size_t bytes) = 0;
  // pinned: page-locked where the backend has such a thing.
  virtual HostBuffer alloc_host(std::size_t bytes, bool pinned) = 0;

  // The lane that stream-ordered work, events and host tasks go to from now
  // on (Lane::compute until changed). The runner starts every sample on compute.
  virtual void use_lane(Lane l) = 0;
  virtual Lane lane() const = 0;
  // Work enqueued on `waiter` from now on starts after everything enqueued on
  // `on` so far has completed (CUDA: an event recorded on `on`, waited for on `waiter`).
  virtual void wait(Lane waiter, Lane on) = 0;
  // Every lane's work so far before anything enqueued on compute from now on.
  void join_lanes();

  // Stream-ordered work; each returns once enqueued.
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind) = 0;
  // C = A * B, row-major, A m x k, B k x n, C m x n, all of one dtype.
  virtual void gemm(GemmImpl impl, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b,
                    DeviceBuffer& c) = 0;
  // Any other compute op (device_op.hpp): on_cpu or on_cuda of `op` with the current lane.
  virtual void run(const DeviceOp& op) = 0;

  virtual void synchronize() = 0;  // every lane
  // An event records on the lane that is current when record() is called.
  virtual std::unique_ptr<DeviceEvent> create_event() = 0;
  // Seconds of device time between two recorded events (after synchronize).
  virtual double elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const = 0;
  // Seconds of that time in which the thread that ran the stream's work was runnable but waited for a core that
  // other work held (after synchronize). Known on the CPU backend, where a worker thread is the stream (both events
  // on one lane); NaN where the backend does not know it (CUDA: the GPU does not wait for the host's cores).
  virtual double waited_s(const DeviceEvent& start, const DeviceEvent& stop) const;

  // Threads the backend's host-side library may use (BLAS on the CPU backend).
  virtual void set_threads(int threads) = 0;

  // True when device buffers are host memory the host may read and write (CPU backend).
  virtual bool buffers_on_host() const = 0;
  // Runs `fn` on the host in stream order: after the work enqueued before it,
  // before the work enqueued after it. CPU: the stream's worker runs it and
  // the call returns at once; CUDA: the stream is synchronized, then `fn` runs
  // on the calling thread. An exception from `fn` surfaces at synchronize() (CPU)
  // or here (CUDA).
  virtual void host_task(std::function<void()> fn) = 0;
  // Work enqueued between begin_batch() and end_batch() may start no earlier
  // than end_batch() (or a synchronize()). The CPU backend's worker then runs
  // a sample's transfers back to back instead of being woken once per
  // operation while both ranks' workers busy-wait in MPI for each other. No-op
  // where the device queues work itself (CUDA).
  virtual void begin_batch() {}
  virtual void end_batch() {}
  // The backend's stream handle for libraries that enqueue on it (cudaStream_t
  // on CUDA, for NCCL); nullptr on the CPU backend.
  virtual void* native_stream() const = 0;

  // Records the work `enqueue` puts on the stream into a graph, without running
  // it. Throws RuntimeError where the backend has no graphs (CPU) or when the
  // work cannot be recorded (it waits for the device, or uses another stream).
  virtual std::unique_ptr<DeviceGraph> capture(const std::function<void()>& enqueue);

  // Blocking helpers: enqueue the copy and wait for it.
  void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes);
  // Every byte of `bytes` at dst set to 0xff (NaN in every float dtype), so that
  // a result nothing wrote cannot verify; staged through a host buffer of at
  // most kPoisonChunkBytes.
  static constexpr std::size_t kPoisonChunkBytes = 16 << 20;
  void poison(void* dst, std::size_t bytes);
};

}  // namespace gpuscale
