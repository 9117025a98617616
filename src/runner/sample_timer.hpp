// One sample of a case as the runner times it: the host clock around it,
// device events around its work (every lane's, when it uses several), and
// the phases the workload marked inside it, on the common clock.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/clock_sync.hpp"
#include "device/device.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

// The timed samples of one rank: [reps] each, seconds.
struct SampleTimes {
  std::vector<double> device, start, end, enqueue;  // start, end: common clock
  // The intervals the workload marked in them, one entry each.
  std::vector<std::int64_t> phase_sample, phase;  // phase: index into the log's names
  std::vector<double> phase_start, phase_end;     // common clock
  // Of `device`, the time the stream's thread waited for a core (Device::waited_s between the sample's two events:
  // the compute lane's thread; NaN where the backend does not know it). [reps], as device.
  std::vector<double> core_wait;
};

class SampleTimer {
 public:
  // `graph`: replayed instead of the workload's run_sample (null: eager).
  SampleTimer(Device& dev, const CommonClock& clock, Workload& w, CaseContext& ctx, PhaseLog& phases,
              DeviceGraph* graph, int reps);

  // Runs one sample and returns its device time; i >= 0 keeps it as timed sample i.
  double run(int i);
  const SampleTimes& times() const { return times_; }

 private:
  void keep(int i, double t0, double queued, double t1, double device_s);

  Device& dev_;
  const CommonClock& clock_;
  Workload& w_;
  CaseContext& ctx_;
  PhaseLog& phases_;
  DeviceGraph* graph_;
  std::unique_ptr<DeviceEvent> ev0_, ev1_;
  // A transfer's sample starts on the stream once all of it is enqueued (see Device::begin_batch).
  bool batch_;
  bool lanes_;
  SampleTimes times_;
};

}  // namespace gpuscale
