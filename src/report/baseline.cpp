#include "report/baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "report/report_notes.hpp"

namespace gpuscale {

std::optional<double> parse_min_effect(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  if (!percent && v >= 1) return std::nullopt;
  return percent ? v / 100 : v;
}

std::string effect_verdict(const std::optional<Interval>& ratio, double effect) {
  if (!ratio) return kTooFewSamples;
  if (ratio->lo > 1.0 + effect) return kSlower;
  if (ratio->hi < 1.0 / (1.0 + effect)) return kFaster;
  return kWithinNoise;
}

namespace {

// BLAS threads aside: a run with other threads is the same case run
// differently (as with another driver or another node).
bool same_params(const ReportRow& a, const ReportRow& b) {
  return a.name == b.name && a.workload == b.workload && a.mode == b.mode &&
         a.params.without({"threads"}) == b.params.without({"threads"});
}

bool same_case(const ReportRow& a, const ReportRow& b) {
  return same_params(a, b) && a.ranks == b.ranks && a.nodes == b.nodes;
}

// "5%", "7.3%", "12%": two significant digits below 10%.
std::string percent(double share) {
  const double p = 100 * share;
  return format_number(p < 10 ? "%.2g%%" : "%.0f%%", p);
}

// `r` has no twin in `base`; where the same case ran there in another shape, which.
void not_found(const ReportRow& r, const std::vector<ReportRow>& base, BaselineComparison& b) {
  b.verdict = "not in baseline";
  for (const auto& old : base) {
    if (same_params(r, old)) {
      b.ran_there = shape_text(old.ranks, old.nodes);
      return;
    }
  }
}

// The ratio and its interval; the verdict waits for the effect, which depends on every case.
void compare(const ReportRow& r, const ReportRow& old, BaselineComparison& b) {
  b.case_index = old.case_index;
  b.runs = 1;
  if (old.status == CaseStatus::skipped) {
    b.verdict = "skipped in baseline";
    return;
  }
  const ComparedTime here = compared_time(r), there = compared_time(old);
  b.median_s = old.median_s;
  b.op_time_s = old.op_time_s;
  b.ratio = here.s / there.s;
  b.ratio_ci = ratio_interval(here.ci, there.ci);
}

// Why the host makes the comparison of `r` with `old` doubtful ("" where it does not).
std::string host_doubt(const ReportRow& r, const ReportRow& old) {
  std::vector<std::string> parts;
  if (r.host.doubtful()) parts.push_back("here, " + r.host.why());
  if (old.host.doubtful()) {
    const bool moved = old.case_index != r.case_index;  // the same case of another plan: its number there
    parts.push_back("in the baseline" + (moved ? " (its case " + std::to_string(old.case_index + 1) + ")" : "") +
                    ", " + old.host.why());
  }
  return join(parts, "; ");
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The scatter of the ratios that count (a verdict can come of them) and their median.
void estimate_scatter(const std::vector<ReportRow>& rows, BaselineSummary& s) {
  std::vector<double> logs;
  for (const auto& r : rows) {
    if (!r.baseline || !r.baseline->ratio_ci || !(r.baseline->ratio > 0)) continue;
    if (s.uncertain.count(r.case_index)) continue;
    logs.push_back(std::log(r.baseline->ratio));
  }
  if (logs.size() >= 3) s.median_ratio = std::exp(median_of(logs));
  s.scatter_cases = logs.size();
  if (logs.size() < kMinScatterCases) return;
  const double mid = median_of(logs);
  for (double& x : logs) x = std::fabs(x - mid);
  const double sigma = 1.4826 * median_of(logs);  // the normal's sigma from the median absolute deviation
  s.scatter = std::expm1(sigma);
  s.effect = std::max(s.min_effect, std::expm1(kScatterWidths * sigma));
}

// The case `r` in one baseline run: its path and its row.
struct Twin {
  const std::string* path;
  const ReportRow* row;
};

std::vector<Twin> twins_of(const ReportRow& r, const std::vector<BaselineRun>& bases) {
  std::vector<Twin> twins;
  for (const auto& run : bases) {
    const auto it = std::find_if(run.rows.begin(), run.rows.end(), [&](const ReportRow& o) { return same_case(r, o); });
    if (it != run.rows.end()) twins.push_back({&run.path, &*it});
  }
  return twins;
}

// Compares `r` with the twin whose time is the median of those that ran (the lower middle one); with two or more,
// how much they scatter. The twin compared with, for its host.
const ReportRow& compare_twins(const ReportRow& r, const std::vector<Twin>& twins, BaselineComparison& b) {
  std::vector<Twin> ran;
  for (const auto& t : twins) {
    if (t.row->status != CaseStatus::skipped) ran.push_back(t);
  }
  if (ran.empty()) ran.push_back(twins.front());  // skipped in every run: compare says so
  const auto time = [](const Twin& t) { return compared_time(*t.row).s; };
  std::sort(ran.begin(), ran.end(), [&](const Twin& a, const Twin& c) { return time(a) < time(c); });
  const Twin& mid = ran[(ran.size() - 1) / 2];
  b.file = *mid.path;
  compare(r, *mid.row, b);
  if (!b.verdict.empty()) return *mid.row;
  b.runs = ran.size();
  if (ran.size() >= 2) {
    std::vector<double> times;
    for (const auto& t : ran) times.push_back(time(t));
    b.runs_scatter = run_scatter(times, time(mid));
  }
  return *mid.row;
}

// The change the verdict of `b` needs: the file's, or twice the case's scatter between the baseline runs if larger.
double case_effect(const BaselineComparison& b, double effect) {
  if (!std::isfinite(b.runs_scatter)) return effect;
  return std::max(effect, std::expm1(kScatterWidths * std::log1p(b.runs_scatter)));
}

}  // namespace

BaselineSummary compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<BaselineRun>& bases,
                                      double min_effect) {
  BaselineSummary s;
  s.file = rows.empty() ? "" : rows.front().file;
  s.base_file = bases.front().path;
  s.base_runs = bases.size();
  s.min_effect = s.effect = min_effect;
  for (auto& r : rows) {
    if (r.status == CaseStatus::skipped) continue;
    BaselineComparison b;
    b.file = s.base_file;
    const std::vector<Twin> twins = twins_of(r, bases);
    if (twins.empty()) {
      not_found(r, bases.front().rows, b);
    } else {
      const ReportRow& old = compare_twins(r, twins, b);
      const std::string doubt = b.verdict.empty() ? host_doubt(r, old) : "";
      if (!doubt.empty()) s.uncertain[r.case_index] = doubt;
    }
    r.baseline = std::move(b);
  }
  estimate_scatter(rows, s);
  for (auto& r : rows) {
    if (!r.baseline || !r.baseline->verdict.empty()) continue;
    BaselineComparison& b = *r.baseline;
    b.effect = case_effect(b, s.effect);
    b.verdict = s.uncertain.count(r.case_index) ? kUncertainHost : effect_verdict(b.ratio_ci, b.effect);
  }
  return s;
}

BaselineSummary compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<ReportRow>& base,
                                      const std::string& base_path, double min_effect) {
  return compare_with_baseline(rows, {BaselineRun{base_path, base}}, min_effect);
}

