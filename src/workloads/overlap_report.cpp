#include "workloads/overlap_report.hpp"

#include <algorithm>

#include "core/stats.hpp"
#include "workloads/phases.hpp"

namespace gpuscale {

void add_overlap_figures(const CaseRecord& c, ReportRow& r) {
  const auto in = taking_part(c);
  const auto sums = phase_sums(c);
  const auto find = [&](const char* name) -> const std::vector<double>* {
    const auto it = std::find_if(sums.begin(), sums.end(), [&](const auto& p) { return p.first == name; });
    return it == sums.end() ? nullptr : &it->second;
  };
  const auto* compute = find(kComputePhase);
  const auto* transfer = find(kTransferPhase);
  if (!compute || !transfer) return;
  // Ranks outside the case's group did nothing: leave them out.
  const std::vector<double> time = rows_of(c.device_time_s, c.reps, in);
  const std::vector<double> cs = rows_of(*compute, c.reps, in), xs = rows_of(*transfer, c.reps, in);
  std::vector<double> exposed, overlap;
  for (std::size_t at = 0; at < time.size(); ++at) {
    exposed.push_back(std::max(0.0, time[at] - cs[at]));
    if (xs[at] > 0) overlap.push_back(std::clamp((cs[at] + xs[at] - time[at]) / xs[at], 0.0, 1.0));
  }
  r.figures.push_back({"exposed_transfer_s", median(exposed), FigureKind::seconds, "", "exposed transfer"});
  if (!overlap.empty()) r.figures.push_back({"overlap_fraction", median(overlap), FigureKind::percent, "", "overlap"});
}

namespace {
class OverlapAnalysis : public RowAnalysis {
 public:
  void row(const RunRecord&, const CaseRecord& c, const RowSettings&, ReportRow& r) const override {
    add_overlap_figures(c, r);
  }
};
}  // namespace

const RowAnalysis& overlap_analysis() {
  static const OverlapAnalysis a;
  return a;
}

}  // namespace gpuscale
