#include "workloads/overlap_report.hpp"

#include <algorithm>

#include "report/breakdown.hpp"
#include "workloads/phases.hpp"

namespace gpuscale {

void add_overlap_figures(const CaseRecord& c, ReportRow& r) {
  const auto marked = [&](const char* name) {
    return std::any_of(r.phase_s.begin(), r.phase_s.end(), [&](const auto& p) { return p.first == name; });
  };
  if (!marked(kComputePhase) || !marked(kTransferPhase)) return;
  if (!r.breakdown) r.breakdown = measured_breakdown(c, r.median_s);  // a view without it still shows these figures
  if (!r.breakdown) return;
  // The breakdown's own figures (report --breakdown), so that every view gives one number for each.
  const Breakdown& b = *r.breakdown;
  r.figures.push_back({"exposed_transfer_s", b.exposed_s, FigureKind::seconds, "", "exposed transfer"});
  if (b.wire_s > 0) {
    r.figures.push_back({"overlap_fraction", std::clamp(1.0 - b.exposed_s / b.wire_s, 0.0, 1.0), FigureKind::percent,
                         "", "overlap"});
  }
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