bool small_change(const BaselineComparison& b) {
  return b.verdict == kWithinNoise && b.ratio_ci && !b.ratio_ci->contains(1.0);
}

std::string verdict_text(const BaselineComparison& b) {
  return small_change(b) ? b.verdict + " (<" + percent(b.effect) + ")" : b.verdict;
}

FailOn parse_fail_on(const std::string& word) {
  if (word.empty()) return FailOn::none;
  if (word == "slower") return FailOn::slower;
  if (word == "faster") return FailOn::faster;
  if (word == "any") return FailOn::any;
  throw InputError("--fail-on must be one of slower, faster, any, got " + word);
}

namespace {

// Each file's cases with verdict `word`, as "3, 5" (and "a.h5: 3, 5; b.h5: 2" where rows come from several files).
std::pair<std::size_t, std::string> cases_with(const std::vector<ReportRow>& rows, const std::string& word) {
  std::vector<std::string> files;
  std::map<std::string, std::vector<std::string>> cases;
  std::size_t n = 0;
  for (const auto& r : rows) {
    if (std::find(files.begin(), files.end(), r.file) == files.end()) files.push_back(r.file);
    if (!r.baseline || r.baseline->verdict != word) continue;
    cases[r.file].push_back(std::to_string(r.case_index + 1));
    ++n;
  }
  std::vector<std::string> parts;
  for (const auto& f : files) {
    if (cases.count(f)) parts.push_back((files.size() > 1 ? f + ": " : "") + join(cases[f], ", "));
  }
  return {n, join(parts, "; ")};
}

}  // namespace

std::string failing_cases(const std::vector<ReportRow>& rows, FailOn on) {
  if (on == FailOn::none) return "";
  const auto slower = on == FailOn::faster ? std::pair<std::size_t, std::string>{} : cases_with(rows, kSlower);
  const auto faster = on == FailOn::slower ? std::pair<std::size_t, std::string>{} : cases_with(rows, kFaster);
  if (slower.first + faster.first == 0) return "";
  if (on == FailOn::slower) return std::to_string(slower.first) + " case(s) slower than the baseline: " + slower.second;
  if (on == FailOn::faster) return std::to_string(faster.first) + " case(s) faster than the baseline: " + faster.second;
  std::vector<std::string> parts;
  if (slower.first) parts.push_back("slower " + slower.second);
  if (faster.first) parts.push_back("faster " + faster.second);
  return std::to_string(slower.first + faster.first) + " case(s) slower or faster than the baseline: " +
         join(parts, "; ");
}

