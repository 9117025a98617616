#include "runner/sample_timer.hpp"

namespace gpuscale {

SampleTimer::SampleTimer(Device& dev, const CommonClock& clock, Workload& w, CaseContext& ctx, PhaseLog& phases,
                         DeviceGraph* graph, int reps)
    : dev_(dev),
      clock_(clock),
      w_(w),
      ctx_(ctx),
      phases_(phases),
      graph_(graph),
      ev0_(dev.create_event()),
      ev1_(dev.create_event()),
      batch_(ctx.group != nullptr),
      lanes_(w.uses_lanes()) {
  for (auto* v : {&times_.device, &times_.start, &times_.end, &times_.enqueue, &times_.core_wait}) {
    v->resize(static_cast<std::size_t>(reps));
  }
}

double SampleTimer::run(int i) {
  const double t0 = clock_.now();
  if (batch_) dev_.begin_batch();
  dev_.use_lane(Lane::compute);
  phases_.start_sample();
  ev0_->record();
  if (lanes_) {  // every lane starts with the sample...
    dev_.wait(Lane::copy, Lane::compute);
    dev_.wait(Lane::comm, Lane::compute);
  }
  if (graph_) {
    graph_->launch();
  } else {
    w_.run_sample(ctx_);
  }
  dev_.use_lane(Lane::compute);
  if (lanes_) dev_.join_lanes();  // ...and ends before its end event
  ev1_->record();
  if (batch_) dev_.end_batch();
  const double queued = clock_.now();  // the launch calls have returned
  ctx_.synchronize();
  const double t1 = clock_.now();
  const double device_s = dev_.elapsed_s(*ev0_, *ev1_);
  if (i >= 0) keep(i, t0, queued, t1, device_s);
  return device_s;
}

void SampleTimer::keep(int i, double t0, double queued, double t1, double device_s) {
  const auto at = static_cast<std::size_t>(i);
  times_.start[at] = t0;
  times_.end[at] = t1;
  times_.enqueue[at] = queued - t0;
  times_.device[at] = device_s;
  times_.core_wait[at] = dev_.waited_s(*ev0_, *ev1_);
  // On the common clock: the sample's start plus the device time since its first event.
  for (const auto& iv : phases_.intervals(*ev0_)) {
    times_.phase_sample.push_back(i);
    times_.phase.push_back(iv.phase);
    times_.phase_start.push_back(t0 + iv.begin_s);
    times_.phase_end.push_back(t0 + iv.end_s);
  }
}

}  // namespace gpuscale
