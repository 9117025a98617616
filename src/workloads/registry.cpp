// The explicit list of workloads: a new workload adds one line here.
#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "report/analysis.hpp"
#include "workloads/async_probe.hpp"
#include "workloads/collective.hpp"
#include "workloads/copy.hpp"
#include "workloads/distributed_gemm.hpp"
#include "workloads/dp_step.hpp"
#include "workloads/elementwise.hpp"
#include "workloads/gemm.hpp"
#include "workloads/gemv.hpp"
#include "workloads/p2p.hpp"
#include "workloads/pipeline.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

const std::vector<const WorkloadType*>& workload_registry() {
  static const std::vector<const WorkloadType*> types{
      &gemm_type(),
      &copy_type(),
      &async_type(),
      &collective_type(),
      &elementwise_type(),
      &pipeline_type(),
      &distributed_gemm_type(),
      &dp_step_type(),
      &p2p_type(),
      &gemv_type(),
  };
  return types;
}

ParamSpec graph_param() {
  // Optional (absent means false), so that labels of eager cases stay as they were.
  return {"graph", ParamType::Bool, "true: record a sample's work once as a CUDA graph and replay it (CUDA backend)",
          std::nullopt, 0, {}};
}

bool uses_graph(const Params& p) { return p.has("graph") && p.get_bool("graph"); }

std::string graph_unsupported(const Params& p, const RunTarget& target) {
  if (uses_graph(p) && target.backend != Backend::cuda) {
    return "graph = true needs the CUDA backend (CUDA graphs)";
  }
  return "";
}

std::vector<WorkloadSchema> workload_schemas() {
  std::vector<WorkloadSchema> out;
  for (const WorkloadType* t : workload_registry()) out.push_back(t->schema());
  return out;
}

void check_plan_runs_on(const std::vector<Case>& plan, const RunTarget& target) {
  for (const auto& c : plan) {
    const std::string where = c.numbered(plan.size()) + ": ";
    std::string why;
    try {
      why = find_workload(c.workload).unsupported(c.params, target);
    } catch (const InputError& e) {  // parameters valid one by one but not together
      throw InputError(where + e.what());
    }
    if (why.empty()) continue;
    std::string run = target.backend == Backend::cpu ? "this run uses the CPU backend" : "";
    if (find_workload(c.workload).scope(c.params)) {
      const std::string comm = target.comm == CommKind::mpi ? "MPI" : "NCCL";
      run += (run.empty() ? "this run moves data with " : " and moves data with ") + comm;
    }
    throw InputError(where + why + (run.empty() ? "" : "; " + run));
  }
}

std::vector<std::string> drop_single_turn_serials(std::vector<Case>& plan) {
  std::vector<std::string> notes;
  std::vector<Case> kept;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Case& c = plan[i];
    const bool twin = c.mode == Mode::serial && i + 1 < plan.size() && plan[i + 1].mode == Mode::parallel &&
                      plan[i + 1].experiment == c.experiment && plan[i + 1].params == c.params;
    if (twin && find_workload(c.workload).single_turn(c.params)) {
      const std::string n = "experiment '" + c.experiment +
                            "': one group takes every turn, so serial and parallel are the same; each such case "
                            "runs once, as parallel";
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
      continue;
    }
    kept.push_back(c);
    kept.back().index = kept.size() - 1;
  }
  plan = std::move(kept);
  return notes;
}

namespace {

const RowAnalysis* analysis_by_name(const std::string& workload) {
  for (const WorkloadType* t : workload_registry()) {
    if (t->schema().name == workload) return t->analysis();
  }
  return nullptr;
}

Params params_as_typed(const std::string& workload, const Params& stored) {
  const WorkloadType* type = nullptr;
  for (const WorkloadType* t : workload_registry()) {
    if (t->schema().name == workload) type = t;
  }
  if (!type) return stored;
  Params out;
  for (const auto& [key, v] : stored.items()) {
    const ParamSpec* spec = nullptr;
    for (const auto& s : type->schema().params) {
      if (s.key == key) spec = &s;
    }
    const auto* i = std::get_if<std::int64_t>(&v);
    if (spec && spec->type == ParamType::Bool && i && (*i == 0 || *i == 1)) {
      out.set(key, Value{*i == 1});
    } else {
      out.set(key, v);
    }
  }
  return out;
}

// The report's view of the workloads (report/analysis.hpp), set before main: the report comes before the workloads
// in the include order and reaches them only through this.
[[maybe_unused]] const bool kReportLookupSet = (set_workload_lookup({&analysis_by_name, &params_as_typed}), true);

}  // namespace

const std::vector<StreamKind>& stream_kinds() {
  static const std::vector<StreamKind> kinds = [] {
    std::vector<StreamKind> v = builtin_stream_kinds();
    for (const WorkloadType* t : workload_registry()) {
      for (const StreamKind& k : t->stream_kinds()) v.push_back(k);
    }
    return v;
  }();
  return kinds;
}

const StreamKind& find_stream_kind(const std::string& name) {
  for (const StreamKind& k : stream_kinds()) {
    if (k.name == name) return k;
  }
  throw std::out_of_range("unknown kind of memory traffic '" + name + "'");
}

const WorkloadType& find_workload(const std::string& name) {
  for (const WorkloadType* t : workload_registry()) {
    if (t->schema().name == name) return *t;
  }
  throw std::out_of_range("unknown workload '" + name + "'");
}

}  // namespace gpuscale
