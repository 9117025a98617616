#include "runner/case_timeout.hpp"

#include <algorithm>

namespace gpuscale {

double CaseTimeout::start_s(double warmup_s) const {
  if (!automatic()) return fixed_s;
  return kStartFloorS + 2.0 * std::max(0.0, warmup_s);
}

double CaseTimeout::timed_s(int reps, double slowest_warmup_sample_s, double warmup_s) const {
  if (!automatic()) return fixed_s;
  if (slowest_warmup_sample_s <= 0.0) return start_s(warmup_s);
  return std::max(kTimedFloorS, kFactor * std::max(reps, 1) * slowest_warmup_sample_s);
}

}  // namespace gpuscale
