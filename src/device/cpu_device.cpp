#include "device/cpu_device.hpp"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/error.hpp"

extern "C" {
// OpenBLAS extensions (declared in its cblas.h too; repeated so other CBLAS headers work).
void openblas_set_num_threads(int num_threads);
char* openblas_get_config(void);
}

namespace gpuscale {

namespace {

class CpuEvent final : public DeviceEvent {
 public:
  void record() override { t_ = clock_now(); }
  double time() const { return t_; }

 private:
  double t_ = 0.0;
};

void check_bytes(const DeviceBuffer& b, std::size_t bytes, const char* what) {
  if (b.bytes() < bytes) throw RuntimeError(std::string(what) + ": buffer smaller than the copy");
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
  info_.kind = "cpu";
  info_.name = cpu_model_name();
}

DeviceBuffer CpuDevice::alloc(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw RuntimeError("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return DeviceBuffer(p, bytes, [](void* q) noexcept { std::free(q); });
}

void CpuDevice::copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes) {
  check_bytes(dst, bytes, "copy_to_device");
  std::memcpy(dst.data(), src, bytes);
}

void CpuDevice::copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes) {
  check_bytes(src, bytes, "copy_to_host");
  std::memcpy(dst, src.data(), bytes);
}

void CpuDevice::gemm(DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) {
  const std::size_t e = dtype_size(t);
  if (a.bytes() < e * s.m * s.k || b.bytes() < e * s.k * s.n || c.bytes() < e * s.m * s.n) {
    throw RuntimeError("gemm: a buffer is smaller than the matrix shape");
  }
  if (t == DType::fp64) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0, static_cast<const double*>(a.data()),
                s.k, static_cast<const double*>(b.data()), s.n, 0.0, static_cast<double*>(c.data()), s.n);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, static_cast<const float*>(a.data()),
                s.k, static_cast<const float*>(b.data()), s.n, 0.0f, static_cast<float*>(c.data()), s.n);
  }
}

void CpuDevice::set_threads(int threads) { openblas_set_num_threads(threads); }

std::unique_ptr<DeviceEvent> CpuDevice::create_event() { return std::make_unique<CpuEvent>(); }

double CpuDevice::elapsed_s(const DeviceEvent& start, const DeviceEvent& stop) const {
  return static_cast<const CpuEvent&>(stop).time() - static_cast<const CpuEvent&>(start).time();
}

}  // namespace gpuscale
