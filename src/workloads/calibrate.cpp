#include "workloads/calibrate.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "comm/self_data_comm.hpp"
#include "core/text.hpp"
#include "device/capabilities.hpp"
#include "device/ops/multiply_add.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_s() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return NAN;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The time of one long step (setup, a check): on the CPU backend the CPU time this process spent, where it is less
// than the wall time, so that others' work on a busy host, which takes the cores in turn, does not count (the
// estimate counts their share apart: Rates::host); on a GPU the wall time, as the host waits for its copies.
class StepClock {
 public:
  explicit StepClock(bool cpu) : cpu_(cpu), wall0_(now_s()), cpu0_(process_cpu_s()) {}
  double seconds() const {
    const double wall = now_s() - wall0_, used = process_cpu_s() - cpu0_;
    return cpu_ && std::isfinite(used) && used > 0 ? std::min(wall, used) : wall;
  }

 private:
  bool cpu_;
  double wall0_, cpu0_;
};

// The median of three timings of `fn` (after one untimed call), which waits for its work.
template <class F>
double time_of(Device& dev, F fn) {
  fn();
  dev.synchronize();
  double t[3];
  for (double& x : t) {
    const double t0 = now_s();
    fn();
    dev.synchronize();
    x = now_s() - t0;
  }
  std::sort(t, t + 3);
  return t[1];
}

GemmRate measure_gemm(Device& dev, DType t, GemmImpl impl, double deadline) {
  // Seconds of one call of n x n x n, from `calls` calls enqueued back to back, as a sample enqueues them.
  auto call = [&](int n, int calls) {
    const std::size_t bytes = static_cast<std::size_t>(n) * n * dtype_size(t);
    DeviceBuffer a = dev.alloc(bytes), b = dev.alloc(bytes), c = dev.alloc(bytes);
    const std::vector<unsigned char> zeros(bytes, 0);
    dev.copy_to_device(a, zeros.data(), bytes);
    dev.copy_to_device(b, zeros.data(), bytes);
    return time_of(dev, [&] {
             for (int i = 0; i < calls; ++i) dev.gemm(impl, t, {n, n, n}, a, b, c);
           }) / calls;
  };
  GemmRate r;
  r.call_s = call(16, 100);
  // Larger until a call takes 10 ms (or the time is up): the rate of big problems.
  const int largest = dev.info().kind == Backend::cpu ? 1024 : 8192;
  double rate = 0;
  for (int n = 128; n <= largest; n *= 2) {
    const double s = call(n, 1);
    rate = std::max(rate, 2.0 * n * n * double(n) / std::max(1e-9, s - r.call_s));
    if (s > 0.01 || now_s() > deadline) break;
  }
  r.flops_s = rate;
  return r;
}

// Bytes per second of copying `bytes` of `kind` (pinned host memory for h2d).
double measure_copy(Device& dev, CopyKind kind, bool pinned, std::size_t bytes) {
  DeviceBuffer d = dev.alloc(bytes), d2 = dev.alloc(bytes);
  HostBuffer h = dev.alloc_host(bytes, pinned);
  std::fill_n(static_cast<unsigned char*>(h.data()), bytes, 1);
  dev.copy_to_device(d, h.data(), bytes);
  dev.copy_to_device(d2, h.data(), bytes);
  void* dst = kind == CopyKind::d2h ? h.data() : d2.data();
  const void* src = kind == CopyKind::h2d ? h.data() : d.data();
  return static_cast<double>(bytes) / time_of(dev, [&] { dev.copy_async(dst, src, bytes, kind); });
}

// Bytes per second a case's memory is set up and checked, as the workloads
// do it: fresh memory (the first touch of its pages costs), seeded random
// values, encoded, copied to the device, read back and compared. Timed once,
// on buffers too large for the allocator to hand back pages it already has.
double measure_fill(Device& dev, std::size_t count) {
  const StepClock clock(dev.info().kind == Backend::cpu);
  std::vector<double> v(count);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> u(-256, 255);
  for (auto& x : v) x = u(rng) / 256.0;
  std::vector<unsigned char> bytes(count * sizeof(double));
  encode(v.data(), count, DType::fp64, bytes.data());
  DeviceBuffer d = dev.alloc(bytes.size());
  dev.copy_to_device(d, bytes.data(), bytes.size());
  std::vector<unsigned char> back(bytes.size());
  dev.copy_to_host(back.data(), d, back.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < back.size(); ++i) wrong += back[i] != bytes[i];
  const double s = clock.seconds() + (wrong ? 1e-9 : 0.0);  // `wrong` used, so the check is not optimized away
  return 4.0 * static_cast<double>(bytes.size()) / s;  // four buffers of that size
}

