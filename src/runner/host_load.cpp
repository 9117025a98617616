#include "runner/host_load.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "device/cpu_stream.hpp"
#include "io/result_model.hpp"

namespace gpuscale {

namespace {

double timeval_s(const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); }

}  // namespace

void parse_proc_stat(std::istream& in, double tick, HostReading& r) {
  std::string line;
  int cpus = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "cpu") {
      // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice)
      double v[8] = {};
      for (double& x : v) words >> x;
      if (!words) continue;
      r.node_busy_s = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
      r.node_steal_s = v[7] / tick;
    } else if (key.size() > 3 && key.compare(0, 3, "cpu") == 0) {
      ++cpus;
    } else if (key == "procs_running") {
      words >> r.procs_running;
    }
  }
  r.node_cpus = cpus;
}

namespace {

// The second field of each of this process's threads' schedstat, summed: nanoseconds they were runnable but waited
// on a run queue (the work of a rank runs on its stream's worker and its BLAS threads, not only the main thread).
double read_run_wait_s() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return NAN;
  double total = 0;
  bool any = false;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const double wait_s = schedstat_wait_s(std::string("/proc/self/task/") + e->d_name + "/schedstat");
    if (!std::isnan(wait_s)) {
      total += wait_s;
      any = true;
    }
  }
  closedir(dir);
  return any ? total : NAN;
}

double read_load1() {
  std::ifstream in("/proc/loadavg");
  double load = NAN;
  if (!(in >> load)) return NAN;
  return load;
}

}  // namespace

HostReading read_node_load() {
  HostReading r;
  std::ifstream in("/proc/stat");
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (in && tick > 0) parse_proc_stat(in, tick, r);
  r.load1 = read_load1();
  return r;
}

HostReading read_host_load() {
  HostReading r = read_node_load();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    r.cpu_s = timeval_s(u.ru_utime) + timeval_s(u.ru_stime);
    r.involuntary_switches = u.ru_nivcsw;
  }
  r.run_wait_s = read_run_wait_s();
  return r;
}

int cpus_allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

double cgroup_cpu_quota() {
  // cgroup v2: "max 100000" (no quota) or "200000 100000" (2 cores), in the cgroup this process is in.
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line)) {
    if (line.compare(0, 3, "0::") == 0) path = line.substr(3);
  }
  std::ifstream in("/sys/fs/cgroup" + (path == "/" ? std::string() : path) + "/cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return NAN;
  try {
    return std::stod(quota) / period;
  } catch (const std::exception&) {
    return NAN;
  }
}

namespace {

// NaN where either end is NaN; the difference otherwise.
double delta(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : b - a; }

}  // namespace

CaseTable host_table(const HostReading& start, const HostReading& end) {
  CaseTable t;
  t.name = kHostTable;
  t.description = "what else the host did from the start of warm-up to the end of the timed samples, per rank";
  t.columns.push_back(real_column("wall", "s", "wall time from the first reading to the last", ColumnRange::finite));
  t.columns.push_back(real_column("cpu", "s", "this rank's process's CPU time (user + system, all its threads)"));
  t.columns.push_back(real_column("run_wait", "s", "time the process's threads were runnable but waited for a CPU, "
                                                   "summed (NaN: unknown)"));
  t.columns.push_back(int_column("involuntary_switches", "times the process was switched out while runnable "
                                                         "(-1: unknown)"));
  t.columns.push_back(real_column("node_busy", "s", "busy time of all the node's CPUs, summed (NaN: unknown)"));
  t.columns.push_back(real_column("node_steal", "s", "of node_busy, time stolen by a hypervisor (NaN: unknown)"));
  t.columns.push_back(int_column("node_cpus", "CPUs the node has (0: unknown)"));
  t.columns.push_back(int_column("cpus_allowed", "CPUs this rank may run on (0: unknown)"));
  t.columns.push_back(real_column("cpu_quota", "", "the rank's cgroup CPU quota in CPUs (NaN: none)"));
  t.columns.push_back(int_column("procs_running", "runnable threads on the node at the end (-1: unknown)"));
  t.columns.push_back(real_column("load", "", "the node's 1-minute load average at the end (NaN: unknown)"));
  t.columns[0].reals = {end.wall_s - start.wall_s};
  t.columns[1].reals = {delta(start.cpu_s, end.cpu_s)};
  t.columns[2].reals = {delta(start.run_wait_s, end.run_wait_s)};
  t.columns[3].ints = {start.involuntary_switches < 0 || end.involuntary_switches < 0
                           ? -1
                           : end.involuntary_switches - start.involuntary_switches};
  t.columns[4].reals = {delta(start.node_busy_s, end.node_busy_s)};
  t.columns[5].reals = {delta(start.node_steal_s, end.node_steal_s)};
  t.columns[6].ints = {end.node_cpus};
  t.columns[7].ints = {cpus_allowed()};
  t.columns[8].reals = {cgroup_cpu_quota()};
  t.columns[9].ints = {end.procs_running};
  t.columns[10].reals = {end.load1};
  return t;
}

}  // namespace gpuscale
