#include "model/predict_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/plan.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace gpuscale {

namespace {

// The parameters that say what a case is (not how many samples it took), in name order.
std::map<std::string, Value> identity(const Params& p) {
  std::map<std::string, Value> out;
  const Params kept = p.without(sample_count_keys());
  for (const auto& [k, v] : kept.items()) out[k] = v;
  return out;
}

// A case as the rows are matched by (experiment, workload, mode, parameters), for a look-up in a map: matching
// every row with every other is quadratic in the cases, minutes for a model of 200,000.
using CaseKey = std::tuple<std::string, std::string, std::string, std::map<std::string, Value>>;

CaseKey key_of(const ModelCase& c, Mode mode) {
  return {c.experiment, c.workload, mode_name(mode), identity(c.params)};
}

// Parallel rows with a serial twin: speedup = the twin's median / this one's; efficiency = speedup / its turns.
void relate(std::vector<PredictRow>& rows) {
  std::map<CaseKey, const PredictRow*> serial;  // of twins of one case, the last
  for (const auto& s : rows) {
    if (s.c.mode == Mode::serial && s.p.predicted()) serial[key_of(s.c, s.c.mode)] = &s;
  }
  for (auto& p : rows) {
    if (p.c.mode != Mode::parallel || !p.p.predicted() || !(p.p.median_s > 0)) continue;
    const auto it = serial.find(key_of(p.c, Mode::serial));
    if (it == serial.end()) continue;
    p.speedup = it->second->p.median_s / p.p.median_s;
    p.efficiency = *p.speedup / std::max(1, it->second->p.turns);
  }
}

}  // namespace

std::vector<PredictRow> predict_rows(const Model& m, const std::vector<ModelCase>& cases, const PredictJob& job) {
  std::vector<PredictRow> rows;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    rows.push_back({i + 1, cases[i], predict_case(m, cases[i], job), {}, {}, {}, {}, {}});
  }
  relate(rows);
  return rows;
}

double predicted_time(const Prediction& p) { return p.op_time_s ? *p.op_time_s : p.median_s; }

Interval predicted_interval(const Prediction& p) {
  return p.op_time_s ? Interval{*p.op_lo_s, *p.op_hi_s} : Interval{p.lo_s, p.hi_s};
}

std::size_t add_measured(std::vector<PredictRow>& rows, const std::vector<ReportRow>& measured) {
  std::map<CaseKey, const ReportRow*> by_case;  // of rows of one case, the first
  for (const auto& r : measured) {
    by_case.emplace(CaseKey{r.name, r.workload, mode_name(r.mode), identity(r.params)}, &r);
  }
  std::size_t matched = 0;
  for (auto& row : rows) {
    const auto it = by_case.find(key_of(row.c, row.c.mode));
    if (it == by_case.end()) continue;
    ++matched;
    const ReportRow& r = *it->second;
    row.measured = r;
    if (!row.p.predicted() || r.status == CaseStatus::skipped) continue;
    const bool op = row.p.op_time_s && r.op_time_s;
    const double m = op ? *r.op_time_s : r.median_s, p = predicted_time(row.p);
    if (!(m > 0) || !(p > 0)) continue;
    row.ratio = m / p;
    if (row.p.has_interval()) row.inside = predicted_interval(row.p).contains(m);
  }
  return matched;
}

namespace {

ErrorSummary summary_of(const std::string& what, const std::vector<const PredictRow*>& rows) {
  std::vector<double> ratios;
  ErrorSummary s{what, static_cast<int>(rows.size()), 0, 0, 0, 0, 0};
  for (const PredictRow* r : rows) {
    ratios.push_back(*r->ratio);
    if (!r->inside) continue;
    ++s.with_interval;
    if (*r->inside) ++s.inside;
  }
  if (!ratios.empty()) s.median = median(ratios), s.min = minimum(ratios), s.max = maximum(ratios);
  return s;
}

}  // namespace

std::vector<ErrorSummary> error_summary(const std::vector<PredictRow>& rows) {
  std::vector<std::pair<std::string, std::vector<const PredictRow*>>> groups;  // in order of first appearance
  for (const auto& r : rows) {
    if (!r.ratio) continue;
    std::string what = r.c.workload;
    if (r.c.params.has("op")) what += " " + r.c.params.get_string("op");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == what; });
    if (it == groups.end()) it = groups.insert(groups.end(), {what, {}});
    it->second.push_back(&r);
  }
  std::vector<ErrorSummary> out;
  for (const auto& [what, list] : groups) out.push_back(summary_of(what, list));
  return out;
}

ErrorSummary total_summary(const std::vector<PredictRow>& rows) {
  std::vector<const PredictRow*> measured;
  for (const auto& r : rows) {
    if (r.ratio) measured.push_back(&r);
  }
  return summary_of("all", measured);
}

std::string ratio_text(double ratio) { return format_sig3(ratio) + "x"; }

std::string signed_error_text(double ratio) {
  const double pct = 100 * (ratio - 1);
  if (std::fabs(pct) < 0.05) return "0.0%";  // neither way: no sign, not "-0.0%"
  return format_number(std::fabs(pct) < 9.95 ? "%+.1f%%" : "%+.0f%%", pct);
}

}  // namespace gpuscale
