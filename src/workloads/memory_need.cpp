#include "workloads/memory_need.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

namespace {

// A field of /proc/meminfo ("MemAvailable:   10000000 kB") in bytes; 0 where it is missing.
double meminfo_bytes(const std::string& meminfo, const std::string& key) {
  std::istringstream lines(meminfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) * 1024;
  }
  return 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

MemoryNeed memory_need(const Case& c, bool buffers_on_host) {
  return find_workload(c.workload).memory(c.params, buffers_on_host);
}

std::vector<std::pair<std::string, MemoryNeed>> memory_by_experiment(const std::vector<Case>& plan,
                                                                     bool buffers_on_host) {
  std::vector<std::pair<std::string, MemoryNeed>> out;
  for (const auto& c : plan) {  // an experiment's cases are consecutive in the plan
    if (out.empty() || out.back().first != c.experiment) out.emplace_back(c.experiment, MemoryNeed{});
    MemoryNeed& most = out.back().second;
    const MemoryNeed need = memory_need(c, buffers_on_host);
    most.device_bytes = std::max(most.device_bytes, need.device_bytes);
    most.host_bytes = std::max(most.host_bytes, need.host_bytes);
  }
  return out;
}

int parse_slurm_tasks_per_node(const std::string& s) {
  const int n = std::atoi(s.c_str());  // "2(x3),1": the first node's count
  return n > 0 ? n : 0;
}

int ranks_per_node_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 0) return std::atoi(v);
  }
  const char* tasks = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (!tasks) tasks = std::getenv("SLURM_TASKS_PER_NODE");
  if (tasks && parse_slurm_tasks_per_node(tasks) > 0) return parse_slurm_tasks_per_node(tasks);
  return 1;
}

MemoryLimits host_memory_limits(const std::string& meminfo, const std::string& cgroup_max, int ranks_per_node,
                                double safe_fraction) {
  double available = meminfo_bytes(meminfo, "MemAvailable");
  std::string from = format_bytes(available) + " RAM available";
  if (available == 0) {  // kernels before 3.14
    available = meminfo_bytes(meminfo, "MemFree");
    from = format_bytes(available) + " RAM free";
  }
  const double cgroup = std::atof(cgroup_max.c_str());  // "max" reads as 0: no limit
  if (cgroup > 0 && (available == 0 || cgroup < available)) {
    available = cgroup;
    from = format_bytes(available) + " allowed to this job (cgroup memory.max)";
  }
  const int ranks = std::max(1, ranks_per_node);
  MemoryLimits l;
  l.host_bytes = safe_fraction * available / ranks;
  l.host_from = format_number("%.0f%% of ", safe_fraction * 100) + from + (ranks > 1 ? ", over " +
                std::to_string(ranks) + " ranks on this node" : std::string());
  return l;
}

MemoryLimits memory_limits_here(Backend backend, const CudaStatus& cuda, int ranks_per_node) {
  std::string cgroup;
  const std::string self = read_text("/proc/self/cgroup");  // "0::/path" on cgroup v2
  if (const auto at = self.find("0::"); at != std::string::npos) {
    const std::string path = self.substr(at + 3, self.find('\n', at) - at - 3);
    cgroup = read_text("/sys/fs/cgroup" + path + "/memory.max");
  }
  MemoryLimits l = host_memory_limits(read_text("/proc/meminfo"), cgroup, ranks_per_node);
  if (backend == Backend::cuda) {
    if (cuda.device_memory_bytes > 0) {
      l.device_bytes = 0.9 * cuda.device_memory_bytes;
      l.device_from = "90% of the GPU's " + format_bytes(cuda.device_memory_bytes);
    } else {  // checked away from its servers (a login node): only sizes no server holds are refused
      l.device_bytes = 1099511627776.0;
      l.device_from = "more than any GPU has today; no GPU is visible here";
      l.host_bytes = 16 * 1099511627776.0;
      l.host_from = "more than a server has today; no GPU is visible here, so this machine's RAM is not the one that counts";
    }
  }
  return l;
}

void check_plan_memory(const std::vector<Case>& plan, const MemoryLimits& limits) {
  for (const auto& c : plan) {
    const MemoryNeed need = memory_need(c, limits.device_bytes == 0);
    const std::string where = c.numbered(plan.size()) + ": needs ";
    if (limits.device_bytes == 0) {  // device memory is host memory
      const double all = need.device_bytes + need.host_bytes;
      if (all > limits.host_bytes) {
        throw InputError(where + format_bytes(all) + " of memory per rank (buffers " + format_bytes(need.device_bytes) +
                         ", host copies " + format_bytes(need.host_bytes) + "), more than the " +
                         format_bytes(limits.host_bytes) + " it may use: " + limits.host_from);
      }
      continue;
    }
    if (need.device_bytes > limits.device_bytes) {
      throw InputError(where + format_bytes(need.device_bytes) + " of device memory per rank, more than the " +
                       format_bytes(limits.device_bytes) + " it may use: " + limits.device_from);
    }
    if (need.host_bytes > limits.host_bytes) {
      throw InputError(where + format_bytes(need.host_bytes) + " of host memory per rank, more than the " +
                       format_bytes(limits.host_bytes) + " it may use: " + limits.host_from);
    }
  }
}

}  // namespace gpuscale
