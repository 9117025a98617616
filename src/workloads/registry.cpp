// The explicit list of workloads: a new workload adds one entry here.
#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "workloads/async_probe.hpp"
#include "workloads/collective.hpp"
#include "workloads/copy.hpp"
#include "workloads/distributed_gemm.hpp"
#include "workloads/dp_step.hpp"
#include "workloads/elementwise.hpp"
#include "workloads/gemm.hpp"
#include "workloads/pipeline.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

std::string gemm_unsupported_on(const Params& p, const RunTarget& t) {
  const std::string why = gemm_problem_unsupported(p, t.backend);
  return why.empty() ? graph_unsupported(p, t) : why;
}

std::string async_unsupported_on(const Params& p, const RunTarget& t) {
  if (std::string why = gemm_unsupported_on(p, t); !why.empty()) return why;
  if (uses_graph(p) && (p.get_string("sync") == "each" || p.get_string("log_norm") == "host")) {
    return "graph = true cannot record sync = \"each\" or log_norm = \"host\": the host waits for the device "
           "inside the sample";
  }
  return "";
}

WorkloadEntry collective_entry() {
  WorkloadEntry e{collective_schema(), [](const Params& p) { return std::make_unique<CollectiveWorkload>(p); },
                  collective_unsupported, collective_memory, collective_work};
  e.scope = [](const Params& p) { return std::optional<Scope>(parse_scope(p.get_string("scope"))); };
  // One group of all ranks takes every turn, except pairs, whose pairs take turns; the node-pair sweep is one group.
  e.single_turn = [](const Params& p) {
    const std::string scope = p.get_string("scope");
    return (scope == "world" && p.get_string("op") != "pairs") || scope == "node-pairs";
  };
  return e;
}

// Like collective: the groups of its scope, and with one group of all ranks serial is parallel.
WorkloadEntry dp_step_entry() {
  WorkloadEntry e{dp_step_schema(), [](const Params& p) { return std::make_unique<DpStepWorkload>(p); },
                  dp_step_unsupported, dp_step_memory, dp_step_work};
  e.scope = [](const Params& p) { return std::optional<Scope>(parse_scope(p.get_string("scope"))); };
  e.single_turn = [](const Params& p) { return p.get_string("scope") == "world"; };
  return e;
}

WorkloadEntry distributed_gemm_entry() {
  WorkloadEntry e{distributed_gemm_schema(),
                  [](const Params& p) { return std::make_unique<DistributedGemmWorkload>(p); },
                  distributed_gemm_unsupported, distributed_gemm_memory, distributed_gemm_work};
  e.scope = [](const Params&) { return std::optional<Scope>(Scope::world); };
  e.group_size = [](const Params& p) { return p.has("group_size") ? static_cast<int>(p.get_int("group_size")) : 0; };
  e.single_turn = [](const Params&) { return true; };  // one group: serial and parallel are the same
  return e;
}

}  // namespace

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> entries{
      {gemm_schema(), [](const Params& p) { return std::make_unique<GemmWorkload>(p); }, gemm_unsupported_on,
       [](const Params& p, bool) { return gemm_memory(p); }, gemm_work},
      {copy_schema(), [](const Params& p) { return std::make_unique<CopyWorkload>(p); },
       [](const Params&, const RunTarget&) { return std::string(); },
       [](const Params& p, bool) { return copy_memory(p); }, copy_work},
      {async_schema(), [](const Params& p) { return std::make_unique<AsyncProbeWorkload>(p); }, async_unsupported_on,
       [](const Params& p, bool) { return async_memory(p); }, async_work},
      collective_entry(),
      {elementwise_schema(), [](const Params& p) { return std::make_unique<ElementwiseWorkload>(p); },
       elementwise_unsupported, elementwise_memory, elementwise_work},
      {pipeline_schema(), [](const Params& p) { return std::make_unique<PipelineWorkload>(p); },
       [](const Params& p, const RunTarget& t) { return gemm_problem_unsupported(p, t.backend); },
       [](const Params& p, bool) { return pipeline_memory(p); }, pipeline_work},
      distributed_gemm_entry(),
      dp_step_entry(),
  };
  return entries;
}

ParamSpec graph_param() {
  // Optional (absent means false), so that labels of eager cases stay as they were.
  return {"graph", ParamType::Bool, "true: record a sample's work once as a CUDA graph and replay it (CUDA backend)",
          std::nullopt, 0, {}};
}

bool uses_graph(const Params& p) { return p.has("graph") && p.get_bool("graph"); }

std::string graph_unsupported(const Params& p, const RunTarget& target) {
  if (uses_graph(p) && target.backend != "cuda") {
    return "graph = true needs the CUDA backend (CUDA graphs)";
  }
  return "";
}

std::vector<WorkloadSchema> workload_schemas() {
  std::vector<WorkloadSchema> out;
  for (const auto& e : workload_registry()) out.push_back(e.schema);
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
    std::string run = target.backend == "cpu" ? "this run uses the CPU backend" : "";
    if (find_workload(c.workload).scope(c.params)) {
      const std::string comm = target.comm == "mpi" ? "MPI" : "NCCL";
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
    const bool twin = c.mode == "serial" && i + 1 < plan.size() && plan[i + 1].mode == "parallel" &&
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

const WorkloadEntry& find_workload(const std::string& name) {
  for (const auto& e : workload_registry()) {
    if (e.schema.name == name) return e;
  }
  throw std::out_of_range("unknown workload '" + name + "'");
}

}  // namespace gpuscale

// TEMPORARY until the typed registration lands.
#include "report/analysis.hpp"
#include "workloads/distributed_gemm_report.hpp"
#include "workloads/gemm_report.hpp"
#include "workloads/node_pairs.hpp"
#include "workloads/overlap_report.hpp"
namespace gpuscale {
const RowAnalysis* analysis_of(const std::string& w) {
  if (w == "gemm") return &gemm_analysis();
  if (w == "collective") return &node_pair_analysis();
  if (w == "distributed_gemm") return &distributed_gemm_analysis();
  if (w == "pipeline" || w == "dp_step") return &overlap_analysis();
  return nullptr;
}
}  // namespace gpuscale
