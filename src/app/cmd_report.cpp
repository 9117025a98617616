// gpuscale report: read result files and print their rows, no MPI.
#include <iostream>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "io/result_reader.hpp"
#include "report/report.hpp"

namespace gpuscale {

int cmd_report(const std::vector<std::string>& files, const std::string& format) {
  const ReportFormat f = parse_report_format(format);
  std::vector<ReportRow> all;
  for (const auto& path : files) {
    const RunRecord run = read_result_file(path);
    auto rows = build_report(run);
    for (auto& r : rows) r.file = path;
    if (f == ReportFormat::table) {
      std::cout << render_table(path, run, rows) << (files.size() > 1 ? "\n" : "");
    }
    all.insert(all.end(), rows.begin(), rows.end());
  }
  if (f == ReportFormat::csv) std::cout << render_csv(all);
  if (f == ReportFormat::json) std::cout << render_json(all);
  return kExitOk;
}

}  // namespace gpuscale
