// The collective's part of the report: its experiments as nccl-tests prints
// them (a block per op, dtype, scope, comm, mode and job, a row per size,
// out-of-place and in-place, then the average bus bandwidth), and the
// node-pair sweep's verdict (workloads/node_pairs.hpp).
#pragma once

#include <string>
#include <vector>

namespace gpuscale {

struct ReportRow;
struct RowAnalysis;

const RowAnalysis& collective_analysis();

// The nccl-tests table of one experiment's rows: "" where it does not apply
// (the node-pair sweep, rows without the collective's keys).
std::string collective_tables(const std::vector<const ReportRow*>& rows);

// nccl-tests' number cell (util.cu, getFloatStr): two decimals while the
// number fits `width` characters, then one, then none, then an exponent.
std::string nccl_float(double v, int width);

}  // namespace gpuscale
