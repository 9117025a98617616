// Every registered workload under mpiexec -n 2 and -n 4, from its examples
// (WorkloadType::examples) alone: the plan of them in both modes, as
// gpuscale run makes it, runs on the CPU backend over MPI, and each case
// verifies on every rank, or is skipped with the reason the estimate gives for
// this job's shape. A new workload is covered here without an edit.
#include <catch2/catch.hpp>

#include "comm/mpi_communicator.hpp"
#include "common/mpi_rig.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;
using Rig = testing::Rig<>;

namespace {

// An example as a case of the plan: the runner's keys at the config's defaults (one warm-up and two samples,
// to keep it short), then the workload's.
Case example_case(const WorkloadType& type, const Params& example, const std::string& mode) {
  Case c;
  c.experiment = c.workload = type.schema().name;
  c.mode = *parse_mode(mode);
  for (const ParamSpec& s : case_common_specs(Defaults{})) {
    if (s.default_value) c.params.set(s.key, *s.default_value);
  }
  c.params.set("warmup", std::int64_t{1});
  c.params.set("reps", std::int64_t{2});
  for (const auto& [key, value] : example.items()) c.params.set(key, value);
  return c;
}

// Every example of every registered workload, serial then parallel, less the serials that equal their parallel
// twin (as the plan drops them), numbered.
std::vector<Case> examples_plan() {
  std::vector<Case> plan;
  for (const WorkloadType* type : workload_registry()) {
    for (const Params& p : type->examples()) {
      for (const std::string& mode : mode_choices()) plan.push_back(example_case(*type, p, mode));
    }
  }
  for (std::size_t i = 0; i < plan.size(); ++i) plan[i].index = i;
  drop_single_turn_serials(plan);
  return plan;
}

}  // namespace

TEST_CASE("every workload has examples, each a case the CPU backend runs over MPI", "[mpi][registry]") {
  for (const WorkloadType* type : workload_registry()) {
    INFO("workload " << type->schema().name);
    CHECK_FALSE(type->examples().empty());
  }
  const std::vector<Case> plan = examples_plan();
  CHECK_NOTHROW(check_plan_runs_on(plan, {Backend::cpu, CommKind::mpi}));
}

TEST_CASE("every example of every workload verifies on every rank, or is skipped with the reason",
          "[mpi][registry]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const JobShape job{comm.size(), comm.node_count(), comm.size()};
  for (const Case& c : examples_plan()) {
    const CaseRecord rec = rig.runner.run(c);
    if (comm.rank() != 0) continue;
    const std::string skip = find_workload(c.workload).work(c.params, job).skip_reason;
    INFO("workload " << c.workload << ": " << c.label() << " on " << comm.size() << " ranks");
    INFO(status_name(rec.status) << (rec.status_reason.empty() ? "" : ": " + rec.status_reason));
    if (skip.empty()) {
      CHECK(rec.status == CaseStatus::ok);
      CHECK_FALSE(rec.device_time_s.empty());  // timed samples, of every rank that took part
    } else {
      CHECK(rec.status == CaseStatus::skipped);
      CHECK(rec.status_reason == skip);
    }
  }
}
