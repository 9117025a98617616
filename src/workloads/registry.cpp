// The explicit list of workloads: a new workload adds one entry here.
#include <stdexcept>

#include "workloads/gemm.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> entries{
      {gemm_schema(), [](const Params& p) { return std::make_unique<GemmWorkload>(p); }},
  };
  return entries;
}

std::vector<WorkloadSchema> workload_schemas() {
  std::vector<WorkloadSchema> out;
  for (const auto& e : workload_registry()) out.push_back(e.schema);
  return out;
}

const WorkloadEntry& find_workload(const std::string& name) {
  for (const auto& e : workload_registry()) {
    if (e.schema.name == name) return e;
  }
  throw std::out_of_range("unknown workload '" + name + "'");
}

}  // namespace gpuscale
