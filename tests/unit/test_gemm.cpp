// Workloads on the CPU device: correct results pass verification, wrong ones
// fail it; what the CPU backend cannot run is refused before it runs.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/forwarding_device.hpp"
#include "common/gemm_agreement.hpp"
#include "device/backend.hpp"
#include "device/capabilities.hpp"
#include "device/cpu_device.hpp"
#include "workloads/async_probe.hpp"
#include "workloads/copy.hpp"
#include "workloads/gemm.hpp"
#if GPUSCALE_HAVE_CUDA
#include "gemm_kernels.hpp"  // no CUDA header: our kernels' launch functions are plain C++ to call
#endif

using namespace gpuscale;

namespace {
Params gemm_params(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype, const std::string& impl,
                   std::int64_t ops) {
  Params p;
  p.set("size", std::int64_t{512});
  p.set("m", m);
  p.set("n", n);
  p.set("k", k);
  p.set("dtype", dtype);
  p.set("impl", impl);
  p.set("ops", ops);
  return p;
}

// A device whose gemm result is off by one in a single entry.
class FaultyDevice final : public testing::ForwardingDevice {
 public:
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    cpu_.gemm(i, t, s, a, b, c);
    cpu_.synchronize();
    static_cast<double*>(c.data())[0] += 1.0;
  }
};

// Host memory that starts out holding a sentinel byte in every page, and a
// copy that checks, when it is issued, that no 4 KiB page of a host source
// still holds only the sentinel: the workload wrote its data before timing.
class SentinelHostDevice final : public testing::ForwardingDevice {
 public:
  static constexpr unsigned char kSentinel = 0xA5;
  HostBuffer alloc_host(std::size_t b, bool pinned) override {
    HostBuffer h = cpu_.alloc_host(b, pinned);
    std::memset(h.data(), kSentinel, b);
    host_.push_back(h.data());
    return h;
  }
  void copy_async(void* d, const void* s, std::size_t b, CopyKind k) override {
    if (std::find(host_.begin(), host_.end(), s) != host_.end()) {
      const auto* p = static_cast<const unsigned char*>(s);
      for (std::size_t page = 0; page < b; page += 4096) {
        const std::size_t end = std::min(b, page + 4096);
        unwritten_pages += std::all_of(p + page, p + end, [](unsigned char x) { return x == kSentinel; });
      }
      ++checked_copies;
    }
    cpu_.copy_async(d, s, b, k);
  }
  std::vector<const void*> host_;
  int unwritten_pages = 0;
  int checked_copies = 0;
};
}  // namespace

TEST_CASE("gemm results verify for every CPU dtype and impl and non-square shapes", "[gemm]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  dev.set_threads(1);
  for (const std::string dtype : {"fp64", "fp32"}) {
    for (const std::string impl : {"vendor", "naive"}) {
      GemmWorkload w(gemm_params(37, 53, 129, dtype, impl, 2));
      w.setup(ctx, 7);
      w.run_sample(ctx);
      dev.synchronize();
      const Verification v = w.verify(ctx);
      INFO(dtype << " " << impl << ": max error " << v.max_error << " tolerance " << v.tolerance);
      CHECK(v.ok);
      CHECK(v.max_error <= v.tolerance);
      CHECK(w.flops_per_sample() == 2.0 * 2 * 37 * 53 * 129);
    }
  }
}

TEST_CASE("a wrong entry in C fails verification", "[gemm]") {
  FaultyDevice dev;
  CaseContext ctx{dev};
  GemmWorkload w(gemm_params(16, 16, 16, "fp64", "vendor", 1));
  w.setup(ctx, 1);
  w.run_sample(ctx);
  const Verification v = w.verify(ctx);
  CHECK_FALSE(v.ok);
  CHECK(v.max_error > v.tolerance);
}

