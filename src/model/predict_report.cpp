#include "model/predict_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/plan.hpp"
#include "core/stats.hpp"

namespace gpuscale {

namespace {

// The parameters that say what a case is (not how many samples it took), in name order.
std::map<std::string, Value> identity(const Params& p) {
  std::map<std::string, Value> out;
  const Params kept = p.without(sample_count_keys());
  for (const auto& [k, v] : kept.items()) out[k] = v;
  return out;
}

bool same_case(const ModelCase& c, const ReportRow& r) {
  return c.experiment == r.name && c.workload == r.workload && c.mode == r.mode && identity(c.params) == identity(r.params);
}

bool twins(const ModelCase& a, const ModelCase& b) {
  return a.experiment == b.experiment && a.workload == b.workload && identity(a.params) == identity(b.params);
}

// Parallel rows with a serial twin: speedup = the twin's median / this one's; efficiency = speedup / its turns.
void relate(std::vector<PredictRow>& rows) {
  for (auto& p : rows) {
    if (p.c.mode != "parallel" || !p.p.predicted()) continue;
    for (const auto& s : rows) {
      if (s.c.mode != "serial" || !s.p.predicted() || !twins(p.c, s.c) || !(p.p.median_s > 0)) continue;
      p.speedup = s.p.median_s / p.p.median_s;
      p.efficiency = *p.speedup / std::max(1, s.p.turns);
    }
  }
}

}  // namespace

std::vector<PredictRow> predict_rows(const Model& m, const std::vector<ModelCase>& cases, const PredictJob& job) {
  std::vector<PredictRow> rows;
  for (std::size_t i = 0; i < cases.size(); ++i) rows.push_back({i + 1, cases[i], predict_case(m, cases[i], job), {}, {}, {}, {}});
  relate(rows);
  return rows;
}

void add_measured(std::vector<PredictRow>& rows, const std::vector<ReportRow>& measured) {
  for (auto& row : rows) {
    const auto it = std::find_if(measured.begin(), measured.end(), [&](const ReportRow& r) { return same_case(row.c, r); });
    if (it == measured.end()) continue;
    row.measured = *it;
    if (!row.p.predicted() || it->status == "skipped") continue;
    const bool op = row.p.op_time_s && it->op_time_s;
    const double m = op ? *it->op_time_s : it->median_s, p = op ? *row.p.op_time_s : row.p.median_s;
    if (m > 0) row.error = std::fabs(m - p) / m;
  }
}

std::vector<ErrorSummary> error_summary(const std::vector<PredictRow>& rows) {
  std::vector<std::pair<std::string, std::vector<double>>> groups;  // in order of first appearance
  for (const auto& r : rows) {
    if (!r.error) continue;
    std::string what = r.c.workload;
    if (r.c.params.has("op")) what += " " + r.c.params.get_string("op");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == what; });
    if (it == groups.end()) it = groups.insert(groups.end(), {what, {}});
    it->second.push_back(*r.error);
  }
  std::vector<ErrorSummary> out;
  for (const auto& [what, errors] : groups) {
    out.push_back({what, static_cast<int>(errors.size()), median(errors), maximum(errors)});
  }
  return out;
}

}  // namespace gpuscale
