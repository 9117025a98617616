#include "runner/case_timeout.hpp"

#include <algorithm>

namespace gpuscale {

double CaseTimeout::start_s(double warmup_s) const {
  if (!automatic()) return fixed_s;
  return kStartFloorS + 2.0 * std::max(0.0, warmup_s);
}

double CaseTimeout::timed_s(double slowest_s, double warmup_s) const {
  if (!automatic()) return fixed_s;
  if (slowest_s <= 0.0) return start_s(warmup_s);
  return std::max(kTimedFloorS, kFactor * slowest_s);
}

double CaseTimeout::waiting_s(int samples, double slowest_s, double warmup_s) const {
  if (!automatic()) return fixed_s;
  if (slowest_s <= 0.0) return kFactor * start_s(warmup_s);
  return kFactor * std::max(kTimedFloorS, std::max(samples, 1) * slowest_s);
}

double CaseTimeout::write_s(double bytes) const {
  return (automatic() ? kStartFloorS : fixed_s) + std::max(0.0, bytes) / kSlowWriteBytesPerS;
}

double CaseTimeout::edge_s() const { return automatic() ? kRunEdgeTimeoutS : std::max(kRunEdgeFloorS, fixed_s); }

}  // namespace gpuscale