// The element-by-element check gpu.cuda_backend holds our CUDA kernels to, on the CPU backend's naive loop.
TEST_CASE("every element of an impl's result is checked against the vendor's, within both results' rounding",
          "[gemm]") {
  CpuDevice dev;
  for (const char* dtype : {"fp64", "fp32"}) {
    INFO(dtype);
    const GemmProblem p = gemm_problem(gemm_params(77, 131, 45, dtype, "naive", 1));
    CHECK(testing::agree_with_vendor(dev, p, 11).wrong == 0);
    // An element nobody wrote (C starts as NaN), one off by a part in 10^3, one a few roundings off.
    const auto unwritten = testing::agree_with_vendor(dev, p, 11, [](std::vector<double>& c) { c[3 * 131 + 7] = NAN; });
    CHECK(unwritten.wrong == 1);
    CHECK(unwritten.first_row == 3);
    CHECK(unwritten.first_column == 7);
    const auto off = [](std::vector<double>& c) { c.back() += 1e-3 * (1 + std::fabs(c.back())); };
    CHECK(testing::agree_with_vendor(dev, p, 11, off).wrong == 1);
    const double ulp = std::string(dtype) == "fp64" ? 0x1p-52 : 0x1p-23;
    CHECK(testing::agree_with_vendor(dev, p, 11, [&](std::vector<double>& c) { c[0] += 4 * ulp * std::fabs(c[0]); })
              .wrong == 0);
  }
}

TEST_CASE("tolerances follow the dtype's rounding", "[gemm]") {
  CHECK(gemm_tolerance(DType::fp64, 512) == 2 * 512 * 0x1p-53);
  CHECK(gemm_tolerance(DType::fp32, 100) == 2 * 100 * 0x1p-24);
  CHECK(gemm_tolerance(DType::fp16, 100) == 2 * 100 * 0x1p-24 + 0x1p-11);
  CHECK(gemm_tolerance(DType::bf16, 100) == 2 * 100 * 0x1p-24 + 0x1p-8);
}

TEST_CASE("what the CPU backend cannot run is refused with the choices", "[gemm][capabilities]") {
  CHECK(gemm_unsupported(Backend::cpu, GemmImpl::vendor, DType::fp64).empty());
  CHECK(gemm_unsupported(Backend::cpu, GemmImpl::naive, DType::fp32).empty());
  CHECK(gemm_unsupported(Backend::cpu, GemmImpl::vendor, DType::fp16) ==
        "gemm impl 'vendor' with dtype fp16 needs the CUDA backend (the CPU backend has dtype fp64, fp32)");
  CHECK(gemm_unsupported(Backend::cpu, GemmImpl::tiled, DType::fp64) ==
        "gemm impl 'tiled' with dtype fp64 needs the CUDA backend (the CPU backend has impl vendor, naive)");
  CHECK(gemm_unsupported(Backend::cuda, GemmImpl::tensor, DType::bf16).empty());
  CHECK(gemm_unsupported(Backend::cuda, GemmImpl::tensor, DType::fp32).find("take fp16, bf16") != std::string::npos);
  CHECK(gemm_unsupported(Backend::cuda, GemmImpl::naive, DType::tf32).find("use impl vendor") != std::string::npos);
  CHECK(gemm_unsupported(Backend::cuda, GemmImpl::blocked, DType::fp64).empty());
  CHECK(gemm_unsupported(Backend::cuda, GemmImpl::blocked, DType::fp16) ==
        "gemm impl 'blocked' with dtype fp16 is not available: the register-blocked kernel takes fp64, fp32");
  for (GemmImpl i : {GemmImpl::mma, GemmImpl::mma_async}) {
    CHECK(gemm_unsupported(Backend::cuda, i, DType::bf16).empty());
    CHECK(gemm_unsupported(Backend::cuda, i, DType::fp16).empty());
    CHECK(gemm_unsupported(Backend::cuda, i, DType::fp32) == std::string("gemm impl '") + gemm_impl_name(i) +
                                                          "' with dtype fp32 is not available: the tensor-core kernels "
                                                          "(tensor, mma, mma_async) take fp16, bf16");
  }
  CHECK(gemm_unsupported(Backend::cpu, GemmImpl::mma, DType::fp32) ==
        "gemm impl 'mma' with dtype fp32 needs the CUDA backend (the CPU backend has impl vendor, naive)");
  for (const auto& i : gemm_impl_names()) CHECK(gemm_impl_name(parse_gemm_impl(i)) == i);
  for (const auto& d : dtype_names()) CHECK(gemm_unsupported(Backend::cuda, GemmImpl::vendor, parse_dtype(d)).empty());
}

