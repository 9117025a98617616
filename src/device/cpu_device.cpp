#include "device/cpu_device.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "device/capabilities.hpp"

extern "C" {
// OpenBLAS extensions (declared in its cblas.h too; repeated so other CBLAS headers work).
void openblas_set_num_threads(int num_threads);
char* openblas_get_config(void);
}

namespace gpuscale {

namespace {

// Completion time of the work enqueued before it, set by the stream's worker, with how long that worker had waited
// for a core by then (its schedstat: one pread, 0.6-1 us here). The clock is read on both sides of the pread, so that
// a time from this event as a start to another as a stop holds neither read: one inside each sample was a quarter of
// a sample of ten 8-byte sendrecvs (2.3 us).
class CpuEvent final : public DeviceEvent {
 public:
  explicit CpuEvent(CpuDevice& dev) : dev_(dev) {}
  void record() override {
    CpuStream& s = dev_.stream();
    stream_ = &s;
    s.enqueue([this] {
      reached_ = clock_now();
      wait_ = thread_wait_s();
      left_ = clock_now();
    });
  }
  double reached() const { return reached_; }  // as a stop
  double left() const { return left_; }        // as a start
  double wait() const { return wait_; }
  const CpuStream* stream() const { return stream_; }

 private:
  CpuDevice& dev_;
  const CpuStream* stream_ = nullptr;  // where it was last recorded
  double reached_ = 0.0, left_ = 0.0;
  double wait_ = NAN;
};

// Set by one lane's worker when it reaches it; another lane's worker blocks on it.
class Fence {
 public:
  void signal() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

template <class T>
void naive_gemm(GemmShape s, const T* a, const T* b, T* c) {
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      T acc = 0;
      for (int p = 0; p < s.k; ++p) acc += a[static_cast<std::size_t>(i) * s.k + p] * b[static_cast<std::size_t>(p) * s.n + j];
      c[static_cast<std::size_t>(i) * s.n + j] = acc;
    }
  }
}

Buffer host_alloc(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw OutOfMemory("out of host memory allocating " + format_bytes(static_cast<double>(bytes)));
  return Buffer(p, bytes, [](void* q) noexcept { std::free(q); });
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::string blas_version() {
  const char* c = openblas_get_config();
  return c ? c : "unknown BLAS";
}

CpuDevice::CpuDevice() {
  info_.kind = Backend::cpu;
  info_.name = cpu_model_name();
  for (auto& l : lanes_) l = std::make_unique<CpuStream>();
}

CpuDevice::~CpuDevice() {
  try {
    synchronize();
  } catch (...) {
    // The error was the caller's to collect; a destructor must not throw.
  }
}

void CpuDevice::wait(Lane waiter, Lane on) {
  if (waiter == on) return;  // a lane is in order already
  auto fence = std::make_shared<Fence>();
  // A fence covers the work enqueued on `on` so far, never later work: lanes
  // cannot wait for each other in a cycle, as with CUDA events.
  lanes_[static_cast<int>(on)]->enqueue([fence] { fence->signal(); });
  lanes_[static_cast<int>(waiter)]->enqueue([fence] { fence->wait(); });
}

void CpuDevice::synchronize() {
  // Every lane, each error surfacing once; the first one is rethrown.
  std::exception_ptr first;
  for (auto& l : lanes_) {
    try {
      l->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void CpuDevice::begin_batch() {
  for (auto& l : lanes_) l->hold();
}

void CpuDevice::end_batch() {
  for (auto& l : lanes_) l->release();
}

DeviceBuffer CpuDevice::alloc(std::size_t bytes) { return host_alloc(bytes); }

HostBuffer CpuDevice::alloc_host(std::size_t bytes, bool) { return host_alloc(bytes); }

void CpuDevice::copy_async(void* dst, const void* src, std::size_t bytes, CopyKind) {
  stream().enqueue([=] { std::memcpy(dst, src, bytes); });
}

void CpuDevice::gemm(GemmImpl impl, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b,
                     DeviceBuffer& c) {
  if (const std::string why = gemm_unsupported(Backend::cpu, impl, t); !why.empty()) throw RuntimeError(why);
  const std::size_t e = dtype_size(t);
  if (a.bytes() < e * s.m * s.k || b.bytes() < e * s.k * s.n || c.bytes() < e * s.m * s.n) {
    throw RuntimeError("gemm: a buffer is smaller than the matrix shape");
  }
  const void* pa = a.data();
  const void* pb = b.data();
  void* pc = c.data();
  if (impl == GemmImpl::naive) {
    if (t == DType::fp64) {
      stream().enqueue([=] { naive_gemm(s, static_cast<const double*>(pa), static_cast<const double*>(pb), static_cast<double*>(pc)); });
    } else {
      stream().enqueue([=] { naive_gemm(s, static_cast<const float*>(pa), static_cast<const float*>(pb), static_cast<float*>(pc)); });
    }
  } else if (t == DType::fp64) {
    stream().enqueue([=] {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0, static_cast<const double*>(pa), s.k,
                  static_cast<const double*>(pb), s.n, 0.0, static_cast<double*>(pc), s.n);
    });
  } else {
    stream().enqueue([=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, static_cast<const float*>(pa), s.k,
                  static_cast<const float*>(pb), s.n, 0.0f, static_cast<float*>(pc), s.n);
    });
  }
}

void CpuDevice::run(const DeviceOp& op) { op.on_cpu(CpuLane{stream(), threads_}); }

void CpuDevice::set_threads(int threads) {
  openblas_set_num_threads(threads);
  threads_ = threads < 1 ? 1 : threads;
}

std::unique_ptr<DeviceEvent> CpuDevice::create_event() { return std::make_unique<CpuEvent>(*this); }

double CpuDevice::elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const {
  if (&start == &stop) return 0.0;
  return static_cast<const CpuEvent&>(stop).reached() - static_cast<const CpuEvent&>(start).left();
}

double CpuDevice::waited_s(const DeviceEvent& start, const DeviceEvent& stop) const {
  const auto& a = static_cast<const CpuEvent&>(start);
  const auto& b = static_cast<const CpuEvent&>(stop);
  // Two lanes' workers are two threads: the difference of their counts would mean nothing.
  if (a.stream() == nullptr || a.stream() != b.stream()) return NAN;
  return b.wait() - a.wait();  // NaN where either read failed
}

}  // namespace gpuscale
