#include "report/host_noise.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "core/text.hpp"

namespace gpuscale {

namespace {

// /proc/stat counts in ticks of 10 ms on every CPU: over a shorter window than this, the node's busy time is too
// coarse to tell a share of 5% (and the case is not judged on it).
constexpr double kMinBusyWallS = 0.1;
constexpr double kStatTickS = 0.01;  // /proc/stat's tick (USER_HZ 100)

struct RankRow {
  double wall = NAN, cpu = NAN, run_wait = NAN, node_busy = NAN, load = NAN;
  std::int64_t node_cpus = 0;
  double cpus = NAN;  // the CPUs the rank may use: its affinity mask's, or its cgroup quota where lower (NaN: unknown)
};

// The CPUs a rank may use, from the table's cpus_allowed and cpu_quota where it has them (NaN: unknown).
void read_rank_cpus(const CaseTable& t, std::map<int, RankRow>& rows) {
  const auto col = columns_of(t, {{"rank", ColumnType::integer}, {"cpus_allowed", ColumnType::integer},
                                  {"cpu_quota", ColumnType::real}});
  if (col.empty()) return;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const auto it = rows.find(static_cast<int>(col[0]->ints[i]));
    if (it == rows.end() || col[1]->ints[i] <= 0) continue;
    const double quota = col[2]->reals[i];
    const auto allowed = static_cast<double>(col[1]->ints[i]);
    it->second.cpus = std::isfinite(quota) && quota > 0 ? std::min(allowed, quota) : allowed;
  }
}

// The host table's rows by rank (empty where the case has none, or it lacks a column: an older or other writer).
std::map<int, RankRow> host_rows(const CaseRecord& c) {
  std::map<int, RankRow> rows;
  const CaseTable* t = find_table(c.tables, kHostTable);
  if (!t) return rows;
  const auto col = columns_of(*t, {{"rank", ColumnType::integer}, {"wall", ColumnType::real},
                                   {"cpu", ColumnType::real}, {"run_wait", ColumnType::real},
                                   {"node_busy", ColumnType::real}, {"node_cpus", ColumnType::integer},
                                   {"load", ColumnType::real}});
  if (col.empty()) return rows;
  for (std::size_t i = 0; i < t->rows(); ++i) {
    const auto rank = col[0]->ints[i];
    if (rank < 0 || rank >= c.ranks) continue;
    RankRow& r = rows[static_cast<int>(rank)];
    r.wall = col[1]->reals[i];
    r.cpu = col[2]->reals[i];
    r.run_wait = col[3]->reals[i];
    r.node_busy = col[4]->reals[i];
    r.node_cpus = col[5]->ints[i];
    r.load = col[6]->reals[i];
  }
  read_rank_cpus(*t, rows);
  return rows;
}

bool usable(double x) { return std::isfinite(x) && x >= 0; }

int node_of(const RunRecord& run, int rank) {
  return static_cast<std::size_t>(rank) < run.ranks.size() ? run.ranks[rank].node_index : 0;
}

// The CPUs a rank shares: its node's, or where several nodes run on one kernel (the same boot_id: containers,
// emulated hosts) that kernel's, named by the lowest node index on it. Each other's ranks are then the job's own.
int kernel_of(const RunRecord& run, int rank) {
  const int node = node_of(run, rank);
  if (static_cast<std::size_t>(rank) >= run.ranks.size() || run.ranks[rank].boot_id.empty()) return node;
  int lowest = node;
  for (const auto& r : run.ranks) {
    if (r.boot_id == run.ranks[rank].boot_id) lowest = std::min(lowest, r.node_index);
  }
  return lowest;
}

// The ranks of the job: the run's where it lists them, else as many as have rows.
int c_ranks(const RunRecord& run, const std::map<int, RankRow>& rows) {
  return run.ranks.empty() ? (rows.empty() ? 0 : rows.rbegin()->first + 1) : static_cast<int>(run.ranks.size());
}

// Others' share of each node's CPUs: the node's busy time less its ranks' own CPU time, over wall x CPUs. Returns
// others' CPU time per node where it is judged (a window of kMinBusyWallS or more, every rank's readings).
std::map<int, double> judge_others(const RunRecord& run, const std::map<int, RankRow>& rows, HostNoise& h) {
  struct Node {
    double wall = 0, busy = NAN, own = 0, load = NAN;
    std::int64_t cpus = 0;
    bool whole = true;  // every rank of the node has its numbers
  };
  std::map<int, Node> nodes;
  for (int rank = 0; rank < c_ranks(run, rows); ++rank) {
    Node& n = nodes[kernel_of(run, rank)];
    const auto row = rows.find(rank);
    if (row == rows.end()) n.whole = false;  // its CPU time would count as the others'
    if (!n.whole) continue;
    const RankRow& r = row->second;
    n.whole = usable(r.wall) && usable(r.cpu) && usable(r.node_busy) && r.node_cpus > 0;
    if (!n.whole) continue;
    n.own += r.cpu;
    if (r.wall >= n.wall) {  // the longest window of the node's ranks
      n.wall = r.wall;
      n.busy = r.node_busy;
      n.cpus = r.node_cpus;
      n.load = r.load;
    }
  }
  std::map<int, double> others_s;
  for (const auto& [index, n] : nodes) {
    if (!n.whole || n.wall < kMinBusyWallS) continue;
    others_s[index] = std::max(0.0, n.busy - n.own);
    const double share = others_s[index] / (n.wall * static_cast<double>(n.cpus));
    if (!(share <= h.others_share)) {  // NaN at first
      h.others_share = share;
      h.others_node = index;
      h.load = n.load;
      h.node_cpus = static_cast<int>(n.cpus);
    }
  }
  if (h.others_share > kHostBusyShare) {
    h.busy = "others used " + format_number("%.0f%%", 100 * h.others_share) + " of node " +
             std::to_string(h.others_node) + "'s " + std::to_string(h.node_cpus) + " CPUs" +
             (std::isfinite(h.load) ? format_number(" (load %.1f)", h.load) : "");
  }
  return others_s;
}

// Whether a rank's own threads kept the CPUs it may use busy for all but kDescheduledShare of the wall time: then
// they waited for each other (the CPU backend's stream thread and the rank's main thread on the one core mpirun
// binds the rank to), and others cannot have taken that share from it.
bool own_threads_filled(const RankRow& r) {
  return std::isfinite(r.cpus) && usable(r.wall) && r.wall > 0 && r.cpu >= (1 - kDescheduledShare) * r.cpus * r.wall;
}

// The rank whose threads waited longest for a CPU while others ran, as a share of the time they were ready to run
// (on a CPU or waiting for one): what a busy core takes from the rank's work, whichever of its threads did it. Not
// the job's own doing: a rank whose own threads filled its CPUs is not counted, and where others' CPU time on the
// rank's node is known (`others_s`, judge_others), no more of the wait than that time (and a /proc/stat tick per
// CPU, its resolution) counts.
void judge_waits(const RunRecord& run, const std::map<int, RankRow>& rows, const std::map<int, double>& others_s,
                 HostNoise& h) {
  for (const auto& [rank, r] : rows) {
    if (!usable(r.run_wait) || !usable(r.cpu) || !(r.run_wait + r.cpu > 0) || own_threads_filled(r)) continue;
    double wait = r.run_wait;
    const auto others = others_s.find(kernel_of(run, rank));
    if (others != others_s.end()) wait = std::min(wait, others->second + kStatTickS * static_cast<double>(r.node_cpus));
    const double share = wait / (r.run_wait + r.cpu);
    if (!(share <= h.wait_share)) {
      h.wait_share = share;
      h.wait_rank = rank;
    }
  }
  if (h.wait_share > kDescheduledShare) {
    h.descheduled = "rank " + std::to_string(h.wait_rank) + " waited for a CPU " +
                    format_number("%.0f%%", 100 * h.wait_share) + " of the time it was ready to run";
  }
}

// The job's own ranks x threads against each node's cores.
void judge_job(const RunRecord& run, const CaseRecord& c, HostNoise& h) {
  const std::int64_t threads = c.backend == Backend::cpu && c.params.has("threads") ? c.params.get_int("threads") : 1;
  std::map<int, std::pair<std::int64_t, std::int64_t>> nodes;  // node: ranks, cores
  for (const auto& r : run.ranks) {
    auto& n = nodes[r.node_index];
    ++n.first;
    n.second = r.node_cores;
  }
  for (const auto& [index, n] : nodes) {
    if (n.second <= 0 || n.first * threads <= n.second) continue;
    h.oversubscribed = std::to_string(n.first) + (n.first == 1 ? " rank" : " ranks") +
                       (threads > 1 ? " x " + std::to_string(threads) + " threads" : "") + " on " +
                       std::to_string(n.second) + (n.second == 1 ? " core" : " cores") + " of node " +
                       std::to_string(index);
    return;
  }
}

}  // namespace

std::string HostNoise::why() const {
  std::vector<std::string> parts;
  if (!busy.empty()) parts.push_back("host busy: " + busy);
  if (!descheduled.empty()) parts.push_back("descheduled: " + descheduled);
  if (!oversubscribed.empty()) parts.push_back("oversubscribed: " + oversubscribed);
  return join(parts, "; ");
}

std::string HostNoise::mark() const {
  std::string m;
  if (!busy.empty()) m += "b";
  if (!descheduled.empty()) m += "d";
  if (!oversubscribed.empty()) m += "o";
  return m.empty() ? "" : "!" + m;
}

HostNoise host_noise(const RunRecord& run, const CaseRecord& c) {
  HostNoise h;
  if (c.status != CaseStatus::skipped) {
    const auto rows = host_rows(c);
    const auto others_s = judge_others(run, rows, h);
    judge_waits(run, rows, others_s, h);
  }
  judge_job(run, c, h);
  return h;
}

}  // namespace gpuscale
