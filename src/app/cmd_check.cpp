// gpuscale check: validate a config and print the expanded plan, no MPI.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "app/commands.hpp"
#include "comm/comm_choice.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/backend.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

int cmd_check(const std::string& config, const std::vector<std::string>& sets, std::size_t max_cases) {
  const Config cfg = load_config(config, sets, workload_schemas(), environment_defaults(std::getenv("SLURM_CPUS_PER_TASK")));
  check_plan_size(cfg, max_cases);
  auto plan = expand(cfg);
  const auto notes = drop_single_turn_serials(plan);
  // The plan is checked against the backend it asks for, even where that
  // backend cannot run (a config written on a login node without GPUs).
  BackendChoice backend;
  try {
    backend = choose_backend(cfg.defaults.backend, probe_cuda());
  } catch (const InputError& e) {
    backend = {cfg.defaults.backend, std::string(e.what()) + " on this machine"};
  }
  CommChoice comm;
  try {
    comm = choose_comm(cfg.defaults.comm, backend.backend, nccl_built());
  } catch (const InputError& e) {
    if (backend.backend == cfg.defaults.backend || cfg.defaults.comm != "nccl") throw;
    comm = {cfg.defaults.comm, std::string(e.what()) + " on this machine"};  // the CUDA backend is not here either
  }
  check_plan_runs_on(plan, {backend.backend, comm.comm});
  std::printf("%s: %zu experiment(s), %zu case(s); backend %s (%s); comm %s (%s); timeout %g s per case, seed %lld\n",
              config.c_str(), cfg.experiments.size(), plan.size(), backend.backend.c_str(), backend.reason.c_str(),
              comm.comm.c_str(), comm.reason.c_str(), cfg.defaults.timeout_s,
              static_cast<long long>(cfg.defaults.seed));
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  // check runs without the job, so it cannot see which ranks will share a GPU;
  // it says up front what happens if some do.
  const bool transfers = std::any_of(plan.begin(), plan.end(), [](const Case& c) {
    return find_workload(c.workload).scope(c.params).has_value();
  });
  if (transfers && cfg.defaults.share_devices && comm.comm == "nccl") {
    std::printf("note: share_devices = true: NCCL refuses two ranks on one GPU (\"Duplicate GPU detected\"), so %s\n",
                cfg.defaults.comm == "nccl"
                    ? "a job whose ranks share a GPU stops before any case runs, naming them; comm = \"auto\" or "
                      "\"mpi\" moves their data with MPI instead"
                    : "a job whose ranks share a GPU moves data with MPI (comm auto), and says so");
  }
  for (const auto& e : cfg.experiments) {
    if (e.expect.empty()) continue;
    std::string limits;
    for (const auto& [limit, value] : e.expect) limits += " " + limit + "=" + format_number("%g", value);
    std::printf("limits of '%s' (report --check):%s\n", e.name.c_str(), limits.c_str());
  }
  for (const auto& c : plan) {
    std::printf("  [%zu] %s  workload=%s  warmup=%lld reps=%lld threads=%lld\n", c.index, c.label().c_str(),
                c.workload.c_str(), static_cast<long long>(c.params.get_int("warmup")),
                static_cast<long long>(c.params.get_int("reps")), static_cast<long long>(c.params.get_int("threads")));
  }
  return kExitOk;
}

}  // namespace gpuscale
