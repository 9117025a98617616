// The report's view of gemm: our kernels (impl other than vendor) against
// the vendor library (cuBLAS, OpenBLAS) on the same problem: "of vendor" =
// GFLOP/s per rank over impl vendor's for the same dtype, shape, mode, ranks
// and nodes in the same file, in the same experiment where it has one.
#pragma once

#include "report/analysis.hpp"

namespace gpuscale {

const RowAnalysis& gemm_analysis();

}  // namespace gpuscale
