// A sample's wait for a core: the schedstat reader (thread_wait_s), the CPU backend's events that read it on the
// stream's thread (Device::waited_s), a device that does not know it, and how the benchmarks leave out the samples
// that waited and when they judge a row, from known numbers (bench/bench_verdict.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../bench/bench_verdict.hpp"
#include "common/forwarding_device.hpp"
#include "core/clock.hpp"
#include "device/cpu_device.hpp"
#include "runner/host_load.hpp"

using namespace gpuscale;

TEST_CASE("a thread's wait for a core is read from its schedstat: finite, not negative, never less later",
          "[core_wait]") {
  const double first = thread_wait_s();
  REQUIRE(std::isfinite(first));
  CHECK(first >= 0);
  CHECK(thread_wait_s() >= first);
  // Another thread reads its own: a count of its own, from its own file.
  double other = NAN;
  std::thread([&] { other = thread_wait_s(); }).join();
  CHECK(std::isfinite(other));
  CHECK(other >= 0);
}

TEST_CASE("a schedstat file's second field is the wait, in seconds, an unreadable one is NaN", "[core_wait]") {
  const std::string path = "test_core_wait_schedstat.txt";
  {
    std::ofstream out(path);
    out << "123456 4000000000 17\n";
  }
  CHECK(schedstat_wait_s(path) == 4.0);
  {
    std::ofstream out(path);
    out << "123456\n";
  }
  CHECK(std::isnan(schedstat_wait_s(path)));
  std::remove(path.c_str());
  CHECK(std::isnan(schedstat_wait_s("/proc/self/task/no-such-thread/schedstat")));
}

TEST_CASE("the CPU device knows how long its stream's thread waited for a core in a sample", "[core_wait]") {
  CpuDevice dev;
  auto ev0 = dev.create_event(), ev1 = dev.create_event();
  CHECK(std::isnan(dev.waited_s(*ev0, *ev1)));  // neither recorded yet
  std::vector<double> a(200 * 200, 1.0), b(a.size(), 0.0);
  ev0->record();
  for (int i = 0; i < 20; ++i) dev.copy_async(b.data(), a.data(), a.size() * sizeof(double), CopyKind::d2d);
  ev1->record();
  dev.synchronize();
  const double waited = dev.waited_s(*ev0, *ev1);
  CHECK(std::isfinite(waited));
  CHECK(waited >= 0);
}

TEST_CASE("events on two lanes are two threads' counts: their difference is not known", "[core_wait]") {
  CpuDevice dev;
  auto ev0 = dev.create_event(), ev1 = dev.create_event();
  ev0->record();
  dev.use_lane(Lane::copy);
  ev1->record();
  dev.use_lane(Lane::compute);
  dev.synchronize();
  CHECK(std::isfinite(dev.elapsed_s(*ev0, *ev1)));
  CHECK(std::isnan(dev.waited_s(*ev0, *ev1)));
}

TEST_CASE("the time between two events holds neither event's own reading of the wait", "[core_wait]") {
  // Back to back, the two events time the stream's step from one task to the next (30 ns here), not a schedstat
  // read (0.6-1 us here), which the time held when each event took the time after its read (0.7 us). The least of
  // many pairs, against half the least of many reads, so that no preemption on a loaded machine decides it.
  CpuDevice dev;
  auto ev0 = dev.create_event(), ev1 = dev.create_event();
  CHECK(dev.elapsed_s(*ev0, *ev0) == 0.0);
  double least_pair = INFINITY, least_read = INFINITY;
  for (int i = 0; i < 200; ++i) {
    ev0->record();
    ev1->record();
    dev.synchronize();
    const double t = dev.elapsed_s(*ev0, *ev1);
    CHECK(t >= 0);
    least_pair = std::min(least_pair, t);
    dev.host_task([&] {  // on the stream's thread, as the events read it
      const double r0 = clock_now();
      thread_wait_s();
      least_read = std::min(least_read, clock_now() - r0);
    });
    dev.synchronize();
  }
  INFO("least back-to-back pair " << least_pair * 1e9 << " ns, least schedstat read " << least_read * 1e9 << " ns");
  CHECK(least_pair < least_read / 2);
}

