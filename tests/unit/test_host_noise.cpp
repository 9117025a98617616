// Host noise: the readings a case keeps (runner/host_load.hpp) and the verdicts on them (report/host_noise.hpp),
// from made-up readings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "io/case_table.hpp"
#include "io/result_model.hpp"
#include "report/expectations.hpp"
#include "report/host_noise.hpp"
#include "report/report.hpp"
#include "runner/host_load.hpp"

using namespace gpuscale;

namespace {

struct Reading {
  double wall, cpu, run_wait, node_busy;
  std::int64_t node_cpus = 2;
  std::int64_t cpus_allowed = 2;  // its affinity mask's CPUs (no cgroup quota)
};

// A run of `ranks` ranks, `per_node` of them on each node of `cores` cores.
RunRecord job(int ranks, int per_node, int cores) {
  RunRecord run;
  for (int r = 0; r < ranks; ++r) {
    RankRecord rec;
    rec.node_index = r / per_node;
    rec.node_cores = cores;
    run.ranks.push_back(rec);
  }
  return run;
}

// A case that ran on `readings.size()` ranks with these host readings (the table as the runner merges it).
CaseRecord with_host(const std::vector<Reading>& readings, int threads = 1) {
  CaseRecord c;
  c.ranks = static_cast<int>(readings.size());
  c.status = CaseStatus::ok;
  c.backend = Backend::cpu;
  c.params.set("threads", static_cast<std::int64_t>(threads));
  std::vector<std::vector<CaseTable>> per_rank;
  for (const auto& r : readings) {
    HostReading a, b;
    a.wall_s = 100;
    b.wall_s = 100 + r.wall;
    a.cpu_s = 1;
    b.cpu_s = 1 + r.cpu;
    a.run_wait_s = 0.5;
    b.run_wait_s = 0.5 + r.run_wait;
    a.node_busy_s = 1000;
    b.node_busy_s = 1000 + r.node_busy;
    b.node_cpus = static_cast<int>(r.node_cpus);
    b.load1 = 3.5;
    CaseTable t = host_table(a, b);  // with this process's mask and quota: set to the reading's
    t.column("cpus_allowed")->ints[0] = r.cpus_allowed;
    t.column("cpu_quota")->reals[0] = NAN;
    per_rank.push_back({t});
  }
  c.tables = merge_rank_tables(per_rank);
  return c;
}

}  // namespace

TEST_CASE("host_table keeps the differences of two readings and what the end saw", "[host]") {
  HostReading a, b;
  a.wall_s = 10;
  b.wall_s = 12.5;
  a.cpu_s = 3;
  b.cpu_s = 5;
  b.run_wait_s = 0.25;  // NaN at the start: unknown
  a.involuntary_switches = 4;
  b.involuntary_switches = 10;
  a.node_busy_s = 100;
  b.node_busy_s = 104;
  b.node_cpus = 8;
  b.procs_running = 3;
  b.load1 = 1.5;
  const CaseTable t = host_table(a, b);
  CHECK(t.name == kHostTable);
  REQUIRE(t.rows() == 1);
  CHECK(t.column("wall")->reals[0] == 2.5);
  CHECK(t.column("cpu")->reals[0] == 2);
  CHECK(std::isnan(t.column("run_wait")->reals[0]));
  CHECK(t.column("involuntary_switches")->ints[0] == 6);
  CHECK(t.column("node_busy")->reals[0] == 4);
  CHECK(std::isnan(t.column("node_steal")->reals[0]));
  CHECK(t.column("node_cpus")->ints[0] == 8);
  CHECK(t.column("procs_running")->ints[0] == 3);
  CHECK(t.column("load")->reals[0] == 1.5);
  CHECK(t.column("cpus_allowed")->ints[0] >= 1);  // this process's own mask
}

TEST_CASE("read_host_load reads this process and this node", "[host]") {
  const HostReading r = read_host_load();
  CHECK(r.cpu_s >= 0);
  CHECK(r.node_cpus >= 1);
  CHECK(r.node_busy_s >= 0);
  CHECK(r.load1 >= 0);
  CHECK(cpus_allowed() >= 1);
}

