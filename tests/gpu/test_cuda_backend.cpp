// The CUDA backend on a real device: every supported gemm (dtype x impl,
// odd shapes included) verifies against the host reference, and every
// element of our kernels' results agrees with cuBLAS's; copies in every
// direction verify byte for byte, the async probe verifies its norms, and
// events time work; elementwise verifies at odd lengths; a CUDA graph of a
// sample replays and verifies, and a capture that waits for the device fails
// clearly and leaves the device usable; NVML reads the GPU. Exit 77
// (skipped) where no CUDA device is usable.
#include <cstdio>
#include <string>

#include "device/backend.hpp"
#include "device/capabilities.hpp"
#include "device/cuda_status.hpp"
#include "workloads/async_probe.hpp"
#include "telemetry/telemetry.hpp"
#include "workloads/copy.hpp"
#include "workloads/elementwise.hpp"
#include "workloads/gemm.hpp"
#include "common/gemm_agreement.hpp"

using namespace gpuscale;

namespace {
int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

Params gemm_params(int m, int n, int k, const std::string& dtype, const std::string& impl) {
  Params p;
  p.set("size", std::int64_t{m});
  p.set("m", std::int64_t{m});
  p.set("n", std::int64_t{n});
  p.set("k", std::int64_t{k});
  p.set("dtype", dtype);
  p.set("impl", impl);
  p.set("ops", std::int64_t{2});
  return p;
}
}  // namespace

