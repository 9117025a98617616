// The elementwise workload on the CPU device: r += a*b verifies after any
// number of samples, one pass missing or one wrong element fails it, and the
// threads of a pass change nothing in the result.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "device/cpu_device.hpp"
#include "device/ops/multiply_add.hpp"
#include "workloads/elementwise.hpp"

using namespace gpuscale;

namespace {
Params elementwise_params(std::int64_t elements, const std::string& dtype, std::int64_t ops) {
  Params p;
  p.set("elements", elements);
  p.set("dtype", dtype);
  p.set("ops", ops);
  return p;
}

// Subtracts a*b from every element of r, exactly: as if one pass had not run.
template <class T>
void undo_one_pass(const ElementwiseWorkload& w, std::uint64_t seed, std::size_t count) {
  T* r = static_cast<T*>(w.result().data());
  for (std::size_t i = 0; i < count; ++i) {
    const ElementwiseInputs in = elementwise_inputs(seed, i);
    r[i] = static_cast<T>(r[i] - in.a * in.b);
  }
}
}  // namespace

TEST_CASE("r += a*b verifies exactly for fp32 and fp64 after warm-up and timed samples", "[elementwise]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  dev.set_threads(1);
  for (const std::string dtype : {"fp32", "fp64"}) {
    ElementwiseWorkload w(elementwise_params(1003, dtype, 3));  // not a multiple of any vector width
    w.setup(ctx, 5);
    for (int sample = 0; sample < 4; ++sample) {
      w.run_sample(ctx);
      dev.synchronize();
    }
    const Verification v = w.verify(ctx);
    INFO(dtype << ": max error " << v.max_error);
    CHECK(v.ok);
    CHECK(v.tolerance == 0.0);
    CHECK(v.max_error == 0.0);
  }
}

TEST_CASE("one pass missing or one wrong element fails verification", "[elementwise]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  const std::size_t n = 777;
  for (const std::string dtype : {"fp32", "fp64"}) {
    INFO(dtype);
    ElementwiseWorkload w(elementwise_params(n, dtype, 4));
    w.setup(ctx, 9);
    w.run_sample(ctx);
    w.run_sample(ctx);
    dev.synchronize();
    REQUIRE(w.verify(ctx).ok);

    if (dtype == "fp32") {
      undo_one_pass<float>(w, 9, n);
    } else {
      undo_one_pass<double>(w, 9, n);
    }
    const Verification missing = w.verify(ctx);
    CHECK_FALSE(missing.ok);
    CHECK(missing.wrong_elements == static_cast<std::int64_t>(n));  // a and b are never 0: every element moved

    w.run_sample(ctx);  // r is now one pass behind the count, as above
    dev.synchronize();
    CHECK_FALSE(w.verify(ctx).ok);
  }

  ElementwiseWorkload w(elementwise_params(n, "fp32", 2));
  w.setup(ctx, 3);
  w.run_sample(ctx);
  dev.synchronize();
  static_cast<float*>(w.result().data())[n - 1] += 1.0f / 16;  // the last element: a tail a kernel might skip
  const Verification v = w.verify(ctx);
  CHECK_FALSE(v.ok);
  CHECK(v.wrong_elements == 1);
  CHECK(v.max_error > 0.0);

  static_cast<float*>(w.result().data())[n - 1] = NAN;
  CHECK_FALSE(w.verify(ctx).ok);
}

TEST_CASE("the tolerance is 0 while values stay exact, then n * eps", "[elementwise]") {
  CHECK(elementwise_tolerance(DType::fp32, 6000) == 0.0);  // the lesson: 1000 ops, 1 + 5 samples
  CHECK(elementwise_tolerance(DType::fp32, (std::int64_t{1} << 20) - 2) == 0.0);
  CHECK(elementwise_tolerance(DType::fp32, std::int64_t{1} << 20) == std::ldexp(1.0, 20 - 23));
  CHECK(elementwise_tolerance(DType::fp64, std::int64_t{1} << 40) == 0.0);
  CHECK(elementwise_tolerance(DType::fp64, std::int64_t{1} << 49) == std::ldexp(1.0, 49 - 52));
}