TEST_CASE("host busy: others' share of the node's CPUs over 25%", "[host]") {
  const RunRecord run = job(2, 2, 2);
  SECTION("two ranks busy all the time on a 2-CPU node where the node was busy 3 of 4 CPU-seconds: 0%") {
    const HostNoise h = host_noise(run, with_host({{2, 2, 0, 3.9}, {2, 1.9, 0, 3.9}}));
    CHECK(h.others_share == Approx(0.0));
    CHECK(h.busy.empty());
    CHECK_FALSE(h.doubtful());
  }
  SECTION("each rank got half its time: the others took the other half") {
    const HostNoise h = host_noise(run, with_host({{2, 1, 1, 4}, {2, 1, 0.25, 4}}));
    CHECK(h.others_share == Approx(0.5));
    CHECK(h.others_node == 0);
    CHECK(h.busy == "others used 50% of node 0's 2 CPUs (load 3.5)");
    CHECK(h.wait_share == Approx(0.5));  // 1 s waiting of 2 s ready to run
    CHECK(h.wait_rank == 0);
    CHECK(h.descheduled == "rank 0 waited for a CPU 50% of the time it was ready to run");
    CHECK(h.why() == "host busy: others used 50% of node 0's 2 CPUs (load 3.5); descheduled: rank 0 waited for a "
                     "CPU 50% of the time it was ready to run");
  }
  SECTION("exactly at the threshold is not busy") {
    const HostNoise h = host_noise(run, with_host({{2, 1, 0, 3}, {2, 1, 0, 3}}));
    CHECK(h.others_share == Approx(0.25));
    CHECK(h.busy.empty());
  }
  SECTION("the ranks' CPU time above the node's busy time (readings a tick apart) is 0, not negative") {
    CHECK(host_noise(run, with_host({{2, 2, 0, 3.5}, {2, 2, 0, 3.5}})).others_share == 0);
  }
  SECTION("a window under 0.1 s is too coarse for /proc/stat: not judged") {
    const HostNoise h = host_noise(run, with_host({{0.05, 0.01, 0, 0.1}, {0.05, 0.01, 0, 0.1}}));
    CHECK(std::isnan(h.others_share));
    CHECK(h.busy.empty());
  }
}

TEST_CASE("host busy is judged per node, on the busiest", "[host]") {
  // Two nodes of one rank each: node 1's others took 3 of its 4 CPU-seconds less the rank's 1.
  const HostNoise h = host_noise(job(2, 1, 2), with_host({{2, 2, 0, 2}, {2, 1, 0, 3}}));
  CHECK(h.others_share == Approx(0.5));
  CHECK(h.others_node == 1);
}

TEST_CASE("descheduled: a rank's threads waited for a CPU more than 20% of the time they were ready to run",
          "[host]") {
  const RunRecord run = job(2, 2, 2);
  CHECK(host_noise(run, with_host({{1, 0.8, 0.2, 2}, {1, 1, 0.1, 2}})).descheduled.empty());  // 20%: not above
  const HostNoise h = host_noise(run, with_host({{1, 1, 0.1, 2}, {1, 0.7, 0.3, 2}}));
  CHECK(h.wait_rank == 1);
  CHECK(h.wait_share == Approx(0.3));
  CHECK(h.descheduled == "rank 1 waited for a CPU 30% of the time it was ready to run");
  SECTION("threads that slept most of the time: only the time they were ready counts") {
    CHECK(host_noise(run, with_host({{10, 0.1, 0.1, 2}, {10, 1, 0, 2}})).wait_share == Approx(0.5));
  }
  SECTION("short windows are judged too (the wait is counted in nanoseconds)") {
    CHECK_FALSE(host_noise(run, with_host({{0.01, 0.004, 0.006, 0}, {0.01, 0.01, 0, 0}})).descheduled.empty());
  }
}

TEST_CASE("a rank whose own threads kept its CPUs busy waited for them, not for others: not descheduled",
          "[host]") {
  const RunRecord run = job(2, 2, 2);
  // Bound to one CPU each (as mpirun binds 2 ranks), the stream's thread and the main thread taking turns on it:
  // 0.9 s of CPU in 1 s, and 33% of the time ready spent waiting for the other.
  const HostNoise own = host_noise(run, with_host({{1, 0.9, 0.45, 2, 2, 1}, {1, 0.9, 0.45, 2, 2, 1}}));
  CHECK(own.descheduled.empty());
  CHECK(std::isnan(own.wait_share));  // no rank judged
  // The same waits with only 0.7 s of its CPU used: others took the rest of it.
  const HostNoise others = host_noise(run, with_host({{1, 0.9, 0.45, 2, 2, 1}, {1, 0.7, 0.35, 2, 2, 1}}));
  CHECK(others.descheduled == "rank 1 waited for a CPU 33% of the time it was ready to run");
  // On two CPUs 0.9 s of CPU in 1 s leaves room for others (who took 0.5 s of the node's 2 CPUs): judged as before.
  CHECK_FALSE(host_noise(run, with_host({{1, 0.9, 0.45, 2, 2, 2}, {1, 0.6, 0, 2, 2, 2}})).descheduled.empty());
  SECTION("no more of the wait counts than others' CPU time on the node (and a tick per CPU)") {
    // Others took 0.1 s of the node's CPUs: at most 0.1 + 2 x 0.01 s of rank 0's 0.45 s wait is theirs.
    const HostNoise bound = host_noise(run, with_host({{1, 0.9, 0.45, 2, 2, 2}, {1, 1, 0, 2, 2, 2}}));
    CHECK(bound.wait_share == Approx(0.12 / 1.35));
    CHECK(bound.descheduled.empty());
    // A window too short for /proc/stat's ticks: the whole wait counts.
    CHECK(host_noise(run, with_host({{0.05, 0.03, 0.02, 0.06, 2, 2}, {0.05, 0.03, 0, 0.06, 2, 2}})).wait_share ==
          Approx(0.4));
  }
  SECTION("a cgroup quota below the mask counts as the rank's CPUs") {
    CaseRecord c = with_host({{1, 0.9, 0.45, 2, 2, 2}, {1, 0.9, 0.45, 2, 2, 2}});
    for (auto& t : c.tables) {
      if (t.name == kHostTable) t.column("cpu_quota")->reals.assign(2, 1.0);
    }
    CHECK(host_noise(run, c).descheduled.empty());
  }
}

