// Several streams (lanes) per device on the CPU backend: work on different
// lanes runs at the same time, Device::wait orders it, events and phases
// record on the lane current at the time, and the pipeline workload's
// copies overlap its matmuls only when asked to.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "common/forwarding_device.hpp"
#include "device/cpu_device.hpp"
#include "workloads/phases.hpp"
#include "workloads/pipeline.hpp"

using namespace gpuscale;

namespace {
Params pipeline_params(bool overlap) {
  Params p;
  p.set("size", std::int64_t{192});
  p.set("dtype", std::string("fp64"));
  p.set("impl", std::string("vendor"));
  p.set("ops", std::int64_t{8});
  p.set("overlap", overlap);
  p.set("host", std::string("pageable"));
  return p;
}

struct Timed {
  std::vector<PhaseLog::Interval> intervals;
  std::vector<std::string> names;
};

// One pipeline sample with its phases, as the runner times it.
Timed pipeline_sample(Device& dev, PipelineWorkload& w, PhaseLog& log) {
  CaseContext ctx{dev};
  ctx.phases = &log;
  log.start_sample();
  auto ev0 = dev.create_event();
  ev0->record();
  dev.wait(Lane::copy, Lane::compute);
  w.run_sample(ctx);
  dev.join_lanes();
  dev.synchronize();
  return {log.intervals(*ev0), log.names()};
}

bool overlaps(const PhaseLog::Interval& a, const PhaseLog::Interval& b) {
  return a.begin_s < b.end_s && b.begin_s < a.end_s;
}
}  // namespace

TEST_CASE("work on two lanes runs at the same time", "[lanes]") {
  CpuDevice dev;
  std::atomic<bool> copy_ran{false};
  std::atomic<bool> compute_saw_copy{false};
  // The compute lane waits (up to 5 s) for a task enqueued after it on the copy lane.
  dev.host_task([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!copy_ran && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    compute_saw_copy = copy_ran.load();
  });
  dev.use_lane(Lane::copy);
  dev.host_task([&] { copy_ran = true; });
  dev.use_lane(Lane::compute);
  dev.synchronize();
  CHECK(compute_saw_copy);
}

TEST_CASE("wait orders one lane after the work enqueued so far on another", "[lanes]") {
  CpuDevice dev;
  std::atomic<int> step{0};
  std::atomic<int> seen_by_copy{-1};
  dev.host_task([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    step = 1;
  });
  dev.wait(Lane::copy, Lane::compute);
  dev.use_lane(Lane::copy);
  dev.host_task([&] { seen_by_copy = step.load(); });
  dev.use_lane(Lane::compute);
  // Enqueued after the wait: the copy lane does not wait for it, so it can wait for the copy lane.
  std::atomic<bool> copy_first{false};
  dev.host_task([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (seen_by_copy < 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    copy_first = seen_by_copy >= 0;
  });
  dev.synchronize();
  CHECK(seen_by_copy == 1);
  CHECK(copy_first);
}

TEST_CASE("synchronize waits for every lane and reports an error from any", "[lanes]") {
  CpuDevice dev;
  std::atomic<bool> done{false};
  dev.use_lane(Lane::comm);
  dev.host_task([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done = true;
  });
  dev.use_lane(Lane::copy);
  dev.host_task([] { throw std::runtime_error("copy lane failed"); });
  dev.use_lane(Lane::compute);
  CHECK_THROWS_WITH(dev.synchronize(), "copy lane failed");
  CHECK(done);
  dev.synchronize();  // reported once
}

TEST_CASE("phase intervals are timed by events on their lane, misuse is an error", "[lanes][phases]") {
  CpuDevice dev;
  PhaseLog log(dev);
  auto ev0 = dev.create_event();
  ev0->record();
  const int a = log.begin("compute");
  dev.host_task([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  log.end(a);
  dev.synchronize();
  auto iv = log.intervals(*ev0);
  REQUIRE(iv.size() == 1);
  CHECK(log.names() == std::vector<std::string>{"compute"});
  CHECK(iv[0].begin_s >= 0.0);
  CHECK(iv[0].end_s - iv[0].begin_s >= 0.019);
  CHECK_THROWS_WITH(log.end(a), "phase interval 0 was not begun or has ended already");
  log.start_sample();
  log.begin("transfer");
  dev.synchronize();
  CHECK_THROWS_WITH(log.intervals(*ev0), "phase 'transfer' began in a sample and never ended");
}

TEST_CASE("pipeline: with overlap = false no copy overlaps a matmul, results verify", "[lanes][pipeline]") {
  for (const bool overlap : {false, true}) {
    CpuDevice dev;
    dev.set_threads(1);
    CaseContext ctx{dev};
    PipelineWorkload w(PipelineParams::from(pipeline_params(overlap)));
    w.setup(ctx, 3);
    CHECK_FALSE(w.verify(ctx).ok);  // nothing copied yet: the host buffers hold NaN
    PhaseLog log(dev);
    for (int sample = 0; sample < 3; ++sample) {
      const Timed t = pipeline_sample(dev, w, log);
      REQUIRE(t.names == std::vector<std::string>{"compute", "transfer"});
      REQUIRE(t.intervals.size() == 16);
      int overlapping = 0;
      for (const auto& c : t.intervals) {
        CHECK(c.end_s >= c.begin_s);
        if (c.phase != 0) continue;
        for (const auto& x : t.intervals) overlapping += x.phase == 1 && overlaps(c, x);
      }
      if (!overlap) CHECK(overlapping == 0);  // with overlap, how much depends on free cores: see below
    }
    CHECK(w.verify(ctx).ok);
    CHECK(w.bytes_per_sample() == 8.0 * 192 * 192 * 8);
    CHECK(w.flops_per_sample() == 8.0 * 2 * 192 * 192 * 192);
  }
}

TEST_CASE("pipeline: with overlap = true each copy runs while the next matmul waits for it", "[lanes][pipeline]") {
  // The test device holds matmul i until copy i-1 has landed: only a pipeline
  // whose copies do not wait for later matmuls gets through without a timeout.
  for (const bool overlap : {true, false}) {
    testing::HandshakeDevice dev(8);
    CaseContext ctx{dev};
    PipelineWorkload w(PipelineParams::from(pipeline_params(overlap)));
    w.setup(ctx, 4);
    PhaseLog log(dev);
    const auto iv = pipeline_sample(dev, w, log).intervals;
    INFO("overlap = " << overlap);
    CHECK(dev.timed_out == !overlap);
    int overlapping = 0;
    for (const auto& c : iv) {
      for (const auto& x : iv) overlapping += c.phase == 0 && x.phase == 1 && overlaps(c, x);
    }
    if (overlap) {
      CHECK(overlapping >= 7);  // copy i inside matmul i+1's interval, for i < 7
    } else {
      CHECK(overlapping == 0);
    }
    CHECK(w.verify(ctx).ok);
  }
}
