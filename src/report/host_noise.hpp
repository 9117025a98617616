// What else the host did while a case ran, from the case's `host` table (runner/host_load.hpp writes it), and
// whether that makes the case's numbers doubtful: others busy on the node, a rank kept waiting for a CPU, or the
// job itself asking for more cores than it has. Definitions: docs/metrics.md, "Host noise".
#pragma once

#include <cmath>
#include <string>

#include "io/result_model.hpp"

namespace gpuscale {

// Above these shares a case is flagged.
constexpr double kHostBusyShare = 0.25;    // others' CPU time / (wall x the node's CPUs), on any node
constexpr double kDescheduledShare = 0.2;  // a rank's threads' time waiting for a CPU / their time ready to run

// What HostNoise::mark's letters stand for, for a legend.
inline constexpr const char* kNoiseMarks = "b host busy, d descheduled, o oversubscribed";

struct HostNoise {
  double others_share = NAN;  // the most over nodes (NaN: no readings)
  int others_node = -1;
  double wait_share = NAN;  // the most over ranks of run_wait / (run_wait + cpu) (NaN: no readings)
  int wait_rank = -1;
  double load = NAN;   // the 1-minute load average at the end, on others_node (or node 0)
  int node_cpus = 0;   // the CPUs of that node (0: unknown)
  // One sentence each, "" when not so: "others used 63% of node 0's 2 CPUs" / "rank 1 waited for a CPU 41% of the
  // time it was ready to run" / "4 ranks x 1 thread on 2 cores of node 0".
  std::string busy, descheduled, oversubscribed;

  bool doubtful() const { return !busy.empty() || !descheduled.empty() || !oversubscribed.empty(); }
  // The flags a report shows, "host busy: ...", "descheduled: ...", "oversubscribed: ...", joined by "; ".
  std::string why() const;
  // The same as a mark beside a number or a status: "!bd" (b busy, d descheduled, o oversubscribed), "" for none.
  std::string mark() const;
};

// The noise of case `c` of `run`; fields stay NaN/"" where the file has no host table (written before 1.6) and the
// job's shape says nothing.
HostNoise host_noise(const RunRecord& run, const CaseRecord& c);

}  // namespace gpuscale
