// The limits of [experiment.expect], checked against a file's rows: which
// case, which limit, what was measured and what was expected (report --check,
// and `run` at its end).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/report.hpp"

namespace gpuscale {

struct LimitCheck {
  std::size_t case_index = 0;
  std::string label;  // "gemm-512 size=512 ... [parallel]"
  std::string limit;  // e.g. min_gflops_per_rank; "verified": the case's result was right
  double expected = 0.0;
  std::optional<double> measured;
  bool holds = false;
  std::string why;  // when it fails without a number: skipped, verification failed, not measured
  // Why the limit does not bound the case on this job ("4 ranks on 2 cores"): it then neither holds nor fails.
  std::string not_applicable;
  // A limit that failed on a case the host disturbed: what it did ("host busy: others used 63% of node 0's 2
  // CPUs"), so that the GPU or link is not blamed alone.
  std::string host;
};

// Whether a limit bounds a case of this mode and parameters: min_efficiency
// parallel ones that have an efficiency, min_of_vendor our kernels, not the
// vendor library.
bool limit_applies(const std::string& limit, Mode mode, const Params& params);

// The job's node with the most ranks per core: its ranks and its cores ({0, 0}: no node's cores are known).
std::pair<int, int> most_crowded_node(const RunRecord& run);

// The number `limit` bounds in a row, as the report computes it (none: not measured, or not a limit's name).
std::optional<double> limit_measure(const ReportRow& r, const std::string& limit);

// Every limit of a row that applies to it (min_efficiency: parallel rows that can have an efficiency).
std::vector<LimitCheck> check_row(const ReportRow& r);

// Of every row whose experiment set limits: "verified", then check_row; in row order.
std::vector<LimitCheck> check_expectations(const std::vector<ReportRow>& rows);

// The check: `every` false, the limits that failed, under their case, then those that do not apply, a line per
// limit and reason; `every`, each case with each of its limits and what it came to. Then the verdict
// (check_summary), once, on the last line. `checks` in case order.
std::string render_checks(const std::string& path, const std::vector<LimitCheck>& checks, bool every = false);
// render_checks without the verdict, for a caller that says more before it.
std::string render_check_lines(const std::vector<LimitCheck>& checks, bool every);
// The verdict in a line: "f.h5: check: 12 limits checked in 6 cases: 11 hold, 1 FAILED" ("all hold"; "..., 2 not
// applicable").
std::string check_summary(const std::string& path, const std::vector<LimitCheck>& checks);

// True when no limit failed (one that is not applicable does not fail).
bool all_hold(const std::vector<LimitCheck>& checks);

// The limits of the planned cases that are not in `rows` (a run that did not
// complete): each one failed, as "the case did not run".
std::vector<LimitCheck> unchecked_limits(const RunRecord& run, const std::vector<ReportRow>& rows);

}  // namespace gpuscale
