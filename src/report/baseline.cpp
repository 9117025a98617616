#include "report/baseline.hpp"

#include "core/text.hpp"

namespace gpuscale {

namespace {

// BLAS threads aside: a run with other threads is the same case run
// differently (as with another driver or another node).
bool same_case(const ReportRow& a, const ReportRow& b) {
  return a.name == b.name && a.workload == b.workload && a.mode == b.mode && a.ranks == b.ranks &&
         a.nodes == b.nodes && a.params.without({"threads"}) == b.params.without({"threads"});
}

}  // namespace

void compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<ReportRow>& base,
                           const std::string& base_path) {
  for (auto& r : rows) {
    if (r.status == "skipped") continue;
    BaselineComparison b;
    b.file = base_path;
    b.verdict = "not in baseline";
    for (const auto& old : base) {
      if (!same_case(r, old)) continue;
      b.case_index = old.case_index;
      if (old.status == "skipped") {
        b.verdict = "skipped in baseline";
        break;
      }
      b.median_s = old.median_s;
      b.ratio = r.median_s / old.median_s;
      b.ratio_ci = ratio_interval(r.median_ci, old.median_ci);
      b.verdict = time_ratio_verdict(b.ratio_ci);
      break;
    }
    r.baseline = std::move(b);
  }
}

std::string render_baseline(const std::vector<ReportRow>& rows) {
  std::vector<std::vector<std::string>> cells{{"#", "name", "mode", "baseline", "here", "ratio (95%)", "verdict"}};
  std::string file;
  for (const auto& r : rows) {
    if (!r.baseline) continue;
    const BaselineComparison& b = *r.baseline;
    file = b.file;
    std::string ratio = "-";
    if (std::isfinite(b.ratio)) {
      ratio = format_number("%.3f", b.ratio);
      if (b.ratio_ci) ratio += format_number(" (%.3f", b.ratio_ci->lo) + format_number("-%.3f)", b.ratio_ci->hi);
    }
    cells.push_back({std::to_string(r.case_index + 1), r.name, r.mode,
                     std::isfinite(b.median_s) ? format_seconds(b.median_s) : "-", format_seconds(r.median_s), ratio,
                     b.verdict});
  }
  if (cells.size() == 1) return "";
  return wrap("against the baseline " + file +
              ": ratio = median here / median there, with its 95% interval from both cases' samples; slower or "
              "faster only where the interval leaves out 1") +
         align_columns(cells, [](std::size_t i) { return i == 1 || i == 2 || i == 6; });
}

}  // namespace gpuscale