constexpr double kSetupProbeBytes = 256.0 * 1048576;  // the most a setup measurement makes

// Bytes of memory need per second of a workload's own setup and check, on a
// copy of a case shrunk to tens of MiB (WorkloadType::small); a transfer's in
// a group of this rank alone (SelfDataComm), whose operations are copies. NaN
// where the case cannot run that way (pairs need two ranks).
double measure_setup(Device& dev, const Case& c) {
  const WorkloadType& type = find_workload(c.workload);
  const Params p = type.small(c.params);
  const MemoryNeed need = type.memory(p, dev.buffers_on_host());
  // A workload that cannot shrink its case that far is not measured (its rate stays the default): on a loaded host
  // making gigabytes of inputs took check tens of seconds.
  if (need.device_bytes + need.host_bytes > kSetupProbeBytes) return NAN;
  Group self;
  self.data = std::make_unique<SelfDataComm>(dev);
  const bool transfer = type.scope(p).has_value();
  const StepClock clock(dev.info().kind == Backend::cpu);
  auto w = type.make(p);
  CaseContext ctx{dev, transfer ? &self : nullptr};
  if (!w->skip_reason(ctx).empty()) return NAN;
  try {
    w->setup(ctx, 1);
    dev.synchronize();
    w->verify(ctx);  // device-local: fails (nothing ran), but takes the time a check takes
  } catch (const std::exception&) {
    if (!transfer) throw;
    return NAN;  // a transfer that a group of one cannot stand in for: making inputs' rate prices it
  }
  return (need.device_bytes + need.host_bytes) / std::max(1e-9, clock.seconds());
}

// The case of each workload whose setup is measured: the plan's first, or a transfer's with the most memory (a
// sweep's first case moves a few bytes, whose setup is all fixed costs).
std::map<std::string, const Case*> setup_cases(const std::vector<Case>& plan, bool buffers_on_host) {
  const auto bytes = [&](const Case& c) {
    const MemoryNeed need = find_workload(c.workload).memory(c.params, buffers_on_host);
    return need.device_bytes + need.host_bytes;
  };
  std::map<std::string, const Case*> out;
  for (const auto& c : plan) {
    const auto [it, first] = out.emplace(c.workload, &c);
    if (!first && find_workload(c.workload).scope(c.params) && bytes(c) > bytes(*it->second)) it->second = &c;
  }
  return out;
}

// The largest cache of CPU 0 in bytes (sysfs, else sysconf), 0 where neither says.
double largest_cache_bytes() {
  double largest = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    double size = 0;
    std::string unit;
    if (!(in >> size)) continue;
    in >> unit;  // "32768K", read as the number and its unit
    largest = std::max(largest, size * (unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : 1.0));
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (largest <= 0) largest = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
  return largest;
}

// Bytes per second of a memcpy on the CPU past its caches: two buffers of twice the largest cache (within 32 and
// 128 MiB), touched first, then the fastest of 5 copies: past the cache others' bursts of memory traffic slow a
// copy of a few ms by up to 4 times here and there, where the median of 3 still caught them.
double measure_copy_beyond_cache(Device& dev, double cache_bytes) {
  const auto bytes = static_cast<std::size_t>(std::min(std::max(2 * cache_bytes, 32.0 * 1048576), 128.0 * 1048576));
  DeviceBuffer a = dev.alloc(bytes), b = dev.alloc(bytes);
  const std::vector<unsigned char> ones(bytes, 1);
  dev.copy_to_device(a, ones.data(), bytes);
  dev.copy_to_device(b, ones.data(), bytes);
  double fastest = INFINITY;
  for (int i = 0; i < 6; ++i) {
    const double t0 = now_s();
    dev.copy_async(b.data(), a.data(), bytes, CopyKind::d2d);
    dev.synchronize();
    if (i > 0) fastest = std::min(fastest, now_s() - t0);  // the first: untimed, as time_of's
  }
  return static_cast<double>(bytes) / fastest;
}

// Waits until `turn` reads `value`; false at `give_up` (seconds on now_s's clock).
bool wait_turn(const std::atomic<long>& turn, long value, double give_up) {
  for (unsigned spins = 1;; ++spins) {
    if (turn.load(std::memory_order_acquire) == value) return true;
    if (spins % 1024 == 0 && now_s() > give_up) return false;
  }
}