std::string uncertain_cases(const std::vector<ReportRow>& rows) {
  const auto [n, cases] = cases_with(rows, kUncertainHost);
  if (n == 0) return "";
  return std::to_string(n) + " case(s) " + kUncertainHost + ", not judged by --fail-on: " + cases;
}

const BaselineSummary* summary_of(const std::vector<BaselineSummary>& summaries, const std::string& file) {
  for (const auto& s : summaries) {
    if (s.file == file) return &s;
  }
  return nullptr;
}

namespace {

// Each row's parameters that vary inside its experiment ("op=allreduce bytes=1024"), by row.
std::map<const ReportRow*, std::string> varying_labels(const std::vector<ReportRow>& rows) {
  std::map<const ReportRow*, std::string> out;
  for (const auto& block : by_experiment(rows)) {
    const ParamSplit split = split_params(block);
    for (std::size_t i = 0; i < block.size(); ++i) {
      std::string label;
      for (const auto& [key, cells] : split.varying) label += (label.empty() ? "" : " ") + key + "=" + cells[i];
      out[block[i]] = label;
    }
  }
  return out;
}

std::string ratio_cell(const BaselineComparison& b) {
  if (!std::isfinite(b.ratio)) return "-";
  std::string ratio = format_number("%.3f", b.ratio);
  if (b.ratio_ci) ratio += format_number(" (%.3f", b.ratio_ci->lo) + format_number("-%.3f)", b.ratio_ci->hi);
  return ratio;
}

}  // namespace

std::string unrelated_baseline(const std::vector<ReportRow>& rows, const std::string& file,
                               const std::string& config_here, const std::string& config_there) {
  std::string there;
  bool compared = false;
  for (const auto& r : rows) {
    if (!r.baseline) continue;
    if (std::isfinite(r.baseline->ratio) || r.baseline->verdict == "skipped in baseline") return "";
    compared = true;
    if (there.empty()) there = r.baseline->ran_there;
  }
  if (!compared) return "";
  const std::string head = "--baseline " + file + " shares no case with " + rows.front().file + ": ";
  if (there.empty()) {
    return head + "it ran other experiments or parameters (a run of " + config_there + ", this file of " +
           config_here + "); compare runs of one config";
  }
  return head + "the baseline ran on " + there + ", this file on " + shape_text(rows.front().ranks, rows.front().nodes) +
         "; compare them side by side (gpuscale report " + file + " " + rows.front().file + "), or run the same shape";
}

namespace {

// The table in 80 columns: where it is wider, each case's name and parameters go on a line of their own above its row.
std::string fitted(std::vector<std::vector<std::string>> cells) {
  const auto left = [](std::size_t i) { return i == 1 || i == 2 || i == 3 || i == 7; };
  std::string table = align_columns(cells, left);
  if (fits_terminal(table)) return table;
  std::vector<std::string> labels;
  for (auto& row : cells) {
    labels.push_back(row[1] + (row[2].empty() ? "" : " " + row[2]));
    row.erase(row.begin() + 1, row.begin() + 3);
  }
  table = align_columns(cells, [](std::size_t i) { return i == 1 || i == 5; });
  std::string out;
  std::size_t from = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::size_t nl = table.find('\n', from);
    if (i > 0) out += wrap("#" + cells[i][0] + ": " + labels[i], kTerminalWidth, "   ");
    out += table.substr(from, nl - from + 1);
    from = nl + 1;
  }
  return out;
}

// The rule above the table: what the ratio is and what a verdict needs.
std::string rule_text(const BaselineSummary& s, bool transfers) {
  std::string effect = "a change of at least " + percent(s.effect);
  if (s.effect > s.min_effect) {
    effect += ": twice the cases' scatter, above the minimum effect " + percent(s.min_effect);
  } else {
    effect += " (--min-effect)";
  }
  const std::string against = s.base_runs > 1 ? "against the baseline's " + std::to_string(s.base_runs) +
                                                     " runs (" + s.base_file + " and others; there: the run whose "
                                                     "time is the median)"
                                               : "against the baseline " + s.base_file;
  return wrap(against + ": ratio = time here / time there (" + (transfers ? "transfers: op time; others: " : "") +
              "median sample), with its 95% interval from both cases' samples; slower where the whole interval lies "
              "above " + format_number("%.3f", 1 + s.effect) + ", faster where below " +
              format_number("%.3f", 1 / (1 + s.effect)) + ": " + effect);
}

