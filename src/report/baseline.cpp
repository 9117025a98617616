#include "report/baseline.hpp"

#include <algorithm>
#include <map>

#include "core/text.hpp"

namespace gpuscale {

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

std::string shape(int ranks, int nodes) {
  return std::to_string(ranks) + " rank(s) on " + std::to_string(nodes) + " node(s)";
}

// `r` has no twin in `base`; where the same case ran there in another shape, which.
void not_found(const ReportRow& r, const std::vector<ReportRow>& base, BaselineComparison& b) {
  b.verdict = "not in baseline";
  for (const auto& old : base) {
    if (same_params(r, old)) {
      b.ran_there = shape(old.ranks, old.nodes);
      return;
    }
  }
}

void compare(ReportRow& r, const ReportRow& old, BaselineComparison& b) {
  b.case_index = old.case_index;
  if (old.status == CaseStatus::skipped) {
    b.verdict = "skipped in baseline";
    return;
  }
  const ComparedTime here = compared_time(r), there = compared_time(old);
  b.median_s = old.median_s;
  b.op_time_s = old.op_time_s;
  b.ratio = here.s / there.s;
  b.ratio_ci = ratio_interval(here.ci, there.ci);
  b.verdict = time_ratio_verdict(b.ratio_ci);
}

}  // namespace

void compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<ReportRow>& base,
                           const std::string& base_path) {
  for (auto& r : rows) {
    if (r.status == CaseStatus::skipped) continue;
    BaselineComparison b;
    b.file = base_path;
    const auto old = std::find_if(base.begin(), base.end(), [&](const ReportRow& o) { return same_case(r, o); });
    if (old == base.end()) not_found(r, base, b);
    else compare(r, *old, b);
    r.baseline = std::move(b);
  }
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

// "" unless no row found its twin: then why, in the shapes of the two runs.
std::string no_match_note(const std::vector<ReportRow>& rows, const std::string& file) {
  std::string there;
  for (const auto& r : rows) {
    if (!r.baseline) continue;
    if (std::isfinite(r.baseline->ratio) || r.baseline->verdict == "skipped in baseline") return "";
    if (there.empty()) there = r.baseline->ran_there;
  }
  if (there.empty()) {
    return wrap("no case here is in the baseline " + file + ": it ran other experiments or parameters");
  }
  return wrap("no case here is in the baseline " + file + ": the baseline ran on " + there + ", this file on " +
              shape(rows.front().ranks, rows.front().nodes) + "; compare them side by side (gpuscale report " + file +
              " " + rows.front().file + "), or run the same shape");
}

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

}  // namespace

std::string render_baseline(const std::vector<ReportRow>& rows) {
  const std::vector<std::string> head{"#", "name", "parameters", "mode", "baseline", "here", "ratio (95%)", "verdict"};
  std::vector<std::vector<std::string>> cells{head};
  const auto labels = varying_labels(rows);
  std::string file;
  bool transfers = false;
  for (const auto& r : rows) {
    if (!r.baseline) continue;
    const BaselineComparison& b = *r.baseline;
    file = b.file;
    transfers = transfers || r.op_time_s;
    const bool found = std::isfinite(b.ratio);
    const double there = b.op_time_s ? *b.op_time_s : b.median_s;
    cells.push_back({std::to_string(r.case_index + 1), r.name, labels.at(&r), mode_name(r.mode),
                     found ? format_seconds(there) : "-", format_seconds(compared_time(r).s), ratio_cell(b),
                     b.verdict});
  }
  if (cells.size() == 1) return "";
  return wrap("against the baseline " + file + ": ratio = time here / time there (" +
              (transfers ? "transfers: op time; others: " : "") +
              "median sample), with its 95% interval from both cases' samples; slower or faster only where the "
              "interval leaves out 1") +
         fitted(cells) + no_match_note(rows, file);
}

}  // namespace gpuscale
