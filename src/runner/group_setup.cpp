#include "runner/group_setup.hpp"

#include <chrono>
#include <functional>

#include "workloads/workload.hpp"

namespace gpuscale {

PlanGroups plan_groups(const std::vector<Case>& plan, int world_size) {
  PlanGroups need;
  for (const auto& c : plan) {
    const auto& type = find_workload(c.workload);
    const auto scope = type.scope(c.params);
    if (!scope) continue;
    // As Runner::context picks it: a group larger than the job is the workload's to skip, on the world meanwhile.
    const int first = type.group_size(c.params);
    if (first > 0 && first <= world_size) {
      need.firsts.insert(first);
    } else {
      need.scopes.insert(*scope);
    }
  }
  return need;
}

namespace {

// One element summed over the group: the communicator's first operation, where its connections are made.
void first_use(Group& g, Device& dev) {
  if (!g.data) return;
  DeviceBuffer one = dev.alloc(sizeof(float));
  g.data->allreduce(one.data(), one.data(), 1, DType::fp32);
  g.data->synchronize();
}

}  // namespace

GroupSetup set_up_groups(Groups& groups, const PlanGroups& need, Watchdog* watchdog, double bound_s,
                         const std::string& why) {
  GroupSetup done;
  if (need.empty()) return done;
  const auto t0 = std::chrono::steady_clock::now();
  auto make = [&](const std::string& what, const std::function<Group&()>& get) {
    if (watchdog) watchdog->arm("the data plane's set-up (" + what + ")", bound_s, why);
    Group& g = get();
    first_use(g, groups.device());
    if (g.data) ++done.communicators;
  };
  // The world first: the other groups are split from it where the data plane splits.
  make("world", [&]() -> Group& { return groups.get(Scope::world); });
  for (const Scope s : need.scopes) {
    if (s != Scope::world) make(std::string("scope ") + scope_name(s), [&]() -> Group& { return groups.get(s); });
  }
  for (const int n : need.firsts) {
    make("the first " + std::to_string(n) + " ranks", [&]() -> Group& { return groups.first(n); });
  }
  if (watchdog) watchdog->disarm();
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return done;
}

}  // namespace gpuscale