// How much runs differ: unknown with one baseline run; else how much the cases scatter between the baseline's runs.
std::string runs_note(const std::vector<ReportRow>& rows, const BaselineSummary& s) {
  if (s.base_runs < 2) {
    return "one run each: run-to-run scatter unknown, changes under " + percent(s.min_effect) +
           " not called (--min-effect); give --baseline several runs to see how much runs differ";
  }
  std::vector<double> scatters;
  std::size_t alone = 0;
  for (const auto& r : rows) {
    if (!r.baseline || !r.baseline->ratio_ci) continue;
    if (std::isfinite(r.baseline->runs_scatter)) {
      scatters.push_back(r.baseline->runs_scatter);
    } else {
      ++alone;
    }
  }
  std::string note = std::to_string(s.base_runs) + " baseline runs: a case is called only beyond twice its own "
                     "scatter between them (and the effect above)";
  if (!scatters.empty()) {
    note += "; their scatter: median " + percent(median(scatters)) + ", widest " + percent(maximum(scatters)) +
            " over " + std::to_string(scatters.size()) + " case(s)";
  }
  if (alone > 0) note += "; " + std::to_string(alone) + " case(s) in one baseline run only: scatter unknown there";
  return note;
}

// What a reader needs beside the table: the small changes, the scatter, a shift of every case, uncertain cases.
std::vector<std::string> baseline_notes(const std::vector<ReportRow>& rows, const BaselineSummary& s) {
  std::vector<std::string> notes;
  const auto small = [](const ReportRow& r) { return r.baseline && small_change(*r.baseline); };
  if (std::any_of(rows.begin(), rows.end(), small)) {
    notes.push_back(s.base_runs > 1
                        ? "within noise (<N%): the interval leaves out 1 but does not lie wholly beyond the change of "
                          "N% the case needs, so the change may be smaller, and smaller changes are within the "
                          "runs' own scatter"
                        : "within noise (<" + percent(s.effect) + "): the interval leaves out 1 but does not lie "
                          "wholly beyond a change of " + percent(s.effect) + ", so the change may be smaller; one "
                          "run's samples do not show how much two runs of the same software differ, so a smaller "
                          "change is not called");
  }
  notes.push_back(runs_note(rows, s));
  if (std::isfinite(s.scatter)) {
    notes.push_back("the ratios of " + std::to_string(s.scatter_cases) + " cases scatter by " + percent(s.scatter) +
                    " about their median (1.4826 x the median absolute deviation of log ratios)");
  } else {
    notes.push_back(std::to_string(s.scatter_cases) + " case(s) with an interval and a host not busy on either "
                    "side, too few (" + std::to_string(kMinScatterCases) + " needed) to see how much the cases "
                    "scatter between the runs: only the minimum effect applies");
  }
  if (std::isfinite(s.median_ratio) && std::fabs(std::log(s.median_ratio)) > std::log1p(s.effect)) {
    notes.push_back(format_number("the median case is %.2fx the baseline's: most cases moved together, as they do "
                                  "on a busier or slower machine as well as with slower or faster software; run both "
                                  "again before believing it", s.median_ratio));
  }
  // Uncertain cases, grouped as the report's notes are: "uncertain in 6 of 6 cases (1-6): never slower or faster;
  // here, host busy: others used 49-73% ...".
  std::vector<std::pair<std::string, std::size_t>> experiments;
  for (const auto& in : by_experiment(rows)) experiments.emplace_back(in.front()->name, in.size());
  ReportNotes uncertain(std::move(experiments), true);
  for (const auto& r : rows) {
    const auto why = s.uncertain.find(r.case_index);
    if (why == s.uncertain.end()) continue;
    uncertain.add_case(r.name, r.case_index + 1, "uncertain", "never slower or faster; " + why->second,
                       CaseNoteForm::case_first);
  }
  for (auto& line : uncertain.lines()) notes.push_back(std::move(line));
  return notes;
}

}  // namespace

std::string render_baseline(const std::vector<ReportRow>& rows, const BaselineSummary& summary) {
  const std::vector<std::string> head{"#", "name", "parameters", "mode", "baseline", "here", "ratio (95%)", "verdict"};
  std::vector<std::vector<std::string>> cells{head};
  const auto labels = varying_labels(rows);
  bool transfers = false;
  for (const auto& r : rows) {
    if (!r.baseline) continue;
    const BaselineComparison& b = *r.baseline;
    transfers = transfers || r.op_time_s;
    const bool found = std::isfinite(b.ratio);
    const double there = b.op_time_s ? *b.op_time_s : b.median_s;
    cells.push_back({std::to_string(r.case_index + 1), r.name, labels.at(&r), mode_name(r.mode),
                     found ? format_seconds(there) : "-", format_seconds(compared_time(r).s), ratio_cell(b),
                     verdict_text(b)});
  }
  if (cells.size() == 1) return "";
  std::string notes;
  for (const auto& n : baseline_notes(rows, summary)) notes += wrap("note: " + n);
  return rule_text(summary, transfers) + fitted(cells) + notes;
}

}  // namespace gpuscale
