#include "runner/runner.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

CaseRecord Runner::run(const Case& c) {
  const int warmup = static_cast<int>(c.params.get_int("warmup"));
  const int reps = static_cast<int>(c.params.get_int("reps"));
  dev_.set_threads(static_cast<int>(c.params.get_int("threads")));

  std::unique_ptr<Workload> w = find_workload(c.workload).make(c.params);
  // Different inputs per rank, the same ones on every run with this seed.
  w->setup(dev_, seed_ + 1000003ULL * static_cast<std::uint64_t>(comm_.rank()) + c.index);
  // No rank's timed work may overlap another rank's setup (allocation, input generation).
  comm_.idle_barrier();

  std::vector<double> time(reps), start(reps), end(reps), enqueue(reps);
  auto ev0 = dev_.create_event();
  auto ev1 = dev_.create_event();
  auto sample = [&](int i) {
    const double t0 = clock_.now();
    ev0->record();
    w->run_sample(dev_);
    ev1->record();
    const double queued = clock_.now();  // the launch calls have returned
    dev_.synchronize();
    const double t1 = clock_.now();
    if (i >= 0) {
      start[i] = t0;
      end[i] = t1;
      enqueue[i] = queued - t0;
      time[i] = dev_.elapsed_s(*ev0, *ev1);
    }
  };

  if (c.mode == "parallel") {
    for (int i = 0; i < warmup; ++i) sample(-1);
    for (int i = 0; i < reps; ++i) {
      comm_.barrier();
      sample(i);
    }
  } else if (c.mode == "serial") {
    for (int turn = 0; turn < comm_.size(); ++turn) {
      if (turn == comm_.rank()) {
        for (int i = 0; i < warmup; ++i) sample(-1);
        for (int i = 0; i < reps; ++i) sample(i);
      }
      comm_.idle_barrier();
    }
  } else {
    throw RuntimeError("unknown mode '" + c.mode + "'");
  }
  const Verification v = w->verify(dev_);

  CaseRecord rec;
  rec.index = c.index;
  rec.experiment = c.experiment;
  rec.workload = c.workload;
  rec.mode = c.mode;
  rec.backend = backend_;
  rec.ranks = comm_.size();
  rec.nodes = comm_.node_count();
  rec.reps = reps;
  rec.warmup = warmup;
  rec.params = c.params;
  rec.flops_per_sample = w->flops_per_sample();
  rec.bytes_per_sample = w->bytes_per_sample();
  rec.verify_tolerance = v.tolerance;
  rec.note = w->note(dev_);
  rec.device_time_s = comm_.gather(time);
  rec.enqueue_s = comm_.gather(enqueue);
  rec.wall_start_s = comm_.gather(start);
  rec.wall_end_s = comm_.gather(end);
  rec.verify_error = comm_.gather(std::vector<double>{v.max_error});
  const bool failed = comm_.any(!v.ok);
  rec.status = failed ? "verify-failed" : "ok";
  if (comm_.rank() != 0) {
    rec.device_time_s = time;
    rec.enqueue_s = enqueue;
    rec.wall_start_s = start;
    rec.wall_end_s = end;
    rec.verify_error = {v.max_error};
  }
  return rec;
}

}  // namespace gpuscale
