// The explicit list of workloads: a new workload adds one entry here.
#include <stdexcept>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "workloads/async_probe.hpp"
#include "workloads/copy.hpp"
#include "workloads/gemm.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> entries{
      {gemm_schema(), [](const Params& p) { return std::make_unique<GemmWorkload>(p); }, gemm_problem_unsupported},
      {copy_schema(), [](const Params& p) { return std::make_unique<CopyWorkload>(p); },
       [](const Params&, const std::string&) { return std::string(); }},
      {async_schema(), [](const Params& p) { return std::make_unique<AsyncProbeWorkload>(p); },
       gemm_problem_unsupported},
  };
  return entries;
}

std::vector<WorkloadSchema> workload_schemas() {
  std::vector<WorkloadSchema> out;
  for (const auto& e : workload_registry()) out.push_back(e.schema);
  return out;
}

void check_plan_runs_on(const std::vector<Case>& plan, const std::string& backend) {
  for (const auto& c : plan) {
    const std::string where = "case [" + std::to_string(c.index) + "] " + c.label() + ": ";
    std::string why;
    try {
      why = find_workload(c.workload).unsupported(c.params, backend);
    } catch (const InputError& e) {  // parameters valid one by one but not together
      throw InputError(where + e.what());
    }
    if (!why.empty()) throw InputError(where + why + (backend == "cpu" ? "; this run uses the CPU backend" : ""));
  }
}

const WorkloadEntry& find_workload(const std::string& name) {
  for (const auto& e : workload_registry()) {
    if (e.schema.name == name) return e;
  }
  throw std::out_of_range("unknown workload '" + name + "'");
}

}  // namespace gpuscale