TEST_CASE("oversubscribed: the job's ranks x threads above a node's cores", "[host]") {
  CaseRecord c = with_host({{1, 1, 0, 2}, {1, 1, 0, 2}, {1, 1, 0, 2}, {1, 1, 0, 2}});
  CHECK(host_noise(job(4, 4, 2), c).oversubscribed == "4 ranks on 2 cores of node 0");
  CHECK(host_noise(job(4, 2, 2), c).oversubscribed.empty());
  CHECK(host_noise(job(4, 2, 0), c).oversubscribed.empty());  // cores unknown
  c.params.set("threads", std::int64_t{2});
  CHECK(host_noise(job(4, 2, 4), c).oversubscribed.empty());
  CHECK(host_noise(job(4, 2, 3), c).oversubscribed == "2 ranks x 2 threads on 3 cores of node 0");
  CHECK(host_noise(job(4, 2, 3), c).why() == "oversubscribed: 2 ranks x 2 threads on 3 cores of node 0");
}

TEST_CASE("host noise of a file without a host table, or with one another writer made", "[host]") {
  const RunRecord run = job(2, 2, 2);
  CaseRecord c = with_host({{2, 1, 0.9, 4}, {2, 1, 0.1, 4}});
  SECTION("no table: nothing judged") {
    c.tables.clear();
    const HostNoise h = host_noise(run, c);
    CHECK(std::isnan(h.others_share));
    CHECK(std::isnan(h.wait_share));
    CHECK_FALSE(h.doubtful());
  }
  SECTION("a column of another type: the table is left alone") {
    c.tables[0].column("cpu")->type = ColumnType::integer;
    CHECK(std::isnan(host_noise(run, c).others_share));
  }
  SECTION("NaN and negative readings are not judged") {
    c.tables[0].column("cpu")->reals[1] = NAN;
    c.tables[0].column("run_wait")->reals = {-1, NAN};
    const HostNoise h = host_noise(run, c);
    CHECK(std::isnan(h.others_share));
    CHECK(std::isnan(h.wait_share));
  }
  SECTION("rows of ranks the case does not have are ignored; a node without every rank's row is not judged") {
    c.tables[0].column("rank")->ints = {0, 7};
    const HostNoise h = host_noise(run, c);
    CHECK(h.wait_rank == 0);
    CHECK(std::isnan(h.others_share));  // rank 1's CPU time would have counted as the others'
  }
  SECTION("a skipped case has no readings to judge") {
    c.status = CaseStatus::skipped;
    CHECK_FALSE(host_noise(run, c).doubtful());
  }
}

TEST_CASE("a report row carries the host noise and flags it", "[host]") {
  RunRecord run = job(2, 2, 2);
  CaseRecord c = with_host({{2, 1, 0.9, 4}, {2, 1, 0.1, 4}});
  c.experiment = "e";
  c.workload = "gemm";
  c.reps = 1;
  c.wall_start_s = {0, 0};
  c.wall_end_s = {1, 1};
  c.device_time_s = {1, 1};
  c.enqueue_s = {0, 0};
  const ReportRow r = report_row(run, c);
  CHECK(r.host.others_share == Approx(0.5));
  CHECK(std::find(r.flags.begin(), r.flags.end(), "host busy: others used 50% of node 0's 2 CPUs (load 3.5)") !=
        r.flags.end());
  CHECK(std::find(r.flags.begin(), r.flags.end(),
                  "descheduled: rank 0 waited for a CPU 47% of the time it was ready to run") != r.flags.end());
}

TEST_CASE("report --check: a limit that fails on a case the host disturbed says what the host did", "[host]") {
  ReportRow r;
  r.name = "g";
  r.median_s = 2.0;
  r.expect = {{"max_median_s", 1.0}, {"max_slowest_ratio", 1.5}};
  r.host.busy = "others used 63% of node 0's 2 CPUs";
  const auto checks = check_row(r);
  REQUIRE(checks.size() == 2);
  CHECK_FALSE(checks[0].holds);
  CHECK(checks[0].host == "host busy: others used 63% of node 0's 2 CPUs");
  CHECK(checks[1].holds);  // a limit that holds needs no excuse
  CHECK(checks[1].host.empty());
  CHECK(render_checks("f.h5", checks) ==
        "case 1 (g [parallel]):\n  max_median_s 1.00 s: FAILED (host busy: others used 63% of node 0's 2 CPUs),\n"
        "    measured 2.00 s\nf.h5: check: 2 limits checked in 1 case: 1 holds, 1 FAILED\n");
  const std::string every = render_checks("f.h5", checks, true);
  INFO(every);
  CHECK(every.find("  max_median_s 1.00 s: FAILED (host busy: others used 63% of node 0's 2 CPUs),\n"
                   "    measured 2.00 s\n") != std::string::npos);
  r.host = HostNoise{};
  CHECK(check_row(r)[0].host.empty());
}
