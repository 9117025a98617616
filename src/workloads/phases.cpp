#include "workloads/phases.hpp"

#include <sched.h>

#include <algorithm>

#include "core/error.hpp"

namespace gpuscale {

DeviceEvent* PhaseLog::next_event() {
  if (used_ == events_.size()) events_.push_back(dev_.create_event());
  return events_[used_++].get();
}

int PhaseLog::begin(const std::string& phase) {
  auto it = std::find(names_.begin(), names_.end(), phase);
  const int index = static_cast<int>(it - names_.begin());
  if (it == names_.end()) names_.push_back(phase);
  DeviceEvent* e = next_event();
  e->record();
  marks_.push_back({index, e, nullptr});
  return static_cast<int>(marks_.size()) - 1;
}

void PhaseLog::end(int interval) {
  if (interval < 0 || static_cast<std::size_t>(interval) >= marks_.size() || marks_[interval].end) {
    throw RuntimeError("phase interval " + std::to_string(interval) + " was not begun or has ended already");
  }
  DeviceEvent* e = next_event();
  e->record();
  marks_[interval].end = e;
}

void PhaseLog::start_sample() {
  used_ = 0;
  marks_.clear();
}

std::vector<PhaseLog::Interval> PhaseLog::intervals(const DeviceEvent& start) const {
  std::vector<Interval> out;
  for (const auto& m : marks_) {
    if (!m.end) throw RuntimeError("phase '" + names_[m.phase] + "' began in a sample and never ended");
    out.push_back({m.phase, dev_.elapsed_s(start, *m.begin), dev_.elapsed_s(start, *m.end)});
  }
  return out;
}

std::string cpu_lanes_note(const Device& dev, const std::string& lanes) {
  if (dev.info().kind != Backend::cpu) return "";
  std::string n = "CPU backend: the " + lanes + " lanes are worker threads; they overlap only where each has a core "
                  "of its own";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2) {
    n += ", and this rank may run on 1 core only (mpirun binds a rank to a core by default: use --bind-to none or "
         "--map-by slot:PE=2)";
  }
  return n;
}

}  // namespace gpuscale