TEST_CASE("inputs are nonzero quarters and sixteenths of r in [-1, 1]", "[elementwise]") {
  for (std::size_t i = 0; i < 10000; ++i) {
    const ElementwiseInputs in = elementwise_inputs(42, i);
    for (double x : {in.a, in.b}) {
      CHECK(x != 0.0);
      CHECK(std::abs(x) <= 1.0);
      CHECK(x * 4 == std::round(x * 4));
    }
    CHECK(std::abs(in.r0) <= 1.0);
    CHECK(in.r0 * 16 == std::round(in.r0 * 16));
  }
  int same = 0;  // another seed (another rank) gets other inputs
  for (std::size_t i = 0; i < 100; ++i) {
    const ElementwiseInputs x = elementwise_inputs(1, i), y = elementwise_inputs(2, i);
    same += x.a == y.a && x.b == y.b && x.r0 == y.r0;
  }
  CHECK(same < 10);
}

TEST_CASE("bytes per sample count a, b and r read and r written, flops are not the rate", "[elementwise]") {
  ElementwiseWorkload f32(elementwise_params(1000, "fp32", 10));
  CHECK(f32.bytes_per_sample() == 10.0 * 1000 * 4 * 4);
  CHECK(f32.flops_per_sample() == 0.0);
  ElementwiseWorkload f64(elementwise_params(1000, "fp64", 3));
  CHECK(f64.bytes_per_sample() == 3.0 * 1000 * 4 * 8);
}

TEST_CASE("one thread and two threads give the same r", "[elementwise][cpu]") {
  // Large enough for two threads (1 Mi elements each), not a multiple of a cache line.
  const std::size_t n = (std::size_t{1} << 21) + 13;
  for (const DType t : {DType::fp32, DType::fp64}) {
    const std::size_t bytes = n * dtype_size(t);
    std::vector<std::vector<unsigned char>> results;
    for (int threads : {1, 2}) {
      CpuDevice dev;
      dev.set_threads(threads);
      DeviceBuffer a = dev.alloc(bytes), b = dev.alloc(bytes), r = dev.alloc(bytes);
      for (std::size_t i = 0; i < n; ++i) {
        const ElementwiseInputs in = elementwise_inputs(7, i);
        if (t == DType::fp32) {
          static_cast<float*>(a.data())[i] = static_cast<float>(in.a);
          static_cast<float*>(b.data())[i] = static_cast<float>(in.b);
          static_cast<float*>(r.data())[i] = static_cast<float>(in.r0);
        } else {
          static_cast<double*>(a.data())[i] = in.a;
          static_cast<double*>(b.data())[i] = in.b;
          static_cast<double*>(r.data())[i] = in.r0;
        }
      }
      for (int pass = 0; pass < 3; ++pass) multiply_add(dev, t, a, b, r, n);
      dev.synchronize();
      const auto* p = static_cast<const unsigned char*>(r.data());
      results.emplace_back(p, p + bytes);
      const ElementwiseInputs last = elementwise_inputs(7, n - 1);
      const double got = t == DType::fp32 ? static_cast<const float*>(r.data())[n - 1]
                                          : static_cast<const double*>(r.data())[n - 1];
      CHECK(got == last.r0 + 3 * last.a * last.b);  // the tail is covered
    }
    CHECK(results[0] == results[1]);
  }

  CpuDevice dev;
  dev.set_threads(2);
  CaseContext ctx{dev};
  ElementwiseWorkload w(elementwise_params(static_cast<std::int64_t>(n), "fp32", 2));
  w.setup(ctx, 1);
  w.run_sample(ctx);
  w.run_sample(ctx);
  CHECK(w.verify(ctx).ok);
}

TEST_CASE("multiply_add refuses other dtypes and short buffers", "[elementwise][cpu]") {
  CpuDevice dev;
  DeviceBuffer a = dev.alloc(64), b = dev.alloc(64), r = dev.alloc(64);
  CHECK_THROWS_AS(multiply_add(dev, DType::fp16, a, b, r, 8), RuntimeError);
  CHECK_THROWS_WITH(multiply_add(dev, DType::fp32, a, b, r, 17), "multiply_add: a buffer is smaller than the count");
  multiply_add(dev, DType::fp64, a, b, r, 0);  // nothing to do is fine
  dev.synchronize();
}

TEST_CASE("an element count past any memory is refused before anything is allocated", "[elementwise]") {
  const RunTarget cpu{Backend::cpu, CommKind::mpi};
  CHECK(elementwise_type().unsupported(elementwise_params(std::int64_t{1} << 40, "fp64", 1), cpu).empty());
  CHECK(elementwise_type().unsupported(elementwise_params((std::int64_t{1} << 40) + 1, "fp64", 1), cpu) ==
        "key 'elements' = 1099511627777 is too large (at most 1099511627776)");
}
