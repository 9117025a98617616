// The gemv workload on the CPU device: y = A x verifies for fp32 and fp64 on
// shapes that are not multiples of any vector width, a wrong element of y or
// a product that never ran fails it, and bf16 is refused before a case runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "device/cpu_device.hpp"
#include "workloads/gemv.hpp"
#include "workloads/gemv_op.hpp"

using namespace gpuscale;

namespace {
Params gemv_params(std::int64_t m, std::int64_t n, const std::string& dtype, std::int64_t ops) {
  Params p;
  p.set("m", m);
  p.set("n", n);
  p.set("dtype", dtype);
  p.set("ops", ops);
  return p;
}
}  // namespace

TEST_CASE("y = A x verifies for fp32 and fp64, and its rate counts A, x and y once a product", "[gemv]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  for (const std::string dtype : {"fp32", "fp64"}) {
    GemvWorkload w(GemvParams::from(gemv_params(131, 97, dtype, 3)));
    w.setup(ctx, 5);
    w.run_sample(ctx);
    dev.synchronize();
    const Verification v = w.verify(ctx);
    INFO(dtype << ": max error " << v.max_error << ", tolerance " << v.tolerance);
    CHECK(v.ok);
    CHECK(v.wrong_elements == 0);
    CHECK(v.max_error <= v.tolerance);
    const double e = dtype == "fp32" ? 4 : 8;
    CHECK(w.bytes_per_sample() == 3 * (131.0 * 97 + 97 + 131) * e);
    CHECK(w.flops_per_sample() == 0);
  }
}

TEST_CASE("the op computes y = A x as the reference does, row by row", "[gemv]") {
  CpuDevice dev;
  const int m = 3, n = 2;
  const std::vector<double> a{1, 2, 3, 4, 5, 6}, x{0.5, -1};
  DeviceBuffer da = dev.alloc(sizeof a[0] * a.size()), dx = dev.alloc(sizeof x[0] * x.size()), dy = dev.alloc(3 * 8);
  dev.copy_to_device(da, a.data(), da.bytes());
  dev.copy_to_device(dx, x.data(), dx.bytes());
  gemv(dev, DType::fp64, m, n, da, dx, dy);
  std::vector<double> y(3);
  dev.copy_to_host(y.data(), dy, dy.bytes());
  CHECK(y == std::vector<double>{-1.5, -2.5, -3.5});
  CHECK_THROWS_WITH(gemv(dev, DType::fp64, 4, n, da, dx, dy), "gemv: a buffer is smaller than the shape");
}

TEST_CASE("a wrong element of y, or no product at all, fails verification", "[gemv]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  GemvWorkload w(GemvParams::from(gemv_params(64, 40, "fp32", 1)));
  w.setup(ctx, 9);
  CHECK_FALSE(w.verify(ctx).ok);  // y is still NaN: nothing ran
  w.run_sample(ctx);
  dev.synchronize();
  REQUIRE(w.verify(ctx).ok);
  static_cast<float*>(w.result().data())[17] += 1.0f / 64;
  const Verification v = w.verify(ctx);
  CHECK_FALSE(v.ok);
  CHECK(v.wrong_elements == 1);
}

TEST_CASE("gemv in bf16 is refused on the CPU backend before a case runs, and by the op itself", "[gemv]") {
  const WorkloadType& t = find_workload("gemv");
  CHECK(t.unsupported(gemv_params(8, 8, "bf16", 1), {Backend::cpu, CommKind::mpi}) ==
        "gemv in bf16 needs the CUDA backend (cuBLAS); the CPU backend has fp32 and fp64");
  CHECK(t.unsupported(gemv_params(8, 8, "bf16", 1), {Backend::cuda, CommKind::nccl}).empty());
  CHECK(t.unsupported(gemv_params(8, 8, "fp64", 1), {Backend::cpu, CommKind::mpi}).empty());
  CpuDevice dev;
  DeviceBuffer a = dev.alloc(128), x = dev.alloc(16), y = dev.alloc(16);
  CHECK_THROWS_WITH(gemv(dev, DType::bf16, 8, 8, a, x, y), "gemv bf16 is unsupported on the cpu backend");
}

TEST_CASE("gemv's work is its own kind, priced as a pass until a model fits it", "[gemv][estimate]") {
  const WorkloadType& t = find_workload("gemv");
  const CaseWork w = t.work(gemv_params(1000, 500, "fp32", 4), JobShape{});
  REQUIRE(w.sample.streams.size() == 1);
  CHECK(w.sample.streams[0].kind == "gemv");
  CHECK(w.sample.streams[0].calls == 4);
  CHECK(w.sample.streams[0].bytes == 4 * (1000.0 * 500 + 500 + 1000) * 4);
  CHECK(find_stream_kind("gemv").priced_as == "pass");
  CHECK(w.sample.gemms.empty());
}
