// The node-pair sweep's table "pairs": which two nodes exchanged in which
// round, with the world ranks and hosts that ran them, one row per pair;
// phase "round k" of their ranks timed it (report: workloads/node_pairs.hpp).
#pragma once

#include <vector>

#include "io/case_table.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

constexpr const char* kPairsTable = "pairs";

// This rank's row when it takes part in the sweep (its rank in the sweep, its node and host); none otherwise.
std::vector<CaseTable> node_pair_rank_rows(const CaseContext& ctx);
// Rank 0, after the gather: the ranks' rows replaced by the sweep's schedule
// (node_pair_partner), one row per pair: round (1..rounds), node_a < node_b,
// rank_a, rank_b, host_a, host_b.
void node_pair_schedule(std::vector<CaseTable>& tables);

}  // namespace gpuscale
