// The subcommands of the gpuscale command line; each returns the exit code.
#pragma once

#include <string>
#include <vector>

#include "core/plan.hpp"

namespace gpuscale {

struct RunOptions {
  std::string config;
  std::string output;  // empty: results/<config stem>-<timestamp>.h5
  std::vector<std::string> sets;
  bool force = false;
  std::size_t max_cases = kDefaultMaxCases;
  std::string command_line;
};

int cmd_run(const RunOptions& opt, int* argc, char*** argv);
int cmd_check(const std::string& config, const std::vector<std::string>& sets, std::size_t max_cases);
struct ReportOptions {
  std::vector<std::string> files;
  std::string format = "table";  // table | csv | json
  bool wide = false;             // table: every column
  std::string baseline;          // a result file to compare every case with ("" none)
  bool check = false;            // check [experiment.expect]'s limits: exit 1 when one fails
  double pair_threshold = 0.93;  // node pairs below this share of the best pair are slow (0 < it <= 1)
  double straggler_threshold = 0.2;
};

int cmd_report(const ReportOptions& opt);
int cmd_info(int* argc, char*** argv);

// "gpuscale: error: MESSAGE" on stderr.
void print_error(const std::string& message);

}  // namespace gpuscale
