// CudaDevice: one stream, one cuBLAS handle, device memory, events; gemm by
// cuBLAS (impl vendor) or by our kernels (kernels/). Every call is checked.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <type_traits>

#include "core/text.hpp"
#include "device/capabilities.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cuda_handles.hpp"
#include "device/cuda_device.hpp"
#include "gemm_kernels.hpp"

namespace gpuscale {

namespace {

using namespace cuda;  // the owning handles (cuda_handles.hpp)

class CudaGraph final : public DeviceGraph {
 public:
  CudaGraph(GraphExecPtr exec, cudaStream_t s) : exec_(std::move(exec)), stream_(s) {}
  void launch() override { GPUSCALE_CUDA(cudaGraphLaunch(exec_.get(), stream_)); }

 private:
  GraphExecPtr exec_;
  cudaStream_t stream_;
};

EventPtr new_event(unsigned flags) {
  cudaEvent_t e = nullptr;
  GPUSCALE_CUDA(cudaEventCreateWithFlags(&e, flags));
  return EventPtr(e);
}

// Records on the stream of the lane that is current at record() time.
class CudaEvent final : public DeviceEvent {
 public:
  explicit CudaEvent(const Device& dev, const std::array<cudaStream_t, kLanes>& streams)
      : dev_(dev), streams_(streams), event_(new_event(cudaEventDefault)) {}
  void record() override {
    GPUSCALE_CUDA(cudaEventRecord(event_.get(), streams_[static_cast<int>(dev_.lane())]));
  }
  cudaEvent_t get() const { return event_.get(); }

