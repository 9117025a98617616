// What else the host is doing, read cheaply at a case's start and end (getrusage, /proc/self/task/*/schedstat,
// /proc/stat, /proc/loadavg): the rank's own CPU time and its threads' waits for a CPU, and the node's busy CPU
// time. The case keeps the differences as its `host` table; report/host_noise.hpp judges them.
// One thread's own wait for a core is thread_wait_s() of device/cpu_stream.hpp (included here), the one schedstat
// reader: the CPU backend's events read it per sample (the samples' core_wait), the benchmarks around their bare
// loops, and run_wait sums its schedstat_wait_s over the process's threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <istream>
#include <string>

#include "device/cpu_stream.hpp"
#include "io/case_table.hpp"

namespace gpuscale {

struct HostReading {
  double wall_s = 0;            // steady clock
  double cpu_s = NAN;           // this process's user + system time, all its threads
  double run_wait_s = NAN;      // its threads' time runnable but waiting on a run queue, summed (NaN: unreadable)
  std::int64_t involuntary_switches = -1;  // this process's
  double node_busy_s = NAN;     // the node's CPUs' busy time (user, nice, system, irq, softirq, steal), summed
  double node_steal_s = NAN;    // of which stolen by the hypervisor
  int node_cpus = 0;            // CPUs /proc/stat lists (0: unreadable)
  std::int64_t procs_running = -1;
  double load1 = NAN;           // the 1-minute load average
};

// Reads them now; a field it cannot read stays NaN / -1 / 0. Never throws.
HostReading read_host_load();
// The node's fields alone (/proc/stat and the load average), without the process's own readings.
HostReading read_node_load();
// /proc/stat's text (`tick`: seconds a jiffy's count is over): the "cpu" line's busy and steal time summed over
// CPUs, the count of "cpuN" lines and procs_running, into `r` (what is not there stays as it was).
void parse_proc_stat(std::istream& in, double tick, HostReading& r);

// CPUs this thread may run on (its affinity mask), and the cgroup's CPU quota in cores (NaN: none, or unreadable).
int cpus_allowed();
double cgroup_cpu_quota();

// One row: the differences from `start` to `end`, and what `end` saw (procs_running, load).
CaseTable host_table(const HostReading& start, const HostReading& end);

}  // namespace gpuscale