// One-way seconds of a hand-off between two threads through shared memory (one writes a flag, the other sees it),
// as MPI's shared-memory transport passes a message between the ranks of a node. Batches of 10 round trips for up
// to 50 ms: on a busy host most find a thread descheduled, so the second fastest of them (a core's speed, as the
// other rates), NaN where fewer than 3 completed (the two threads could not run at once).
double measure_handoff_s() {
  constexpr int kTrips = 10;
  std::atomic<long> turn{0};
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    for (long seen = 0; !stop.load(std::memory_order_relaxed);) {
      const long t = turn.load(std::memory_order_acquire);
      if (t % 2 == 1 && t != seen) turn.store((seen = t) + 1, std::memory_order_release);
    }
  });
  const double give_up = now_s() + 0.05;
  std::vector<double> batches;
  long t = 0;
  for (bool on = true; on && batches.size() < 50;) {
    const double t0 = now_s();
    for (int trip = 0; on && trip < kTrips; ++trip) {
      turn.store(++t, std::memory_order_release);  // odd: the echo's turn
      on = wait_turn(turn, ++t, give_up);
    }
    if (on) batches.push_back((now_s() - t0) / (2.0 * kTrips));
  }
  stop = true;
  echo.join();
  if (batches.size() < 3) return NAN;
  std::sort(batches.begin(), batches.end());
  return batches[1];
}

// Whether the plan moves data in calls whose two ends (source and destination, send and receive buffers) overflow
// `cache_bytes`: its copies on the CPU, or its transfers.
bool plan_passes_cache(const std::vector<Case>& plan, double cache_bytes) {
  for (const auto& c : plan) {
    const SampleWork w = case_work(c, JobShape{}).sample;
    for (const auto& s : w.streams) {
      if (s.kind != kPass && call_passes_cache(s.call_bytes(), cache_bytes)) return true;
    }
    for (const auto& t : w.transfer_ops) {
      if (call_passes_cache(t.op_bytes, cache_bytes)) return true;
    }
  }
  return false;
}

// Bytes per second of fresh pages, as a reduction's temporary buffer gets them in each call (reduction_fresh_bytes):
// a buffer of twice kFreshBufferBytes allocated, written, freed; the faster of 2.
double measure_fresh_bytes_s() {
  const auto bytes = static_cast<std::size_t>(2 * kFreshBufferBytes);
  double fastest = INFINITY;
  for (int i = 0; i < 2; ++i) {
    const double t0 = now_s();
    void* p = std::malloc(bytes);
    if (p == nullptr) return 0;
    std::memset(p, 1, bytes);
    __asm__ volatile("" : : "r"(p) : "memory");  // the writes happen: the buffer is not optimised away
    std::free(p);
    fastest = std::min(fastest, now_s() - t0);
  }
  return static_cast<double>(bytes) / fastest;
}

bool plan_has_fresh_reductions(const std::vector<Case>& plan) {
  return std::any_of(plan.begin(), plan.end(), [](const Case& c) {
    const auto ops = case_work(c, JobShape{}).sample.transfer_ops;
    return std::any_of(ops.begin(), ops.end(), [](const TransferWork& t) {
      TransferWork two = t;
      two.group_size = std::max(2, t.group_size);  // the plan's shapes on one rank: as on a job of two or more
      return reduction_fresh_bytes(two) > 0;
    });
  });
}