int main() {
  const CudaStatus status = probe_cuda();
  if (!status.usable) {
    std::printf("skipped: %s\n", status.reason.c_str());
    return 77;
  }
  const BackendChoice choice = choose_backend("cuda", status);
  auto dev = make_device(choice, 0);
  CaseContext ctx{*dev};
  std::printf("device: %s %s %s\n", dev->info().name.c_str(), dev->info().uuid.c_str(), dev->info().pci_bus_id.c_str());
  expect(dev->info().kind == Backend::cuda && dev->info().uuid.rfind("GPU-", 0) == 0,
         "device info names a GPU and its UUID");

  struct Shape {
    int m, n, k;
  };
  // Whole tiles; edge tiles with rows too short for 16-byte loads; edge tiles with 16-byte rows (k and n multiples
  // of 8); and the ladder's odd size (kernels/README.md).
  for (const Shape s : {Shape{256, 256, 256}, Shape{77, 131, 45}, Shape{1024, 512, 768}, Shape{1000, 1096, 904},
                        Shape{1000, 1100, 900}}) {
    for (const auto& dtype : dtype_names()) {
      for (const auto& impl : gemm_impl_names()) {
        if (!gemm_unsupported(Backend::cuda, parse_gemm_impl(impl), parse_dtype(dtype)).empty()) continue;
        GemmWorkload w(gemm_params(s.m, s.n, s.k, dtype, impl));
        w.setup(ctx, 3);
        auto e0 = dev->create_event(), e1 = dev->create_event();
        e0->record();
        w.run_sample(ctx);
        e1->record();
        dev->synchronize();
        const Verification v = w.verify(ctx);
        char what[160];
        std::snprintf(what, sizeof what, "gemm %s %s %dx%dx%d: error %.3g (tolerance %.3g), %.3f ms", impl.c_str(),
                      dtype.c_str(), s.m, s.n, s.k, v.max_error, v.tolerance, dev->elapsed_s(*e0, *e1) * 1e3);
        expect(v.ok && dev->elapsed_s(*e0, *e1) > 0, what);
      }
    }
  }

  // Every element of each of our kernels' C agrees with cuBLAS's (tests/common/gemm_agreement.hpp).
  for (const Shape s : {Shape{77, 131, 45}, Shape{1000, 1096, 904}, Shape{1000, 1100, 900}}) {
    for (const auto& dtype : dtype_names()) {
      for (const auto& impl : gemm_impl_names()) {
        const std::string why = gemm_unsupported(Backend::cuda, parse_gemm_impl(impl), parse_dtype(dtype));
        if (impl == "vendor" || !why.empty()) continue;
        const auto r = testing::agree_with_vendor(*dev, gemm_problem(gemm_params(s.m, s.n, s.k, dtype, impl)), 11);
        char what[200];
        std::snprintf(what, sizeof what, "gemm %s %s %dx%dx%d: every element as cuBLAS's; %lld differ (first: row "
                      "%lld, column %lld)", impl.c_str(), dtype.c_str(), s.m, s.n, s.k, static_cast<long long>(r.wrong),
                      static_cast<long long>(r.first_row), static_cast<long long>(r.first_column));
        expect(r.wrong == 0, what);
      }
    }
  }

  for (const std::string dir : {"h2d", "d2h", "d2d"}) {
    for (const std::string host : {"pinned", "pageable"}) {
      Params p;
      p.set("bytes", std::int64_t{(32 << 20) + 3});
      p.set("direction", dir);
      p.set("host", host);
      p.set("ops", std::int64_t{2});
      CopyWorkload w(p);
      w.setup(ctx, 9);
      w.run_sample(ctx);
      dev->synchronize();
      expect(w.verify(ctx).ok, "copy " + dir + " " + host);
    }
  }

  for (const std::string log : {"none", "host", "device"}) {
    for (const std::string sync : {"end", "each"}) {
      Params p = gemm_params(64, 64, 64, "fp32", "vendor");
      p.set("ops", std::int64_t{50});
      p.set("sync", sync);
      p.set("log_norm", log);
      AsyncProbeWorkload w(p);
      w.setup(ctx, 4);
      w.run_sample(ctx);
      dev->synchronize();
      const Verification v = w.verify(ctx);
      expect(v.ok, "async sync=" + sync + " log_norm=" + log + " error " + std::to_string(v.max_error));
    }
  }
  for (const std::string dtype : {"fp32", "fp64"}) {
    for (const std::int64_t elements : {std::int64_t{1}, std::int64_t{1000003}, std::int64_t{1} << 22}) {
      Params p;
      p.set("elements", elements);
      p.set("dtype", dtype);
      p.set("ops", std::int64_t{7});
      ElementwiseWorkload w(p);
      w.setup(ctx, 5);
      for (int i = 0; i < 3; ++i) w.run_sample(ctx);
      const Verification v = w.verify(ctx);
      expect(v.ok, "elementwise " + dtype + " " + std::to_string(elements) + ": " + std::to_string(v.wrong_elements) +
                       " wrong");
    }
  }

  {  // A graph of one sample, replayed: the result verifies and a replay enqueues in one call.
    GemmWorkload w(gemm_params(128, 96, 64, "fp32", "vendor"));
    w.setup(ctx, 8);
    auto graph = dev->capture([&] { w.run_sample(ctx); });
    for (int i = 0; i < 3; ++i) graph->launch();
    dev->synchronize();
    expect(w.verify(ctx).ok, "gemm replayed from a CUDA graph verifies");
    std::string error;
    try {
      dev->capture([&] { dev->synchronize(); });
    } catch (const std::exception& e) {
      error = e.what();
    }
    expect(!error.empty(), "a capture that waits for the device fails: " + error);
    GemmWorkload after(gemm_params(64, 64, 64, "fp32", "vendor"));
    after.setup(ctx, 9);
    after.run_sample(ctx);
    dev->synchronize();
    expect(after.verify(ctx).ok, "the device works after a failed capture");
  }

  {  // NVML finds this GPU and reads plausible values.
    const GpuTelemetry t = open_gpu_telemetry(dev->info().pci_bus_id);
    expect(t.source != nullptr, "NVML telemetry: " + (t.unavailable.empty() ? std::string("nvml") : t.unavailable));
    if (t.source) {
      const TelemetrySample r = t.source->read();
      char what[200];
      std::snprintf(what, sizeof what, "readings: SM %.0f MHz (max %.0f), mem %.0f MHz, %.0f C, %.1f W (limit %.0f), "
                    "reasons %lld, PCIe gen %d x%d, NVLinks %d, %zu peer(s)", r.sm_clock_mhz, t.info.max_sm_clock_mhz,
                    r.mem_clock_mhz, r.temperature_c, r.power_w, t.info.power_limit_w,
                    static_cast<long long>(r.clock_event_reasons), t.info.pcie_gen, t.info.pcie_width,
                    t.info.nvlinks_active, t.info.peers.size());
      expect(r.sm_clock_mhz > 0 && r.temperature_c > 0 && r.power_w > 0 && t.info.max_sm_clock_mhz > 0, what);
    }
  }

  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
