// Where the time goes as text (report --breakdown, and predicted breakdowns): a line per case with its median
// and the parts it splits into, in at most 80 columns.
#include <cmath>

#include "core/text.hpp"
#include "report/breakdown.hpp"
#include "report/report.hpp"

namespace gpuscale {

namespace {

// "101%": how much of the median the parts add up to.
std::string adds_up(const Breakdown& b) {
  return b.total_s > 0 && std::isfinite(b.total_s) ? format_number("%.0f%%", 100 * b.sum() / b.total_s) : "-";
}

std::vector<std::string> number_cells(const Breakdown& b) {
  return {format_seconds(b.total_s), format_seconds(b.compute_s), format_seconds(b.exposed_s),
          format_seconds(b.overhead_s), format_seconds(b.wait_s), format_seconds(b.wire_s), adds_up(b)};
}

const std::vector<std::string>& heads() {
  static const std::vector<std::string> h{"median", "compute", "exposed", "overhead", "wait", "wire", "adds up"};
  return h;
}

// The table with each label in the first column, or (`inline_labels` false) on a line of its own above its row.
std::string table(const std::vector<BreakdownLine>& lines, bool inline_labels) {
  std::vector<std::vector<std::string>> cells{{""}};
  cells[0].insert(cells[0].end(), heads().begin(), heads().end());
  for (const auto& l : lines) {
    cells.push_back({inline_labels ? l.label : ""});
    const auto numbers = number_cells(l.parts);
    cells.back().insert(cells.back().end(), numbers.begin(), numbers.end());
  }
  const std::string text = align_columns(cells, [](std::size_t i) { return i == 0; });
  if (inline_labels) return text;
  std::string out;
  std::size_t from = 0;
  for (std::size_t row = 0; from < text.size(); ++row) {
    const std::size_t nl = text.find('\n', from);
    if (row > 0) out += wrap(lines[row - 1].label, kTerminalWidth, "   ");
    out += text.substr(from, nl - from + 1);
    from = nl + 1;
  }
  return out;
}

// "#3 overlap=true [parallel]": the case, the parameters that vary in its experiment and the mode.
std::string case_label(const ReportRow& r, const ParamSplit& split, std::size_t i) {
  std::string label = "#" + std::to_string(r.case_index + 1);
  for (const auto& [key, cells] : split.varying) label += " " + key + "=" + cells[i];
  return label + " [" + mode_name(r.mode) + "]";
}

// The table, inline labels where they fit, else on lines of their own.
std::string fitted_table(const std::vector<BreakdownLine>& lines) {
  const std::string out = table(lines, true);
  return fits_terminal(out) ? out : table(lines, false);
}

const char* const kLegend =
    "compute: device work; exposed: transfer that no compute hid; overhead: the rest of the median rank's time "
    "(launch gaps, host waits); wait: for the slowest rank; wire: all transfer, hidden or not (beside the parts). "
    "Each is a median over samples, so together they come near the median: adds up says how near.";

}  // namespace

std::string render_breakdown(const std::vector<BreakdownLine>& lines) { return fitted_table(lines) + wrap(kLegend); }

std::string render_breakdown_report(const std::string& path, const RunRecord& run,
                                    const std::vector<ReportRow>& rows) {
  std::string out = wrap(path + ": where the time goes, " + std::to_string(run.ranks.size()) + " rank(s) on " +
                         std::to_string(run.nodes) + " node(s), backend " + backend_name(run.backend));
  for (const auto& w : run.warnings) out += wrap("WARNING: " + w);
  std::string skipped;
  bool any = false;
  for (const auto& block : by_experiment(rows)) {
    const ParamSplit split = split_params(block);
    std::vector<BreakdownLine> lines;
    for (std::size_t i = 0; i < block.size(); ++i) {
      const ReportRow& r = *block[i];
      if (r.breakdown) lines.push_back({case_label(r, split, i), *r.breakdown});
      else skipped += (skipped.empty() ? "" : ", ") + std::to_string(r.case_index + 1);
    }
    if (lines.empty()) continue;
    out += "\n" + wrap(block.front()->name + ": " + block.front()->workload + split.shared) + fitted_table(lines);
    any = true;
  }
  out += any ? "\n" + wrap(kLegend) : "no case ran: nothing to break down\n";
  if (!skipped.empty()) out += wrap("not run (skipped): case(s) " + skipped);
  return out;
}

}  // namespace gpuscale
