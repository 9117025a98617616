// Whether other work on the node makes a job slower, from made-up readings: the 1-minute load, the node's CPUs and
// the job's, and what check and run then print beside their estimate.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "app/host_busy.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "runner/host_load.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

TEST_CASE("a load beyond what the cores hold beside the job makes the host busy, and the line says so", "[host_busy]") {
  // The example of a 2-core machine under builds: 6.2 runnable threads beside 2 ranks.
  const HostBusy b = host_busy(HostLoad{6.2, 2, 2}, 2);
  CHECK(b.share.others == Approx(6.2));
  CHECK(b.share.node_cpus == 2);
  CHECK(b.share.job_cpus == 2);
  CHECK(b.slowdown == Approx(4.1));  // 8.2 threads on 2 cores
  CHECK(b.line == "host busy: load 6.2 on 2 cores; the estimate assumes it stays");
  // An estimate for more nodes than this one does not count it, and says so.
  CHECK(host_busy(HostLoad{6.2, 2, 2}, 2, "for 2 nodes").line ==
        "host busy: load 6.2 on 2 cores; the estimate, for 2 nodes, does not count it");
}

TEST_CASE("a load the cores hold beside the job, or a small one, is no news", "[host_busy]") {
  // 16 cores, a job of 2 threads, others 10: 12 threads on 16 cores.
  const HostBusy fits = host_busy(HostLoad{10, 16, 16}, 2);
  CHECK(fits.slowdown == 1);
  CHECK(fits.line.empty());
  // 2 cores, 2 threads, load 0.3: 15% slower, under the threshold; the estimate still counts it.
  const HostBusy small = host_busy(HostLoad{0.3, 2, 2}, 2);
  CHECK(small.share.others == Approx(0.3));
  CHECK(small.slowdown == Approx(1.15));
  CHECK(small.line.empty());
  CHECK(host_busy(HostLoad{0, 2, 2}, 2).slowdown == 1);
}

TEST_CASE("others are spread over all the node's cores, those the job may use among them", "[host_busy]") {
  // 16 cores, the job's 2 ranks bound to 2 of them: a load of 14.5 puts about one thread on each core.
  const HostBusy spread = host_busy(HostLoad{14.5, 16, 2}, 2);
  CHECK(spread.slowdown == Approx(16.5 / 16));
  CHECK(spread.line.empty());
  // A load of 30: two threads to a core, the job's two among them.
  const HostBusy b = host_busy(HostLoad{30, 16, 2}, 2);
  CHECK(b.slowdown == Approx(2));
  CHECK(b.line == "host busy: load 30.0 on 16 cores, 2 of them this job's; the estimate assumes it stays");
  // One rank bound to one of 2 cores, a load of 5.5: 3.25 threads to a core.
  CHECK(host_busy(HostLoad{5.5, 2, 1}, 1).slowdown == Approx(3.25));
  // A load of 20 on 16 cores, the job of 4 threads on all of them: 24 threads share 16 cores.
  CHECK(host_busy(HostLoad{20, 16, 16}, 4).slowdown == Approx(1.5));
  CHECK(host_busy(HostLoad{20, 16, 0}, 4).share.job_cpus == 16);  // the job's CPUs unknown: all of the node's
}

TEST_CASE("work that ended within the minute counts no more: the load is the lower of the average and now",
          "[host_busy]") {
  // Builds that just ended: the average still says 6.2, the node runs 0.3 threads now.
  const HostBusy ended = host_busy(HostLoad{6.2, 2, 2, 0.3}, 2);
  CHECK(ended.share.others == Approx(0.3));
  CHECK(ended.line.empty());
  // A burst now beyond the average: the average, which says what stays.
  const HostBusy burst = host_busy(HostLoad{3, 2, 2, 9}, 2);
  CHECK(burst.share.others == Approx(3));
  CHECK(burst.line == "host busy: load 3.0 on 2 cores; the estimate assumes it stays");
  CHECK(host_busy(HostLoad{6.2, 2, 2, 4}, 2).line == "host busy: load 4.0 on 2 cores; the estimate assumes it stays");
}

TEST_CASE("a load that cannot be read assumes a quiet host, and says so", "[host_busy]") {
  const HostBusy b = host_busy(HostLoad{NAN, 2, 2}, 2);
  CHECK(b.slowdown == 1);
  CHECK(b.share.slowdown(2) == 1);
  CHECK(b.line == "host load unknown (/proc/loadavg unreadable): the estimate assumes no other work on this node");
}

TEST_CASE("the test hook's load is a number at least 0", "[host_busy]") {
  CHECK(parse_test_loadavg("6.2") == Approx(6.2));
  CHECK(parse_test_loadavg("0") == 0);
  for (const char* bad : {"", "busy", "-1", "nan", "3x", "inf"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_test_loadavg(bad), "GPUSCALE_TEST_LOADAVG (a test hook): must be a number at least 0, "
                                               "got '" + std::string(bad) + "'");
    CHECK_THROWS_AS(parse_test_loadavg(bad), InputError);
  }
}

TEST_CASE("the job's CPUs on a node are the union of its ranks' affinity lists", "[host_busy]") {
  CHECK(cpus_in_lists({"0-3,8"}) == 5);
  CHECK(cpus_in_lists({"0", "1"}) == 2);  // bound one core each
  CHECK(cpus_in_lists({"0-1", "0-1"}) == 2);  // sharing the node's two
  CHECK(cpus_in_lists({}) == 0);
  CHECK(cpus_in_lists({"0-1", ""}) == 0);  // a rank that could not read its own: unknown
  CHECK(cpus_in_lists({"3-1"}) == 0);
}

TEST_CASE("a node's busiest threads are its ranks times the most threads a case asks for", "[host_busy]") {
  const auto plan = expand(parse_config("[[experiment]]\nworkload = \"gemm\"\nsize = 64\nthreads = [1, 3]\n", "h.toml",
                                        {}, workload_schemas()));
  CHECK(busiest_threads(plan, 2) == 6);
  CHECK(busiest_threads({}, 2) == 2);
}

TEST_CASE("/proc/stat gives the node's CPUs and the threads runnable now, nothing else read", "[host_busy]") {
  std::istringstream stat("cpu  10 0 5 100 0 0 0 0 0 0\ncpu0 5 0 2 50 0 0 0 0 0 0\ncpu1 5 0 3 50 0 0 0 0 0 0\n"
                          "intr 123 4 5\nctxt 99\nbtime 1\nprocesses 300\nprocs_running 7\nprocs_blocked 0\n");
  HostReading st;
  parse_proc_stat(stat, 100, st);
  CHECK(st.node_cpus == 2);
  CHECK(st.procs_running == 7);
  CHECK(st.node_busy_s == Approx(0.15));  // user 10 + system 5 jiffies of 10 ms
  std::istringstream none("cpu  1 2 3\n");
  HostReading unknown;
  parse_proc_stat(none, 100, unknown);
  CHECK(unknown.procs_running == -1);  // not there: unknown
  CHECK(unknown.node_cpus == 0);
  CHECK(std::isnan(unknown.node_busy_s));
}
