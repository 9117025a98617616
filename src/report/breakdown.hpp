// Where a case's sample time goes: parts that add up to the sample time
// (compute, exposed transfer, launch and host overhead, waiting for the
// slowest rank) and, beside them, the transfer on the wire, hidden or not.
// From a result file (report --breakdown) or from a model's prediction
// (gpuscale predict). Definitions: docs/metrics.md and docs/model.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/result_model.hpp"

namespace gpuscale {

struct Breakdown {
  double total_s = 0;     // the sample time the parts split (a row's median_s, or a predicted median)
  double compute_s = 0;   // device-local work: gemm calls, copies, elementwise passes
  double exposed_s = 0;   // transfer time that no compute hid
  double overhead_s = 0;  // launch and host overhead: the median rank's span outside compute and exposed transfer
  double wait_s = 0;      // waiting for the slowest rank: makespan - the median rank's span (serial: per turn)
  double wire_s = 0;      // transfer on the wire, hidden or not: beside the parts, not one of them
  double sum() const { return compute_s + exposed_s + overhead_s + wait_s; }
};

// The breakdown of a case that ran (status ok), from its samples and phases; none for a skipped case.
std::optional<Breakdown> measured_breakdown(const CaseRecord& c);
// The same with its total given: the row's median_s, which report_row has computed already.
std::optional<Breakdown> measured_breakdown(const CaseRecord& c, double total_s);

// One line of a breakdown table: what it is (a case, a prediction) and its parts.
struct BreakdownLine {
  std::string label;
  Breakdown parts;
};
// The lines as a text table of at most 80 columns (labels on lines of their own where they do not fit): median,
// compute, exposed transfer, overhead, wait, wire and how close the parts add up to the median; a legend below.
std::string render_breakdown(const std::vector<BreakdownLine>& lines);

// The breakdown as a JSON object's text: {"total_s", "compute_s", "exposed_transfer_s", "overhead_s", "wait_s",
// "wire_s", "sum_s"}, numbers as numbers (docs/analysis.md).
std::string breakdown_json(const Breakdown& b);

}  // namespace gpuscale
