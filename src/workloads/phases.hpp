// Named intervals inside a sample (e.g. "compute", "transfer"), each marked
// by two events on the lane that was current when it began and ended, so a
// workload that overlaps work on several lanes can show what ran when.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "io/phase_names.hpp"  // kComputePhase, kTransferPhase: the phases the report reads

namespace gpuscale {

class PhaseLog {
 public:
  explicit PhaseLog(Device& dev) : dev_(dev) {}

  // Workloads: an interval of `phase` begins / ends here, in the stream order
  // of the lane current at each call.
  int begin(const std::string& phase);
  void end(int interval);

  struct Interval {
    int phase = 0;  // index into names()
    double begin_s = 0.0, end_s = 0.0;  // seconds after `start`
  };
  // Runner: forgets the previous sample's intervals (their events are reused).
  void start_sample();
  // Runner, after the sample synchronized: every interval of it, relative to
  // `start`, the event recorded before the sample's work.
  std::vector<Interval> intervals(const DeviceEvent& start) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  struct Mark {
    int phase;
    DeviceEvent* begin;
    DeviceEvent* end;
  };
  DeviceEvent* next_event();

  Device& dev_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<DeviceEvent>> events_;  // created once, reused every sample
  std::size_t used_ = 0;
  std::vector<Mark> marks_;
};

// The note of a workload whose `lanes` (e.g. "compute and copy") run at once:
// on the CPU backend they are worker threads that need a core each, and a
// rank that mpirun bound to one core cannot overlap them. "" elsewhere.
std::string cpu_lanes_note(const Device& dev, const std::string& lanes);

}  // namespace gpuscale
