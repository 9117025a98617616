// What report prints on a terminal: every string read from a result file
// (names, hostnames, notes, status, warnings) with its control characters
// escaped, so that a file of an older version or another writer cannot move
// the cursor, recolour the screen or break a table's lines.
#pragma once

#include <vector>

#include "report/report.hpp"

namespace gpuscale {

// `rows` with every string made printable (core/text.hpp).
std::vector<ReportRow> for_terminal(std::vector<ReportRow> rows);

// `run` with the strings of the table's header made printable: version, date,
// backend, status, last update and warnings.
RunRecord for_terminal(RunRecord run);

}  // namespace gpuscale
