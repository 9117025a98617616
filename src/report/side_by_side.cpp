#include "report/side_by_side.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/text.hpp"

namespace gpuscale {

namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // name, parameters, mode

Key key_of(const ReportRow& r) { return {r.name, r.params_label, mode_name(r.mode)}; }

// A parallel row's throughput over one rank's in the baseline's serial run:
// every rank does the same work, so speedup = ranks x (serial median / serial
// turns) / this median, with its interval; eff = speedup / ranks.
std::string scaling_cell(const ReportRow& r, const ReportRow* serial) {
  if (!serial || r.mode != Mode::parallel || r.scope || serial->turns < 1 || !std::isfinite(serial->median_s)) {
    return "";
  }
  const double per_turn = static_cast<double>(r.ranks) / serial->turns;
  const double speedup = per_turn * serial->median_s / r.median_s;
  auto ci = ratio_interval(serial->median_ci, r.median_ci);
  if (ci) ci = Interval{per_turn * ci->lo, per_turn * ci->hi};
  return " " + speedup_text(speedup, ci, false) + format_number(" %.0f%%", 100.0 * speedup / r.ranks);
}

}  // namespace

std::string render_side_by_side(const std::vector<RunRows>& runs) {
  if (runs.size() < 2) return "";
  // Each case (by name, parameters and mode) with its row in every file (a file may lack one).
  std::map<Key, std::vector<const ReportRow*>> cell;
  std::vector<ReportRow> first_seen;  // one row of each case, in order of first appearance
  for (std::size_t f = 0; f < runs.size(); ++f) {
    for (const auto& r : runs[f].rows) {
      auto [it, fresh] = cell.try_emplace(key_of(r), runs.size(), nullptr);
      if (fresh) first_seen.push_back(r);
      if (!it->second[f]) it->second[f] = &r;
    }
  }
  const bool shared = std::any_of(cell.begin(), cell.end(), [](const auto& kv) {
    return std::count_if(kv.second.begin(), kv.second.end(), [](const ReportRow* r) { return r; }) > 1;
  });
  if (!shared) return "";

  std::string out = wrap("side by side: each case's median sample in each file (transfers: op time); parallel "
                         "cases of work on each rank also give speedup and eff: their throughput over one rank's in "
                         "file [1]'s serial run (ranks x serial median / serial turns / this median), \"uncertain\" "
                         "where its 95% interval holds 1");
  for (std::size_t f = 0; f < runs.size(); ++f) {
    out += "[" + std::to_string(f + 1) + "] " + runs[f].path + ": " + std::to_string(runs[f].ranks) + " rank(s) on " +
           std::to_string(runs[f].nodes) + " node(s)\n";
  }
  bool marked = false;
  for (const auto& block : by_experiment(first_seen)) {
    const ParamSplit split = split_params(block);
    std::vector<std::string> head;
    for (const auto& [key, cells] : split.varying) head.push_back(key);
    head.push_back("mode");
    for (std::size_t f = 0; f < runs.size(); ++f) {
      head.push_back("[" + std::to_string(f + 1) + "] " + std::to_string(runs[f].ranks) + "r/" +
                     std::to_string(runs[f].nodes) + "n");
    }
    std::vector<std::vector<std::string>> rows{head};
    for (std::size_t i = 0; i < block.size(); ++i) {
      const ReportRow& any = *block[i];
      std::vector<std::string> row;
      for (const auto& [key, cells] : split.varying) row.push_back(cells[i]);
      row.push_back(mode_name(any.mode));
      const auto serial_it = cell.find({any.name, any.params_label, mode_name(Mode::serial)});
      const ReportRow* serial = serial_it == cell.end() ? nullptr : serial_it->second[0];
      for (const auto* r : cell[key_of(any)]) {
        if (!r) row.push_back("-");
        else if (r->status == CaseStatus::skipped || !std::isfinite(r->median_s)) row.push_back("skipped");
        else {
          const std::string mark = r->host.doubtful() ? " " + r->host.mark() : "";
          marked = marked || !mark.empty();
          row.push_back(format_seconds(compared_time(*r).s) + scaling_cell(*r, serial) +
                        (r->status != CaseStatus::ok ? std::string(" ") + status_name(r->status) : "") + mark);
        }
      }
      rows.push_back(std::move(row));
    }
    out += "\n" + wrap(block.front()->name + ":" + split.shared) +
           align_columns(rows, [](std::size_t) { return true; });
  }
  if (marked) {
    out += wrap(std::string("!: the host made that number doubtful: ") + kNoiseMarks + " (each file's own report "
                "says how)");
  }
  return out;
}

}  // namespace gpuscale
