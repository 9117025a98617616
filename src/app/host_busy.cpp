#include "app/host_busy.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/text.hpp"
#include "runner/host_load.hpp"
#include "workloads/estimate.hpp"

namespace gpuscale {

double parse_test_loadavg(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw InputError("GPUSCALE_TEST_LOADAVG (a test hook): must be a number at least 0, got '" + text + "'");
  }
  return v;
}

namespace {

// Threads runnable on the node, less the one reading: the mean of 5 readings 25 ms apart (NaN: unreadable).
double runnable_now(std::int64_t first) {
  double sum = 0;
  int readings = 0;
  for (int i = 0; i < 5; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    const std::int64_t running = i == 0 ? first : read_node_load().procs_running;
    if (running < 1) continue;
    sum += static_cast<double>(running - 1);
    ++readings;
  }
  return readings > 0 ? sum / readings : NAN;
}

}  // namespace

HostLoad read_host_busy_inputs(int job_cpus) {
  const HostReading node = read_node_load();  // /proc/stat and the load average, not the process's own readings
  HostLoad h;
  h.load1 = node.load1;
  h.node_cpus = node.node_cpus;
  if (const char* test = std::getenv("GPUSCALE_TEST_LOADAVG")) {
    h.load1 = parse_test_loadavg(test);
  } else {
    h.now = runnable_now(node.procs_running);
  }
  if (job_cpus <= 0) {
    job_cpus = cpus_allowed();
    const double quota = cgroup_cpu_quota();
    if (std::isfinite(quota) && quota > 0) job_cpus = std::min(job_cpus, static_cast<int>(std::ceil(quota)));
  }
  h.job_cpus = job_cpus;
  return h;
}

int cpus_in_lists(const std::vector<std::string>& lists) {
  std::set<long> cpus;
  for (const auto& list : lists) {
    if (list.empty()) return 0;
    std::istringstream in(list);
    std::string part;
    while (std::getline(in, part, ',')) {
      char* end = nullptr;
      const long first = std::strtol(part.c_str(), &end, 10);
      long last = first;
      if (*end == '-') last = std::strtol(end + 1, &end, 10);
      if (part.empty() || *end != '\0' || first < 0 || last < first) return 0;
      for (long c = first; c <= last; ++c) cpus.insert(c);
    }
  }
  return static_cast<int>(cpus.size());
}

double busiest_threads(const std::vector<Case>& plan, int ranks) {
  std::int64_t most = 1;
  for (const auto& c : plan) most = std::max(most, c.params.get_int("threads"));
  return static_cast<double>(ranks) * static_cast<double>(most);
}

HostBusy host_busy(const HostLoad& h, double job_threads, const std::string& not_counted) {
  HostBusy b;
  if (std::isnan(h.load1)) {
    b.line = "host load unknown (/proc/loadavg unreadable): the estimate assumes no other work on this node";
    return b;
  }
  const int node = h.node_cpus > 0 ? h.node_cpus : std::max(1, h.job_cpus);
  const int cpus = h.job_cpus > 0 ? std::min(h.job_cpus, node) : node;
  const double others = std::isnan(h.now) ? h.load1 : std::min(h.load1, h.now);
  b.share = HostShare{std::max(0.0, others), node, cpus};
  b.slowdown = b.share.slowdown(job_threads);
  if (b.slowdown < kHostBusySlowdown) return b;
  const std::string mine = cpus < node ? ", " + std::to_string(cpus) + " of them this job's" : "";
  b.line = "host busy: load " + format_number("%.1f", others) + " on " + std::to_string(node) +
           (node == 1 ? " core" : " cores") + mine + "; the estimate" +
           (not_counted.empty() ? " assumes it stays" : ", " + not_counted + ", does not count it");
  return b;
}

}  // namespace gpuscale
