// The report's view of workloads that mark phases "compute" and "transfer"
// (pipeline, distributed_gemm, dp_step): the transfer time the compute did not
// hide (sample time - compute), and the hidden share of the transfer
// ((compute + transfer - sample time) / transfer, in [0, 1]); medians over the
// ranks that took part and their samples.
#pragma once

#include "io/result_model.hpp"
#include "report/analysis.hpp"

namespace gpuscale {

// Adds figures exposed_transfer_s and overlap_fraction to `r` where the case marked both phases.
void add_overlap_figures(const CaseRecord& c, ReportRow& r);
// A workload's analysis that adds only those figures.
const RowAnalysis& overlap_analysis();

}  // namespace gpuscale
