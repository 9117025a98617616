// The memory a case needs on one rank, from its parameters alone, and the
// check that every case of a plan fits the memory of the backend it runs on
// (device memory on a GPU, a safe share of the node's RAM on the CPU) before
// anything runs. Each workload's own need lives beside it (WorkloadType::memory).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/cuda_status.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

// The case's workload's bound (see MemoryNeed), for any group size.
// `buffers_on_host`: the device's memory is the host's (CPU backend), so
// nothing is staged through host memory on its way there.
MemoryNeed memory_need(const Case& c, bool buffers_on_host);

// The largest device and host need of each experiment's cases (each taken
// over the cases on its own), in the plan's order (where an experiment's
// cases are consecutive, as expand() makes them).
std::vector<std::pair<std::string, MemoryNeed>> memory_by_experiment(const std::vector<Case>& plan,
                                                                     bool buffers_on_host);

// What one rank may use.
struct MemoryLimits {
  double device_bytes = 0;  // 0: the device's memory is the host's (CPU backend)
  double host_bytes = 0;
  std::string device_from;  // where the figures come from, for messages
  std::string host_from;
};

// The host's share per rank: `safe_fraction` of MemAvailable (from
// /proc/meminfo's text; MemFree on kernels without it), or of the cgroup's
// limit (memory.max's text, "max" for none) where that is lower, over the
// ranks on the node.
MemoryLimits host_memory_limits(const std::string& meminfo, const std::string& cgroup_max, int ranks_per_node,
                                double safe_fraction = 0.8);
// Ranks on this node from the launcher's environment: Open MPI's
// OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS, Slurm's
// SLURM_NTASKS_PER_NODE or the first count of SLURM_STEP_TASKS_PER_NODE /
// SLURM_TASKS_PER_NODE ("2(x3),1"); 1 where none is set.
int ranks_per_node_from_env();
int parse_slurm_tasks_per_node(const std::string& s);  // "2(x3),1" -> 2; 0 when unreadable

// This machine's limits for a backend: the host's RAM rule for both; on
// CUDA, 0.9 of the smallest visible GPU's memory. Where no GPU is visible
// (a CUDA plan checked on a login node) this machine is not the one that
// will run it: 1 TiB of device and 16 TiB of host memory, more than any
// server has today.
MemoryLimits memory_limits_here(Backend backend, const CudaStatus& cuda, int ranks_per_node);

// InputError naming the first case that does not fit: its need and what is available.
void check_plan_memory(const std::vector<Case>& plan, const MemoryLimits& limits);

}  // namespace gpuscale