 private:
  const Device& dev_;
  const std::array<cudaStream_t, kLanes>& streams_;
  EventPtr event_;
};

std::string uuid_string(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

cudaMemcpyKind memcpy_kind(CopyKind k) {
  switch (k) {
    case CopyKind::h2d: return cudaMemcpyHostToDevice;
    case CopyKind::d2h: return cudaMemcpyDeviceToHost;
    case CopyKind::d2d: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) {
    GPUSCALE_CUDA(cudaSetDevice(ordinal));
    cudaDeviceProp prop{};
    GPUSCALE_CUDA(cudaGetDeviceProperties(&prop, ordinal));
    char pci[32] = {};
    GPUSCALE_CUDA(cudaDeviceGetPCIBusId(pci, sizeof pci, ordinal));
    info_.kind = Backend::cuda;
    info_.name = prop.name;
    info_.uuid = uuid_string(prop.uuid);
    info_.pci_bus_id = pci;
    for (int l = 0; l < kLanes; ++l) {
      LaneState& lane = lanes_[l];
      cudaStream_t s = nullptr;
      GPUSCALE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      lane.stream.reset(s);
      streams_[l] = s;
      lane.fence = new_event(cudaEventDisableTiming);
      cublasHandle_t h = nullptr;
      GPUSCALE_CUBLAS(cublasCreate(&h));
      lane.blas.reset(h);
      GPUSCALE_CUBLAS(cublasSetStream(h, s));
      // A workspace of the lane's own, so that cuBLAS allocates nothing while a
      // graph is being captured and lanes never share one (cublasSetStream
      // resets it: set it after).
      lane.workspace = alloc(kCublasWorkspaceBytes);
      GPUSCALE_CUBLAS(cublasSetWorkspace(h, lane.workspace.data(), lane.workspace.bytes()));
    }
  }

  ~CudaDevice() override {  // errors were the caller's to collect
    for (auto s : streams_) cudaStreamSynchronize(s);
  }

  void use_lane(Lane l) override { lane_ = l; }
  Lane lane() const override { return lane_; }

  void wait(Lane waiter, Lane on) override {
    if (waiter == on) return;
    // cudaStreamWaitEvent waits for the record made just before it: one fence per lane suffices.
    LaneState& from = lanes_[static_cast<int>(on)];
    GPUSCALE_CUDA(cudaEventRecord(from.fence.get(), from.stream.get()));
    GPUSCALE_CUDA(cudaStreamWaitEvent(streams_[static_cast<int>(waiter)], from.fence.get(), 0));
  }

  const DeviceInfo& info() const override { return info_; }

  DeviceBuffer alloc(std::size_t bytes) override {
    void* p = nullptr;
    check_alloc(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc", "device memory", bytes);
    return DeviceBuffer(p, bytes, [](void* q) noexcept { cudaFree(q); });
  }

  HostBuffer alloc_host(std::size_t bytes, bool pinned) override {
    if (pinned) {
      void* p = nullptr;
      check_alloc(cudaMallocHost(&p, bytes == 0 ? 1 : bytes), "cudaMallocHost", "pinned host memory", bytes);
      return HostBuffer(p, bytes, [](void* q) noexcept { cudaFreeHost(q); });
    }
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!p) throw OutOfMemory("out of pageable host memory allocating " + format_bytes(static_cast<double>(bytes)));
    return HostBuffer(p, bytes, [](void* q) noexcept { std::free(q); });
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind) override {
    GPUSCALE_CUDA(cudaMemcpyAsync(dst, src, bytes, memcpy_kind(kind), stream()));
  }

  void gemm(GemmImpl impl, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b,
            DeviceBuffer& c) override {
    if (const std::string why = gemm_unsupported(Backend::cuda, impl, t); !why.empty()) throw RuntimeError(why);
    const std::size_t e = dtype_size(t);
    if (a.bytes() < e * s.m * s.k || b.bytes() < e * s.k * s.n || c.bytes() < e * s.m * s.n) {
      throw RuntimeError("gemm: a buffer is smaller than the matrix shape");
    }
    void* st = stream();
    switch (impl) {
      case GemmImpl::vendor: return vendor_gemm(t, s, a.data(), b.data(), c.data());
      case GemmImpl::naive:
        GPUSCALE_CUDA(kernels::launch_gemm_naive(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
      case GemmImpl::tiled:
        GPUSCALE_CUDA(kernels::launch_gemm_tiled(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
      case GemmImpl::blocked:
        GPUSCALE_CUDA(kernels::launch_gemm_blocked(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
      case GemmImpl::tensor:
        GPUSCALE_CUDA(kernels::launch_gemm_tensor(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
      case GemmImpl::mma:
        GPUSCALE_CUDA(kernels::launch_gemm_mma(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
      case GemmImpl::mma_async:
        GPUSCALE_CUDA(kernels::launch_gemm_mma_async(t, s.m, s.n, s.k, a.data(), b.data(), c.data(), st));
        return;
    }
  }

  void run(const DeviceOp& op) override {
    op.on_cuda(CudaLane{stream(), lanes_[static_cast<int>(lane_)].blas.get()});
  }

  void synchronize() override {
    for (auto s : streams_) GPUSCALE_CUDA(cudaStreamSynchronize(s));
  }

  std::unique_ptr<DeviceEvent> create_event() override { return std::make_unique<CudaEvent>(*this, streams_); }

  double elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const override {
    float ms = 0.0f;
    GPUSCALE_CUDA(cudaEventElapsedTime(&ms, static_cast<const CudaEvent&>(start).get(),
                                       static_cast<const CudaEvent&>(stop).get()));
    return ms * 1e-3;
  }

  void set_threads(int) override {}

  bool buffers_on_host() const override { return false; }

  void host_task(std::function<void()> fn) override {
    synchronize();
    fn();
  }

  void* native_stream() const override { return stream(); }

  std::unique_ptr<DeviceGraph> capture(const std::function<void()>& enqueue) override {
    cudaStream_t s = stream();
    GPUSCALE_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue();
    } catch (...) {
      end_capture(s);  // the first error is the one to report
      throw;
    }
    cudaGraph_t g = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s, &g);
    GraphPtr graph(g);
    GPUSCALE_CUDA(ended);  // reported here, and cleared (cuda_check)
    cudaGraphExec_t exec = nullptr;
    GPUSCALE_CUDA(cudaGraphInstantiate(&exec, graph.get(), 0));
    return std::make_unique<CudaGraph>(GraphExecPtr(exec), s);
  }

 private:
  // Row-major C = A * B is column-major C^T = B^T * A^T: cuBLAS gets B first.
  void vendor_gemm(DType t, GemmShape s, const void* a, const void* b, void* c) {
    cublasHandle_t h = lanes_[static_cast<int>(lane_)].blas.get();
    if (t == DType::fp64) {
      const double one = 1.0, zero = 0.0;
      GPUSCALE_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one, b, CUDA_R_64F, s.n, a, CUDA_R_64F,
                                   s.k, &zero, c, CUDA_R_64F, s.n, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
      return;
    }
    cudaDataType_t type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    if (t == DType::tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    if (t == DType::fp16) type = CUDA_R_16F;
    if (t == DType::bf16) type = CUDA_R_16BF;
    const float one = 1.0f, zero = 0.0f;
    GPUSCALE_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one, b, type, s.n, a, type, s.k, &zero,
                                 c, type, s.n, compute, CUBLAS_GEMM_DEFAULT));
  }

  cudaStream_t stream() const { return streams_[static_cast<int>(lane_)]; }

  // An allocation that fails for want of memory says so in words (the runner adds the case); others as any call.
  static void check_alloc(cudaError_t rc, const char* call, const char* what, std::size_t bytes) {
    if (rc != cudaErrorMemoryAllocation) {
      cuda_check(rc, call, __FILE__, __LINE__);
      return;
    }
    (void)cudaGetLastError();
    throw OutOfMemory(std::string("out of ") + what + " allocating " + format_bytes(static_cast<double>(bytes)) +
                      " (cudaErrorMemoryAllocation)");
  }

  // Ends a capture that failed: the stream is usable again, the partial graph freed, and the capture's error
  // (an invalidated capture) cleared, so that the next launch is checked by its own launch alone.
  static void end_capture(cudaStream_t s) noexcept {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(s, &partial);
    GraphPtr discard(partial);
    (void)cudaGetLastError();
  }

  struct LaneState {
    StreamPtr stream;
    EventPtr fence;           // recorded by wait() on this lane
    DeviceBuffer workspace;   // declared before the handle, so it outlives it
    CublasPtr blas;
  };

  DeviceInfo info_;
  std::array<LaneState, kLanes> lanes_;
  std::array<cudaStream_t, kLanes> streams_{};
  Lane lane_ = Lane::compute;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int local_rank) {
  int count = 0;
  GPUSCALE_CUDA(cudaGetDeviceCount(&count));
  if (count < 1) throw RuntimeError("no CUDA device is visible");
  return std::make_unique<CudaDevice>(local_rank % count);
}

}  // namespace gpuscale
