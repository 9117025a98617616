// The gemm workload on the CPU device: correct results pass verification,
// wrong ones fail it.
#include <catch2/catch.hpp>

#include "device/backend.hpp"
#include "device/cpu_device.hpp"
#include "workloads/gemm.hpp"

using namespace gpuscale;

namespace {
Params gemm_params(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype, std::int64_t ops) {
  Params p;
  p.set("size", std::int64_t{512});
  p.set("m", m);
  p.set("n", n);
  p.set("k", k);
  p.set("dtype", dtype);
  p.set("ops", ops);
  return p;
}

// A device whose gemm is off by one in a single entry.
class FaultyDevice final : public Device {
 public:
  const DeviceInfo& info() const override { return cpu_.info(); }
  DeviceBuffer alloc(std::size_t b) override { return cpu_.alloc(b); }
  void copy_to_device(DeviceBuffer& d, const void* s, std::size_t b) override { cpu_.copy_to_device(d, s, b); }
  void copy_to_host(void* d, const DeviceBuffer& s, std::size_t b) override { cpu_.copy_to_host(d, s, b); }
  void gemm(DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    cpu_.gemm(t, s, a, b, c);
    static_cast<double*>(c.data())[0] += 1.0;
  }
  void set_threads(int n) override { cpu_.set_threads(n); }
  void synchronize() override {}
  std::unique_ptr<DeviceEvent> create_event() override { return cpu_.create_event(); }
  double elapsed_s(const DeviceEvent& a, const DeviceEvent& b) const override { return cpu_.elapsed_s(a, b); }

 private:
  CpuDevice cpu_;
};
}  // namespace

TEST_CASE("gemm results verify in fp64 and fp32 for non-square shapes too", "[gemm]") {
  CpuDevice dev;
  dev.set_threads(1);
  for (const std::string dtype : {"fp64", "fp32"}) {
    GemmWorkload w(gemm_params(37, 53, 129, dtype, 2));
    w.setup(dev, 7);
    w.run_sample(dev);
    const Verification v = w.verify(dev);
    INFO(dtype << " max error " << v.max_error << " tolerance " << v.tolerance);
    CHECK(v.ok);
    CHECK(v.max_error <= v.tolerance);
    CHECK(w.flops_per_sample() == 2.0 * 2 * 37 * 53 * 129);
  }
}

TEST_CASE("a wrong entry in C fails verification", "[gemm]") {
  FaultyDevice dev;
  GemmWorkload w(gemm_params(16, 16, 16, "fp64", 1));
  w.setup(dev, 1);
  w.run_sample(dev);
  const Verification v = w.verify(dev);
  CHECK_FALSE(v.ok);
  CHECK(v.max_error > v.tolerance);
}

TEST_CASE("backend auto falls back to the CPU and says why; cuda without a device is an input error", "[backend]") {
  CudaStatus none;
  none.reason = "CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver, error 35)";
  const BackendChoice a = choose_backend("auto", none);
  CHECK(a.backend == "cpu");
  CHECK(a.reason == "no usable CUDA device: " + none.reason + "; running on the CPU backend");
  CHECK(choose_backend("cpu", none).backend == "cpu");
  CHECK_THROWS_WITH(choose_backend("cuda", none), "backend \"cuda\" cannot run: no usable CUDA device: " + none.reason);
}
