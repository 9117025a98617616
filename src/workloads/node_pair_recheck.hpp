// The node-pair sweep's second look (as ClusterKit does): after the timed samples, one more sweep untimed by the
// runner screens the pairs, and every pair below kNodePairThreshold of the best is run again, alone, `reps` times.
// Each member's rows go into the table "rechecks"; the report calls a link slow only where it was slow again
// (workloads/node_pairs.hpp).
#pragma once

#include <cstdint>
#include <functional>

#include "io/case_table.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

constexpr const char* kRechecksTable = "rechecks";

struct PairExchange {
  std::function<void()> barrier;                            // every member of the sweep, through the data plane
  std::function<void(int partner, std::int64_t iters)> run;  // this member's end of `iters` exchanges
};

// Collective over the sweep's members. One row per round this member exchanged in: round, sweep_seconds (its end
// of the screening sweep), alone_seconds (the median of the pair alone; NaN when the screen found it fast),
// alone_samples.
CaseTable recheck_slow_pairs(CaseContext& ctx, const PairExchange& x, std::int64_t iters, std::int64_t reps);

}  // namespace gpuscale
