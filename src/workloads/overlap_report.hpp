// The report's view of workloads that mark phases "compute" and "transfer"
// (pipeline, distributed_gemm, dp_step): the transfer time no compute hid
// and the hidden share of the transfer (1 - exposed / wire, in [0, 1]), both
// from the case's breakdown (report/breakdown.hpp).
#pragma once

#include "io/result_model.hpp"
#include "report/analysis.hpp"

namespace gpuscale {

// Adds figures exposed_transfer_s and overlap_fraction to `r` where the case marked both phases (r.phase_s)
// and has a breakdown (made from `c` where the row has none yet: the table's rows are made without one).
void add_overlap_figures(const CaseRecord& c, ReportRow& r);
// A workload's analysis that adds only those figures.
const RowAnalysis& overlap_analysis();

}  // namespace gpuscale
