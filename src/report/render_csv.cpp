// The report as CSV: a row per case, the columns of docs/analysis.md (the
// breakdown's as breakdown.KEY, then what the baseline's verdicts needed),
// then the figures of newer workloads and one column per parameter (param.KEY).
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "core/text.hpp"
#include "report/baseline.hpp"
#include "report/report.hpp"

namespace gpuscale {

namespace {

using Cell = std::function<std::string(const ReportRow&)>;

// A number as CSV writes every number: up to 9 significant digits.
std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}
std::string opt(const std::optional<double>& v) { return v ? num(*v) : ""; }
std::string count(std::size_t n) { return std::to_string(n); }
// Strings from the file as RFC 4180 fields, control characters escaped; free text always in quotes.
std::string quoted(const std::string& s) { return csv_field(s, true); }
std::string field(const std::string& s) { return csv_field(s); }
bool ran(const ReportRow& r) { return r.status != CaseStatus::skipped; }
std::string if_ran(const ReportRow& r, double v) { return ran(r) ? num(v) : ""; }
std::string if_finite(double v) { return std::isfinite(v) ? num(v) : ""; }

std::string lo(const std::optional<Interval>& ci) { return ci ? num(ci->lo) : ""; }
std::string hi(const std::optional<Interval>& ci) { return ci ? num(ci->hi) : ""; }

std::string figure_cell(const ReportRow& r, const std::string& key) {
  const Figure* f = r.figure(key);
  if (!f) return "";
  return f->kind == FigureKind::case_number ? count(static_cast<std::size_t>(f->value) + 1) : num(f->value);
}

// A baseline column: empty without a comparison, and (`found`) where the case is not in the baseline.
Cell baseline(std::function<std::string(const BaselineComparison&)> get, bool found = true) {
  return [get, found](const ReportRow& r) {
    if (!r.baseline || (found && !std::isfinite(r.baseline->median_s))) return std::string();
    return get(*r.baseline);
  };
}

// The columns every report has had, in their order.
std::vector<std::pair<std::string, Cell>> case_columns() {
  return {
      {"file", [](const ReportRow& r) { return quoted(r.file); }},
      {"case", [](const ReportRow& r) { return count(r.case_index + 1); }},
      {"name", [](const ReportRow& r) { return quoted(r.name); }},
      {"workload", [](const ReportRow& r) { return field(r.workload); }},
      {"mode", [](const ReportRow& r) { return field(mode_name(r.mode)); }},
      {"backend", [](const ReportRow& r) { return field(backend_name(r.backend)); }},
      {"ranks", [](const ReportRow& r) { return std::to_string(r.ranks); }},
      {"nodes", [](const ReportRow& r) { return std::to_string(r.nodes); }},
      {"reps", [](const ReportRow& r) { return std::to_string(r.reps); }},
      {"params", [](const ReportRow& r) { return quoted(r.params_label); }},
      {"median_s", [](const ReportRow& r) { return if_ran(r, r.median_s); }},
      {"min_s", [](const ReportRow& r) { return if_ran(r, r.min_s); }},
      {"p95_s", [](const ReportRow& r) { return if_ran(r, r.p95_s); }},
      {"enqueue_median_s", [](const ReportRow& r) { return if_ran(r, r.enqueue_median_s); }},
      {"gflops", [](const ReportRow& r) { return opt(r.gflops); }},
      {"total_gflops", [](const ReportRow& r) { return opt(r.total_gflops); }},
      {"gbps", [](const ReportRow& r) { return opt(r.gbps); }},
      {"total_gbps", [](const ReportRow& r) { return opt(r.total_gbps); }},
      {"speedup", [](const ReportRow& r) { return opt(r.speedup); }},
      {"efficiency", [](const ReportRow& r) { return opt(r.efficiency); }},
      {"slowest_rank", [](const ReportRow& r) { return ran(r) ? std::to_string(r.slowest_rank) : ""; }},
      {"slowest_ratio", [](const ReportRow& r) { return if_ran(r, r.slowest_ratio); }},
      {"max_verify_error", [](const ReportRow& r) { return if_ran(r, r.max_verify_error); }},
      {"status", [](const ReportRow& r) { return field(status_name(r.status)); }},
      {"scope", [](const ReportRow& r) { return r.scope ? field(scope_name(*r.scope)) : field(""); }},
      {"groups", [](const ReportRow& r) { return r.scope ? std::to_string(r.groups) : ""; }},
      {"group_size", [](const ReportRow& r) { return r.scope ? std::to_string(r.group_size) : ""; }},
      {"op_time_s", [](const ReportRow& r) { return opt(r.op_time_s); }},
      {"algbw_gbps", [](const ReportRow& r) { return opt(r.algbw_gbps); }},
      {"busbw_gbps", [](const ReportRow& r) { return opt(r.busbw_gbps); }},
      {"wrong_elements",
       [](const ReportRow& r) { return r.scope && ran(r) ? std::to_string(r.wrong_elements) : ""; }},
      {"status_reason", [](const ReportRow& r) { return quoted(r.status_reason); }},
      {"flags", [](const ReportRow& r) { return quoted(join(r.flags, "; ")); }},
      {"host_others_share", [](const ReportRow& r) { return if_finite(r.host.others_share); }},
      {"host_wait_share", [](const ReportRow& r) { return if_finite(r.host.wait_share); }},
      {"host_busy", [](const ReportRow& r) { return ran(r) ? std::to_string(int(!r.host.busy.empty())) : ""; }},
      {"descheduled",
       [](const ReportRow& r) { return ran(r) ? std::to_string(int(!r.host.descheduled.empty())) : ""; }},
  };
}

// Intervals, the baseline, and the figures of the workloads that came first.
std::vector<std::pair<std::string, Cell>> judgement_columns() {
  return {
      {"exposed_transfer_s", [](const ReportRow& r) { return figure_cell(r, "exposed_transfer_s"); }},
      {"overlap_fraction", [](const ReportRow& r) { return figure_cell(r, "overlap_fraction"); }},
      {"median_lo_s", [](const ReportRow& r) { return lo(r.median_ci); }},
      {"median_hi_s", [](const ReportRow& r) { return hi(r.median_ci); }},
      {"speedup_lo", [](const ReportRow& r) { return lo(r.speedup_ci); }},
      {"speedup_hi", [](const ReportRow& r) { return hi(r.speedup_ci); }},
      {"efficiency_lo", [](const ReportRow& r) { return lo(r.efficiency_ci); }},
      {"efficiency_hi", [](const ReportRow& r) { return hi(r.efficiency_ci); }},
      {"speedup_no_difference",
       [](const ReportRow& r) { return r.speedup_ci ? (speedup_uncertain(r) ? "true" : "false") : ""; }},
      {"baseline_file", baseline([](const BaselineComparison& b) { return quoted(b.file); }, false)},
      {"baseline_case", baseline([](const BaselineComparison& b) { return count(b.case_index + 1); })},
      {"baseline_median_s", baseline([](const BaselineComparison& b) { return num(b.median_s); })},
      {"baseline_ratio", baseline([](const BaselineComparison& b) { return num(b.ratio); })},
      {"baseline_ratio_lo", baseline([](const BaselineComparison& b) { return lo(b.ratio_ci); }, false)},
      {"baseline_ratio_hi", baseline([](const BaselineComparison& b) { return hi(b.ratio_ci); }, false)},
      {"baseline_verdict", baseline([](const BaselineComparison& b) { return quoted(b.verdict); }, false)},
      {"of_vendor", [](const ReportRow& r) { return figure_cell(r, "of_vendor"); }},
      {"vendor_case", [](const ReportRow& r) { return figure_cell(r, "vendor_case"); }},
  };
}

// Columns added since: transfers' interval and fastest and slowest rank, the baseline's op time, the run's warnings.
std::vector<std::pair<std::string, Cell>> newer_columns() {
  return {
      {"op_time_lo_s", [](const ReportRow& r) { return lo(r.op_time_ci); }},
      {"op_time_hi_s", [](const ReportRow& r) { return hi(r.op_time_ci); }},
      {"op_time_min_s", [](const ReportRow& r) { return opt(r.op_time_min_s); }},
      {"op_time_max_s", [](const ReportRow& r) { return opt(r.op_time_max_s); }},
      {"baseline_op_time_s", baseline([](const BaselineComparison& b) { return opt(b.op_time_s); })},
      {"baseline_ran_there", baseline([](const BaselineComparison& b) { return quoted(b.ran_there); }, false)},
      {"run_warnings", [](const ReportRow& r) { return quoted(join(r.run_warnings, "; ")); }},
      {"host_oversubscribed", [](const ReportRow& r) { return quoted(r.host.oversubscribed); }},
  };
}

// What a file's baseline verdicts needed (report/baseline.hpp): empty where the row has no twin in the baseline.
std::vector<std::pair<std::string, Cell>> baseline_rule_columns(const std::vector<BaselineSummary>& summaries) {
  using Get = std::function<std::string(const ReportRow&, const BaselineSummary&)>;
  const auto rule = [&summaries](Get get) -> Cell {
    return [&summaries, get](const ReportRow& r) {
      const BaselineSummary* s = summary_of(summaries, r.file);
      if (!s || !r.baseline || !std::isfinite(r.baseline->median_s)) return std::string();
      return get(r, *s);
    };
  };
  return {
      {"baseline_min_effect", rule([](const ReportRow&, const BaselineSummary& s) { return num(s.min_effect); })},
      {"baseline_effect_needed", rule([](const ReportRow& r, const BaselineSummary&) { return num(r.baseline->effect); })},
      {"baseline_run_scatter", rule([](const ReportRow&, const BaselineSummary& s) {
         return std::isfinite(s.scatter) ? num(s.scatter) : std::string();
       })},
      {"baseline_small_change", rule([](const ReportRow& r, const BaselineSummary&) {
         return r.baseline->ratio_ci ? std::string(small_change(*r.baseline) ? "true" : "false") : std::string();
       })},
      {"baseline_uncertain_why", rule([](const ReportRow& r, const BaselineSummary& s) {
         const auto why = s.uncertain.find(r.case_index);
         return why == s.uncertain.end() ? quoted("") : quoted(why->second);
       })},
      {"baseline_runs", rule([](const ReportRow& r, const BaselineSummary&) {
         return std::to_string(r.baseline->runs);
       })},
      {"baseline_runs_scatter", rule([](const ReportRow& r, const BaselineSummary&) {
         return std::isfinite(r.baseline->runs_scatter) ? num(r.baseline->runs_scatter) : std::string();
       })},
  };
}

// Where the time goes (report/breakdown.hpp): the keys of the JSON's "breakdown", each as breakdown.KEY.
std::vector<std::pair<std::string, Cell>> breakdown_columns() {
  const std::pair<const char*, double Breakdown::*> parts[] = {
      {"total_s", &Breakdown::total_s},   {"compute_s", &Breakdown::compute_s},
      {"exposed_transfer_s", &Breakdown::exposed_s}, {"overhead_s", &Breakdown::overhead_s},
      {"wait_s", &Breakdown::wait_s},     {"wire_s", &Breakdown::wire_s}};
  std::vector<std::pair<std::string, Cell>> out;
  for (const auto& [key, part] : parts) {
    out.emplace_back(std::string("breakdown.") + key,
                     [part = part](const ReportRow& r) { return r.breakdown ? num((*r.breakdown).*part) : ""; });
  }
  out.emplace_back("breakdown.sum_s", [](const ReportRow& r) { return r.breakdown ? num(r.breakdown->sum()) : ""; });
  return out;
}

// Figures of other keys than the fixed columns' (a newer workload's), in the order they first appear.
std::vector<std::string> more_figures(const std::vector<ReportRow>& rows) {
  const std::vector<std::string> fixed{"exposed_transfer_s", "overlap_fraction", "of_vendor", "vendor_case"};
  std::vector<std::string> out;
  for (const auto& r : rows) {
    for (const auto& f : r.figures) {
      if (std::find(fixed.begin(), fixed.end(), f.key) == fixed.end() &&
          std::find(out.begin(), out.end(), f.key) == out.end()) {
        out.push_back(f.key);
      }
    }
  }
  return out;
}

// Every parameter key of the rows, in the order they first appear.
std::vector<std::string> param_keys(const std::vector<ReportRow>& rows) {
  std::vector<std::string> keys;
  for (const auto& r : rows) {
    for (const auto& [k, v] : r.params.items()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  return keys;
}

}  // namespace

std::string render_csv(const std::vector<ReportRow>& rows) { return render_csv(rows, {}); }

std::string render_csv(const std::vector<ReportRow>& rows, const std::vector<BaselineSummary>& summaries) {
  std::vector<std::pair<std::string, Cell>> cols = case_columns();
  for (auto* more : {judgement_columns, newer_columns, breakdown_columns}) {
    for (auto& c : more()) cols.push_back(std::move(c));
  }
  for (auto& c : baseline_rule_columns(summaries)) cols.push_back(std::move(c));
  for (const auto& key : more_figures(rows)) {
    cols.emplace_back(key, [key](const ReportRow& r) { return figure_cell(r, key); });
  }
  // One column per parameter, empty where a case has none: its value as the table shows it (true/false).
  for (const auto& key : param_keys(rows)) {
    cols.emplace_back("param." + key, [key](const ReportRow& r) {
      return r.params.has(key) ? csv_field(to_string(r.params.at(key))) : std::string();
    });
  }
  std::string out;
  for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + csv_field(cols[i].first);
  out += '\n';
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i].second(r);
    out += '\n';
  }
  return out;
}

}  // namespace gpuscale
