// gpuscale baseline FILES... -o expect.toml: expected values per case from a fleet's runs of one config
// (report/fleet_baseline.hpp), for `report --check --expect`.
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "app/output_path.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "io/result_reader.hpp"
#include "report/analysis.hpp"
#include "report/fleet_baseline.hpp"

namespace gpuscale {

CLI::App* add_baseline_command(CLI::App& app, BaselineOptions& opt) {
  auto* cmd = app.add_subcommand("baseline", "Derive expected values per case from several runs of one config (a "
                                              "fleet's own): limits for 'report --check --expect'");
  cmd->add_option("files", opt.files,
                  "Result files (HDF5) of one config, at least 3 (e.g. one run per node of a fleet, or repeated "
                  "runs); a case measured with the host busy or a rank descheduled is left out of its limit")
      ->required();
  cmd->add_option("-o,--output", opt.output,
                  "The limits file to write (TOML): per case the median of the runs less the larger of 10% and 3x "
                  "their scatter (a time: plus), with a comment saying where it came from")->required();
  cmd->add_flag("--force", opt.force, "Overwrite the -o file if it exists");
  cmd->footer("Example:\n  gpuscale baseline results/accept-node*.h5 -o expect.toml\n"
              "  gpuscale report results/accept-new.h5 --check --expect expect.toml");
  return cmd;
}

int cmd_baseline(const BaselineOptions& opt) {
  if (opt.files.size() < kMinBaselineRuns) {
    throw InputError("a baseline needs at least " + std::to_string(kMinBaselineRuns) + " runs of one config, got " +
                     std::to_string(opt.files.size()) + ": nothing written");
  }
  FileBeside file(check_output(opt.output, opt.force, opt.files));  // before the reading: a mistake costs no time
  std::vector<std::pair<std::string, std::pair<RunRecord, std::vector<ReportRow>>>> runs;
  for (const auto& path : opt.files) {
    std::vector<ReportRow> rows;
    RunRecord run = read_result_file(
        path, [&](const RunRecord& header, CaseRecord&& c) { rows.push_back(report_row(header, c, RowSettings{})); },
        VisitOn::either_thread);
    relate_rows(rows);
    runs.push_back({path, {std::move(run), std::move(rows)}});
  }
  const FleetBaseline b = derive_baseline(runs);
  file.stream() << limits_toml(b);
  file.commit();
  std::size_t with = 0;
  for (const auto& c : b.cases) with += c.skipped.empty() ? 1 : 0;
  const std::string others = with < b.cases.size() ? " (the others: see the file)" : "";
  std::cout << printable(wrap(file.where() + ": limits for " + std::to_string(with) + " of " +
                              std::to_string(b.cases.size()) + " case(s) from " + std::to_string(runs.size()) +
                              " runs of " + b.config_file + others + "; check a run with 'gpuscale report RUN.h5 "
                              "--check --expect " + file.where() + "'"),
                         "\n")
            << std::flush;
  return kExitOk;
}

}  // namespace gpuscale
