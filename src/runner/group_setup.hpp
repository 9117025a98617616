// The data plane's set-up before the first case: every group the plan moves
// data in is made here, each under a watchdog bound of its own, and used once
// (one element summed), so that neither NCCL's communicator set-up nor its
// lazy first connection falls inside a case's setup bound.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "comm/groups.hpp"
#include "core/plan.hpp"
#include "runner/watchdog.hpp"

namespace gpuscale {

// The groups a plan's cases use: their scopes, and the sizes of their groups of the first n ranks.
struct PlanGroups {
  std::set<Scope> scopes;
  std::set<int> firsts;
  bool empty() const { return scopes.empty() && firsts.empty(); }
};
PlanGroups plan_groups(const std::vector<Case>& plan, int world_size);

struct GroupSetup {
  int communicators = 0;  // data-plane communicators this rank holds
  double seconds = 0;     // this rank's time to make and first use them
};

// Collective. `watchdog` (may be null) is armed for `bound_s` afresh for each group, with `why` as its reason,
// and disarmed once all are made.
GroupSetup set_up_groups(Groups& groups, const PlanGroups& need, Watchdog* watchdog, double bound_s,
                         const std::string& why);

}  // namespace gpuscale
