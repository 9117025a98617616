// gpuscale report: read result files and print their rows, no MPI.
#include <cstdio>
#include <iostream>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "io/result_reader.hpp"
#include "report/report.hpp"
#include "report/side_by_side.hpp"

namespace gpuscale {

int cmd_report(const std::vector<std::string>& files, const std::string& format, double pair_threshold,
               double straggler_threshold) {
  const ReportFormat f = parse_report_format(format);
  if (!(pair_threshold > 0 && pair_threshold <= 1)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", pair_threshold);
    throw InputError(std::string("--pair-threshold must be above 0 and at most 1 (a share of the best node pair's "
                                 "bandwidth, e.g. 0.93); got ") + got);
  }
  if (!(straggler_threshold > 0)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", straggler_threshold);
    throw InputError(std::string("--straggler-threshold must be above 0 (how much slower than the others' median a "
                                 "rank or node may be, e.g. 0.2 for 20%); got ") + got);
  }
  std::vector<ReportRow> all;
  std::vector<RunRows> runs;
  for (const auto& path : files) {
    std::vector<ReportRow> rows;
    const RunRecord run = read_result_file(path, [&](const RunRecord& header, CaseRecord&& c) {
      rows.push_back(report_row(header, c, pair_threshold, straggler_threshold));
    });
    relate_rows(rows);
    for (auto& r : rows) r.file = path;
    if (f == ReportFormat::table) {
      std::cout << render_table(path, run, rows) << (files.size() > 1 ? "\n" : "");
    }
    all.insert(all.end(), rows.begin(), rows.end());
    runs.push_back({path, static_cast<int>(run.ranks.size()), run.nodes, std::move(rows)});
  }
  if (f == ReportFormat::table) std::cout << render_side_by_side(runs);
  if (f == ReportFormat::csv) std::cout << render_csv(all);
  if (f == ReportFormat::json) std::cout << render_json(all);
  return kExitOk;
}

}  // namespace gpuscale
