#include "workloads/memory_need.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"
#include "workloads/gemm_operands.hpp"

namespace gpuscale {

namespace {

double elements_bytes(const Params& p, const char* dtype_key = "dtype") {
  return static_cast<double>(dtype_size(parse_dtype(p.get_string(dtype_key))));
}

// GemmOperands: A, B and C on the device; A and B as doubles on the host,
// plus the largest of the staged uploads and C's download for checking.
MemoryNeed gemm_operands_need(const GemmProblem& g) {
  const double m = g.shape.m, n = g.shape.n, k = g.shape.k, e = static_cast<double>(dtype_size(g.dtype));
  return {(m * k + k * n + m * n) * e, 8 * (m * k + k * n) + (8 + e) * std::max({m * k, k * n, m * n})};
}

MemoryNeed gemm_need(const Params& p) { return gemm_operands_need(gemm_problem(p)); }

MemoryNeed pipeline_need(const Params& p) {
  const GemmProblem g = gemm_problem(p);
  MemoryNeed need = gemm_operands_need(g);
  const double results = static_cast<double>(p.get_int("ops")) * g.shape.m * static_cast<double>(g.shape.n) *
                         static_cast<double>(dtype_size(g.dtype));
  need.device_bytes += results;  // a C per matmul, on the device and in host memory
  need.host_bytes += results;
  return need;
}

// The pattern, the destination's poison (setup) or the download (check), and a host end.
MemoryNeed copy_need(const Params& p) {
  const double b = static_cast<double>(p.get_int("bytes"));
  const bool d2d = p.get_string("direction") == "d2d";
  return {d2d ? 2 * b : b, d2d ? 2 * b : 3 * b};
}

// a, b, r on the device; staged through host memory in chunks of 2^22
// elements where the device's memory is not the host's.
MemoryNeed elementwise_need(const Params& p, bool buffers_on_host) {
  const double n = static_cast<double>(p.get_int("elements")), e = elements_bytes(p);
  return {3 * n * e, buffers_on_host ? 0.0 : 3 * std::min(n, 4194304.0) * e};
}

// Send and receive buffers of at most `bytes` each (nccl-tests' size is the
// total, so no rank holds more whatever the group size); on the host the
// send data, then the download checked, and a poison chunk of at most 16 MiB.
MemoryNeed collective_need(const Params& p) {
  const double b = static_cast<double>(p.get_int("bytes"));
  return {p.get_bool("inplace") ? b : 2 * b, b + std::min(b, 16777216.0)};
}

// Largest with a group of one (each rank's blocks shrink as the group grows):
// A's rows, B's columns three times (own, and the two being passed), C's row.
MemoryNeed distributed_gemm_need(const Params& p) {
  const GemmProblem g = gemm_problem(p);
  const double m = g.shape.m, n = g.shape.n, k = g.shape.k, e = static_cast<double>(dtype_size(g.dtype));
  return {(m * k + 3 * k * n + m * n) * e, 8 * (m * k + k * n) + (8 + e) * std::max({m * k, k * n, m * n})};
}

// Weights and their transposes, activations, their transposes and gradients
// per layer, and the gradients; on the host the model's values as doubles
// and the gradients downloaded for checking.
MemoryNeed dp_step_need(const Params& p) {
  const double h = static_cast<double>(p.get_int("hidden")), rows = static_cast<double>(p.get_int("batch"));
  const double layers = static_cast<double>(p.get_int("layers")), e = elements_bytes(p);
  const double device = e * (3 * layers * h * h + (3 * layers + 2) * rows * h);
  const double host = 8 * (4 * rows * h + 3 * h * h + layers * h * h + 2 * layers * h) + layers * h * h * e;
  return {device, host};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

MemoryNeed memory_need(const Case& c, bool buffers_on_host) {
  const Params& p = c.params;
  if (c.workload == "gemm" || c.workload == "async") return gemm_need(p);
  if (c.workload == "pipeline") return pipeline_need(p);
  if (c.workload == "copy") return copy_need(p);
  if (c.workload == "elementwise") return elementwise_need(p, buffers_on_host);
  if (c.workload == "collective") return collective_need(p);
  if (c.workload == "distributed_gemm") return distributed_gemm_need(p);
  if (c.workload == "dp_step") return dp_step_need(p);
  throw std::logic_error("no memory need for workload '" + c.workload + "'");
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  return format_number(u == 0 ? "%.0f " : "%.3g ", bytes) + units[u];
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
  double available = 0;
  std::istringstream in(meminfo);
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") available = kib * 1024;
  }
  std::string from = format_bytes(available) + " RAM available";
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

MemoryLimits memory_limits_here(const std::string& backend, const CudaStatus& cuda, int ranks_per_node) {
  std::string cgroup;
  const std::string self = read_text("/proc/self/cgroup");  // "0::/path" on cgroup v2
  if (const auto at = self.find("0::"); at != std::string::npos) {
    const std::string path = self.substr(at + 3, self.find('\n', at) - at - 3);
    cgroup = read_text("/sys/fs/cgroup" + path + "/memory.max");
  }
  MemoryLimits l = host_memory_limits(read_text("/proc/meminfo"), cgroup, ranks_per_node);
  if (backend == "cuda") {
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
    const std::string where = "case [" + std::to_string(c.index) + "] " + c.label() + ": needs ";
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
