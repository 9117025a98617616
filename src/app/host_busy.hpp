// Whether other work on this node will slow a job down, for the estimate `check` and `run` print: the node's
// 1-minute load average beside its CPUs and those the job may use ("host busy: load 6.2 on 2 cores; the estimate
// assumes it stays"). The estimate counts it through Rates::host (workloads/estimate.hpp).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "workloads/estimate.hpp"

namespace gpuscale {

struct HostLoad {
  double load1 = NAN;   // the node's 1-minute load average (NaN: unreadable)
  int node_cpus = 0;    // the node's online CPUs (0: unknown)
  int job_cpus = 0;     // of them, those the job's ranks on this node may use (0: all of them)
  double now = NAN;     // threads runnable on the node now, this one aside (a mean of readings; NaN: unknown)
};

// The readings of this node now: /proc/loadavg, /proc/stat's runnable threads over 0.1 s, its online CPUs, and
// `job_cpus` (0: this process's affinity, capped by its cgroup's CPU quota). Test hook: GPUSCALE_TEST_LOADAVG=LOAD
// replaces the load read, and the threads runnable now are not read (tests/e2e/test_estimate.py sets it to make a
// host look busy or idle); InputError where it is not a number at least 0.
HostLoad read_host_busy_inputs(int job_cpus = 0);
double parse_test_loadavg(const std::string& text);

// The CPUs in the union of affinity lists ("0-3,8"), 0 where one cannot be read.
int cpus_in_lists(const std::vector<std::string>& lists);

// The threads `ranks` ranks of a node keep busy at most over the plan: ranks x the most threads a case asks for.
double busiest_threads(const std::vector<Case>& plan, int ranks);

// A slowdown the line is printed from: others' threads make the job's this much slower.
constexpr double kHostBusySlowdown = 1.2;

struct HostBusy {
  HostShare share;      // for the estimate (none where the load is unknown)
  double slowdown = 1;  // of the job's busiest threads, by the others (HostShare::slowdown)
  // "" on a quiet host, else one line: "host busy: load 6.2 on 2 cores; the estimate assumes it stays", or where
  // the estimate does not count it, why ("...; the estimate, for 2 nodes, does not count it"); or that the load
  // could not be read.
  std::string line;
};

// Others' work is the 1-minute load, or the threads runnable now where fewer (work that just ended counts no more).
// `job_threads`: the threads the job keeps busy on this node at most (its ranks here x their threads);
// `not_counted`: "" where the estimate counts the load, else why not ("for 2 nodes").
HostBusy host_busy(const HostLoad& h, double job_threads, const std::string& not_counted = "");

}  // namespace gpuscale