#if GPUSCALE_HAVE_CUDA
// What check refuses on the CUDA backend, each kernel's launch refuses too (cudaErrorInvalidValue = 1), before it
// touches a device: the two lists cannot drift apart.
TEST_CASE("our kernels' launches refuse the dtypes check refuses, with no device needed", "[gemm][capabilities]") {
  using Launch = int (*)(DType, int, int, int, const void*, const void*, void*, void*);
  const std::pair<GemmImpl, Launch> kernels[] = {
      {GemmImpl::naive, kernels::launch_gemm_naive}, {GemmImpl::tiled, kernels::launch_gemm_tiled},
      {GemmImpl::blocked, kernels::launch_gemm_blocked}, {GemmImpl::tensor, kernels::launch_gemm_tensor},
      {GemmImpl::mma, kernels::launch_gemm_mma}, {GemmImpl::mma_async, kernels::launch_gemm_mma_async}};
  REQUIRE(std::size(kernels) + 1 == gemm_impl_names().size());  // every impl but vendor
  for (const auto& [impl, launch] : kernels) {
    for (const auto& d : dtype_names()) {
      if (gemm_unsupported(Backend::cuda, impl, parse_dtype(d)).empty()) continue;
      INFO(gemm_impl_name(impl) << " " << d);
      CHECK(launch(parse_dtype(d), 64, 64, 64, nullptr, nullptr, nullptr, nullptr) == 1);
    }
  }
}
#endif

