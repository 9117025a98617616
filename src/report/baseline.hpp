// A run against an older one of the same cases (report NEW --baseline OLD):
// each case's median over the baseline's, with a 95% interval from both
// cases' samples, and a verdict: faster, slower or within noise.
#pragma once

#include <string>
#include <vector>

#include "report/report.hpp"

namespace gpuscale {

// Sets `baseline` on every row of `rows` that ran: the row of `base` with the
// same experiment, parameters, mode, ranks and nodes, or a verdict saying why none.
void compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<ReportRow>& base,
                           const std::string& base_path);

// The comparison as a table that fits 80 columns ("" when no row has one).
std::string render_baseline(const std::vector<ReportRow>& rows);

}  // namespace gpuscale
