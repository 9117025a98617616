#include "device/ops/multiply_add.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "device/cpu_stream.hpp"

namespace gpuscale {

namespace {

template <class T>
void multiply_add_range(const T* __restrict a, const T* __restrict b, T* __restrict r, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) r[i] += a[i] * b[i];  // vectorized by the compiler
}

// Threads are started per pass (tens of microseconds each); with at least
// 1 Mi elements (>= 16 MiB of traffic in fp32) per thread, that is a few
// percent of a pass at most, and smaller passes run on one thread.
constexpr std::size_t kMinElementsPerThread = std::size_t{1} << 20;

// Splits one pass into chunks of whole cache lines, one per thread; the
// calling thread (the stream's worker) runs the first.
template <class T>
void multiply_add_split(const T* a, const T* b, T* r, std::size_t count, int threads) {
  const std::size_t want = std::min<std::size_t>(static_cast<std::size_t>(threads), count / kMinElementsPerThread);
  if (want <= 1) {
    multiply_add_range(a, b, r, count);
    return;
  }
  constexpr std::size_t line = 64 / sizeof(T);
  const std::size_t chunk = ((count + want - 1) / want + line - 1) / line * line;
  std::vector<std::thread> helpers;
  try {
    for (std::size_t begin = chunk; begin < count; begin += chunk) {
      const std::size_t n = std::min(chunk, count - begin);
      helpers.emplace_back([=] { multiply_add_range(a + begin, b + begin, r + begin, n); });
    }
    multiply_add_range(a, b, r, std::min(chunk, count));
  } catch (...) {  // a thread that could not start: the others must be joined before the error goes on
    for (auto& h : helpers) h.join();
    throw;
  }
  for (auto& h : helpers) h.join();
}

}  // namespace

void multiply_add(Device& dev, DType t, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& r,
                  std::size_t count) {
  if (t != DType::fp64 && t != DType::fp32) {
    throw RuntimeError(std::string("multiply_add: dtype ") + dtype_name(t) + " is not supported (fp64, fp32)");
  }
  const std::size_t bytes = count * dtype_size(t);
  if (a.bytes() < bytes || b.bytes() < bytes || r.bytes() < bytes) {
    throw RuntimeError("multiply_add: a buffer is smaller than the count");
  }
  MultiplyAddOp op;
  op.t = t;
  op.a = a.data();
  op.b = b.data();
  op.r = r.data();
  op.count = count;
  dev.run(op);
}

void MultiplyAddOp::on_cpu(const CpuLane& lane) const {
  const int threads = lane.threads;  // the value when enqueued, as for any stream-ordered argument
  if (t == DType::fp64) {
    lane.stream.enqueue([pa = static_cast<const double*>(a), pb = static_cast<const double*>(b),
                         pr = static_cast<double*>(r), n = count, threads] {
      multiply_add_split(pa, pb, pr, n, threads);
    });
  } else {
    lane.stream.enqueue([pa = static_cast<const float*>(a), pb = static_cast<const float*>(b),
                         pr = static_cast<float*>(r), n = count, threads] {
      multiply_add_split(pa, pb, pr, n, threads);
    });
  }
}

}  // namespace gpuscale