TEST_CASE("fp16 and bf16 conversions round to nearest even and keep exact values", "[dtype]") {
  for (int k = -256; k < 256; ++k) {
    const float x = k / 256.0f;  // the generator's values: exact in both
    CHECK(half_bits_to_float(float_to_half_bits(x)) == x);
    CHECK(bf16_bits_to_float(float_to_bf16_bits(x)) == x);
  }
  CHECK(float_to_half_bits(1.0f) == 0x3c00);
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(float_to_half_bits(65520.0f) == 0x7c00);             // rounds to infinity
  CHECK(half_bits_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie: to even
  CHECK(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie: to even (up)
  CHECK(float_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(bf16_bits_to_float(float_to_bf16_bits(1.0f / 3)) == Approx(1.0f / 3).epsilon(1.0 / 256));
  double in[3] = {0.5, -1.0, 0.25}, out[3];
  unsigned short buf[3];
  encode(in, 3, DType::fp16, buf);
  decode(buf, 3, DType::fp16, out);
  CHECK(out[1] == -1.0);
}

TEST_CASE("the CPU stream runs work in order after the enqueue call returns", "[cpu][stream]") {
  CpuStream s;
  std::vector<int> order;
  std::atomic<bool> release{false};
  s.enqueue([&] {
    while (!release) std::this_thread::yield();
    order.push_back(1);
  });
  s.enqueue([&] { order.push_back(2); });
  // Both calls returned while the first task is still blocked: enqueue is asynchronous.
  release = true;
  s.synchronize();
  CHECK(order == std::vector<int>{1, 2});
  s.enqueue([] { throw std::runtime_error("task failed"); });
  CHECK_THROWS_WITH(s.synchronize(), "task failed");
  s.synchronize();  // the error is reported once
}

TEST_CASE("held work waits for release or synchronize, then runs in order", "[cpu][stream]") {
  CpuStream s;
  std::atomic<int> ran{0};
  s.hold();
  s.enqueue([&] { ran = ran * 10 + 1; });
  s.enqueue([&] { ran = ran * 10 + 2; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(ran == 0);  // held
  s.release();
  s.synchronize();
  CHECK(ran == 12);
  s.hold();
  s.enqueue([&] { ran = ran * 10 + 3; });
  s.synchronize();  // a host that waits releases the hold instead of waiting forever
  CHECK(ran == 123);
}

namespace {
// Voluntary context switches of this process's threads other than the calling one (/proc/self/task/*/status).
long other_threads_switches() {
  long total = 0;
  const std::string self = std::to_string(syscall(SYS_gettid));
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (task.path().filename() == self) continue;
    std::ifstream in(task.path() / "status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) total += std::stol(line.substr(line.find(':') + 1));
    }
  }
  return total;
}
}  // namespace

TEST_CASE("held work wakes no one: the worker sleeps until release", "[cpu][stream]") {
  // A worker woken for work it may not run goes back to sleep: two context switches a task, on the enqueuing
  // thread's core where the scheduler lets the worker preempt it. The pauses give a woken worker time to sleep again.
  CpuStream s;
  s.synchronize();  // the worker is up and idle
  const long before = other_threads_switches();
  s.hold();
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    s.enqueue([&] { ++ran; });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const long held = other_threads_switches() - before;
  CHECK(ran == 0);
  s.synchronize();
  CHECK(ran == 50);
  INFO("context switches of the worker while 50 tasks were held: " << held);
  CHECK(held <= 2);
}

TEST_CASE("copies verify in every direction and a copy that did not happen fails", "[copy]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  for (const std::string dir : {"h2d", "d2h", "d2d"}) {
    for (const std::string host : {"pinned", "pageable"}) {
      Params p;
      p.set("bytes", std::int64_t{4099});
      p.set("direction", dir);
      p.set("host", host);
      p.set("ops", std::int64_t{2});
      CopyWorkload w(p);
      w.setup(ctx, 11);
      const Verification before = w.verify(ctx);
      CHECK_FALSE(before.ok);  // nothing copied yet, whatever the allocator handed back
      CHECK(before.max_error == 4099.0);
      w.run_sample(ctx);
      dev.synchronize();
      const Verification v = w.verify(ctx);
      INFO(dir << " " << host);
      CHECK(v.ok);
      CHECK(v.max_error == 0.0);
      CHECK(w.bytes_per_sample() == 2 * 4099.0);
      CHECK(w.note(ctx).find("memcpy") != std::string::npos);
    }
  }
}

TEST_CASE("a copy larger than its staging buffer fills and checks every part of device memory", "[copy]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  const auto bytes = static_cast<std::int64_t>(kCopyStageBytes + 4099);  // two parts, the second not whole words
  for (const std::string dir : {"d2d", "h2d"}) {
    Params p;
    p.set("bytes", bytes);
    p.set("direction", dir);
    p.set("host", std::string("pageable"));
    p.set("ops", std::int64_t{1});
    CopyWorkload w(p);
    w.setup(ctx, 7);
    INFO(dir);
    CHECK(w.verify(ctx).max_error == static_cast<double>(bytes));  // the complement in every part
    w.run_sample(ctx);
    dev.synchronize();
    CHECK(w.verify(ctx).ok);
  }
}

TEST_CASE("the async probe verifies C and the norms it logged", "[async]") {
  CpuDevice dev;
  CaseContext ctx{dev};
  for (const std::string log : {"none", "host", "device"}) {
    for (const std::string sync : {"end", "each"}) {
      Params p = gemm_params(24, 24, 24, "fp64", "vendor", 5);
      p.set("sync", sync);
      p.set("log_norm", log);
      AsyncProbeWorkload w(p);
      w.setup(ctx, 5);
      INFO(log << " " << sync);
      CHECK_FALSE(w.verify(ctx).ok);  // nothing ran yet: C is NaN, and so is any logged norm
      w.run_sample(ctx);
      dev.synchronize();
      const Verification v = w.verify(ctx);
      INFO(log << " " << sync << ": " << v.max_error);
      CHECK(v.ok);
    }
  }
}

TEST_CASE("backend auto falls back to the CPU and says why and cuda without a device is an input error", "[backend]") {
  CudaStatus none;
  none.reason = "no NVIDIA driver found (libcuda.so.1 not loadable)";
  const BackendChoice a = choose_backend("auto", none);
  CHECK(a.backend == Backend::cpu);
  CHECK(a.reason == "no usable CUDA device: " + none.reason + "; running on the CPU backend");
  CHECK(choose_backend("cpu", none).backend == Backend::cpu);
  CHECK_THROWS_WITH(choose_backend("cuda", none), "backend \"cuda\" cannot run: no usable CUDA device: " + none.reason);
}

TEST_CASE("the CPU backend records no graphs and says so", "[graph]") {
  CpuDevice dev;
  bool ran = false;
  CHECK_THROWS_WITH(dev.capture([&] { ran = true; }),
                    "the cpu backend cannot record work into a graph (CUDA graphs need the CUDA backend)");
  CHECK_FALSE(ran);
}

TEST_CASE("host memory of a copy holds its data in every page before the first copy is issued", "[copy]") {
  // A never-written pageable buffer maps the kernel's zero page, and copying
  // from it reports bandwidth no real data reaches (docs/metrics.md).
  for (const std::string host : {"pageable", "pinned"}) {
    SentinelHostDevice dev;
    CaseContext ctx{dev};
    Params p;
    p.set("bytes", std::int64_t{5 * 4096 + 7});
    p.set("direction", std::string("h2d"));
    p.set("host", host);
    p.set("ops", std::int64_t{2});
    CopyWorkload w(p);
    w.setup(ctx, 3);
    w.run_sample(ctx);
    dev.synchronize();
    INFO(host);
    CHECK(dev.checked_copies == 2);
    CHECK(dev.unwritten_pages == 0);
    CHECK(w.verify(ctx).ok);
  }
}