// Within a node, MPI on the CPU backend (the only data plane this is called for) moves a message from one rank's
// memory to another's through shared memory, copying it in and out: half the host's copy rate, in the cache and
// past it (MPI's bandwidth tests on a quiet host gave 0.5 to 0.7 of it), and per operation about a hand-off between
// two cores.
// Where `fresh`, also the fresh pages of reductions' temporary buffers.
LinkRate measure_intra_link(const Rates& r, const LinkRate& assumed, bool fresh) {
  LinkRate l = assumed;
  l.bytes_s = r.stream_bytes_s.at(kDeviceCopy) / 2;
  l.beyond_cache_bytes_s = r.copy_beyond_cache_bytes_s / 2;
  std::string extra;  // past the cache, fresh pages
  if (l.beyond_cache_bytes_s > 0) {
    extra = "; " + format_sig3(l.beyond_cache_bytes_s / 1e9) + " GB/s beyond the " + format_bytes(r.cache_bytes) +
            " cache";
  }
  if (fresh) l.fresh_bytes_s = measure_fresh_bytes_s();
  if (l.fresh_bytes_s > 0) {
    extra += "; a reduction's temporary buffer of " + format_bytes(kFreshBufferBytes) + " or more: fresh pages at " +
             format_sig3(l.fresh_bytes_s / 1e9) + " GB/s in each call";
  }
  const double handoff = measure_handoff_s();
  const std::string rate = "measured, " + format_sig3(l.bytes_s / 1e9) + " GB/s (half the host's copy rate: a " +
                           "message is copied into shared memory and out" + extra + ")";
  if (std::isnan(handoff)) {
    l.text = rate + "; per operation not measured (two threads could not take turns within 50 ms: a busy host, or "
             "one CPU), assumed " + format_sig3(assumed.op_s * 1e6) + " us (MPI defaults)";
    return l;
  }
  l.op_s = handoff;
  l.measured = true;
  l.text = rate + " and " + format_sig3(handoff * 1e6) + " us per operation (a hand-off between two threads)";
  return l;
}

bool plan_has_transfers(const std::vector<Case>& plan) {
  return std::any_of(plan.begin(), plan.end(), [](const Case& c) {
    return !case_work(c, JobShape{}).sample.transfer_ops.empty();
  });
}

}  // namespace

Rates calibrate(Device& dev, const std::vector<Case>& plan, const Rates& defaults, double budget_s) {
  Rates r = defaults;
  const double deadline = now_s() + budget_s;
  dev.set_threads(1);
  std::set<std::pair<DType, GemmImpl>> kinds;
  for (const auto& c : plan) {
    for (const auto& g : case_work(c, JobShape{}).sample.gemms) {
      if (gemm_unsupported(dev.info().kind, g.impl, g.dtype).empty()) kinds.insert({g.dtype, g.impl});
    }
  }
  r.gemm.clear();  // only what was measured; other kinds take gemm_default
  for (const auto& [t, impl] : kinds) r.gemm[{t, impl}] = measure_gemm(dev, t, impl, deadline);
  const bool cpu = dev.info().kind == Backend::cpu;
  const std::size_t bytes = cpu ? (16u << 20) : (256u << 20);
  r.stream_bytes_s[kHostPinned] = measure_copy(dev, CopyKind::h2d, true, bytes);
  r.stream_bytes_s[kHostPageable] = measure_copy(dev, CopyKind::h2d, false, bytes);
  r.stream_bytes_s[kDeviceCopy] = measure_copy(dev, CopyKind::d2d, true, bytes);
  {
    const std::size_t n = bytes / sizeof(float);
    DeviceBuffer a = dev.alloc(bytes), b = dev.alloc(bytes), c = dev.alloc(bytes);
    const std::vector<unsigned char> zeros(bytes, 0);
    for (DeviceBuffer* x : {&a, &b, &c}) dev.copy_to_device(*x, zeros.data(), bytes);
    r.stream_bytes_s[kPass] =
        4.0 * static_cast<double>(bytes) / time_of(dev, [&] { multiply_add(dev, DType::fp32, a, b, c, n); });
  }
  {
    DeviceBuffer tiny = dev.alloc(64);
    const unsigned char src[64] = {};
    r.copy_call_s = time_of(dev, [&] { dev.copy_async(tiny.data(), src, sizeof src, CopyKind::h2d); });
  }
  r.fill_bytes_s = measure_fill(dev, 3u << 20);  // 24 MiB a buffer
  for (const auto& [workload, c] : setup_cases(plan, dev.buffers_on_host())) {
    const double rate = measure_setup(dev, *c);
    if (std::isfinite(rate)) r.setup_bytes_s[workload] = rate;
  }
  // After the fill and setup, whose buffers must stay fresh pages: these are past what the allocator keeps.
  if (cpu) {
    r.cache_bytes = largest_cache_bytes();
    if (r.cache_bytes > 0 && plan_passes_cache(plan, r.cache_bytes)) {
      r.copy_beyond_cache_bytes_s = measure_copy_beyond_cache(dev, r.cache_bytes);
    }
    if (r.comm == CommKind::mpi && plan_has_transfers(plan)) {
      r.intra = measure_intra_link(r, defaults.intra, plan_has_fresh_reductions(plan));
    }
  }
  r.source = std::string("measured on this ") + (cpu ? "CPU" : "GPU") + " just now";
  return r;
}

}  // namespace gpuscale
