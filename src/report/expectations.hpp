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

// Whether a limit bounds a case of this mode and parameters: min_efficiency
// parallel ones that have an efficiency, min_of_vendor our kernels, not the
// vendor library.
bool limit_applies(const std::string& limit, const std::string& mode, const Params& params);

// Every limit of a row that applies to it (min_efficiency: parallel rows that can have an efficiency).
std::vector<LimitCheck> check_row(const ReportRow& r);

// check_row of every row, in row order.
std::vector<LimitCheck> check_expectations(const std::vector<ReportRow>& rows);

// "check: all 4 limit(s) of 2 case(s) hold" or one line per failed limit after a count.
std::string render_checks(const std::string& path, const std::vector<LimitCheck>& checks);

bool all_hold(const std::vector<LimitCheck>& checks);

// The limits of the planned cases that are not in `rows` (a run that did not
// complete): each one failed, as "the case did not run".
std::vector<LimitCheck> unchecked_limits(const RunRecord& run, const std::vector<ReportRow>& rows);

}  // namespace gpuscale
