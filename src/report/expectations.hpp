// The limits of [experiment.expect], checked against a file's rows: which
// case, which limit, what was measured and what was expected (report --check,
// and `run` at its end).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace gpuscale {

struct LimitCheck {
  std::size_t case_index = 0;
  std::string label;  // "gemm-512 size=512 ... [parallel]"
  std::string limit;  // e.g. min_gflops_per_rank
  double expected = 0.0;
  std::optional<double> measured;
  bool holds = false;
  std::string why;  // when it fails without a number: skipped, verification failed, not measured
};

// Every limit of a row that applies to it (min_efficiency: parallel rows that can have an efficiency).
std::vector<LimitCheck> check_row(const ReportRow& r);

// check_row of every row, in row order.
std::vector<LimitCheck> check_expectations(const std::vector<ReportRow>& rows);

// "check: all 4 limit(s) of 2 case(s) hold" or one line per failed limit after a count.
std::string render_checks(const std::string& path, const std::vector<LimitCheck>& checks);

bool all_hold(const std::vector<LimitCheck>& checks);

}  // namespace gpuscale
