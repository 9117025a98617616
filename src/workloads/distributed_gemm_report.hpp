// The report's view of distributed_gemm: strong scaling. A row with
// group_size g > 1 gets speedup = the median of the row of the same
// experiment and parameters with group_size = 1 over its own, and efficiency =
// speedup / g; and, as any workload marking compute and transfer, its exposed
// transfer and overlap (workloads/overlap_report.hpp).
#pragma once

#include "report/analysis.hpp"

namespace gpuscale {

const RowAnalysis& distributed_gemm_analysis();

}  // namespace gpuscale