TEST_CASE("a device that does not know its stream's wait for a core says NaN", "[core_wait]") {
  testing::ForwardingDevice dev;  // overrides no waited_s, as the CUDA backend
  auto ev0 = dev.create_event(), ev1 = dev.create_event();
  ev0->record();
  ev1->record();
  dev.synchronize();
  CHECK(std::isnan(dev.waited_s(*ev0, *ev1)));
}

TEST_CASE("the benchmarks leave out a sample in which a rank waited 5% of it or more, on both sides alike",
          "[core_wait]") {
  using namespace gpuscale::bench;
  // Two ranks, three samples of 2 operations, [rank][sample]: rank 0 waits 4% of sample 0 (kept), 5% of sample 1
  // (left out); rank 1's wait in sample 2 is 20% (left out); a wait not known (NaN) leaves nothing out.
  const std::vector<double> t{1.0, 1.0, 1.0, 1.0, 2.0, 1.0};
  const std::vector<double> wait{0.04, 0.05, NAN, 0.0, 0.0, 0.2};
  const Samples s = keep_undisturbed(t, wait, 2, 3, 2);
  CHECK(s.all == std::vector<double>{0.5, 0.75, 0.5});
  CHECK(s.kept == std::vector<double>{0.5});
  CHECK_FALSE(disturbed(NAN, 1.0));
  CHECK(disturbed(0.05, 1.0));
  // No waits at all (a record without them): every sample kept.
  CHECK(keep_undisturbed(t, {}, 2, 3, 2).kept == s.all);
}

TEST_CASE("a row is judged when each side keeps 7 undisturbed samples and their ratio is known within the target",
          "[core_wait]") {
  using namespace gpuscale::bench;
  const auto side = [](std::vector<double> kept, std::size_t all) {
    Samples s;
    s.kept = std::move(kept);
    s.all.assign(all, 1.0);
    return s;
  };
  const std::vector<double> seven(7, 1.0), ten(10, 1.0);
  // However many were left out: 7 of 40 and 7 of 60, all alike, a ratio of exactly 1.
  const Ratio tight = ratio_of(side(seven, 40), side(seven, 60));
  CHECK(tight.value == 1.0);
  REQUIRE(tight.interval);
  CHECK(why_not_judged(side(seven, 40), side(seven, 60), tight).empty());
  // 6 kept on a side: too few for an interval.
  const Samples six = side(std::vector<double>(6, 1.0), 40);
  CHECK(why_not_judged(side(ten, 40), six, ratio_of(side(ten, 40), six)) ==
        "other work held the cores: undisturbed samples: bare 10 of 40, harness 6 of 40; a side needs 7");
  // The harness's 10 kept samples scatter 0.8-1.2: the median's 97.5 % interval of 10 is [x(2), x(9)] = [0.85, 1.15],
  // so harness/bare is within 1/1.15-1/0.85, wider than 0.95-1.05, whatever its median says (1.0).
  const Samples scattered = side({0.8, 0.85, 0.9, 0.95, 1.0, 1.0, 1.05, 1.1, 1.15, 1.2}, 40);
  const Ratio loose = ratio_of(side(ten, 40), scattered);
  CHECK(loose.value == 1.0);
  CHECK(why_not_judged(side(ten, 40), scattered, loose) ==
        "the samples scatter: harness/bare is within 0.870-1.176 (95 %), wider than the target (more --rounds "
        "narrow it)");
  // However wide, an interval wholly beyond a bound is judged: it says which way the harness is off.
  CHECK(too_loose(Interval{1.2, 1.6}).empty());
  CHECK(too_loose(Interval{0.5, 0.9}).empty());
  CHECK_FALSE(too_loose(Interval{0.9, 1.2}).empty());
}
