// gpuscale baseline (report/fleet_baseline.hpp): limits from made-up runs, the limits file written and read back.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "report/fleet_baseline.hpp"

using namespace gpuscale;

namespace {

using Runs = std::vector<std::pair<std::string, std::pair<RunRecord, std::vector<ReportRow>>>>;

// A complete run of one gemm case rated at `gflops`, busy or not.
std::pair<RunRecord, std::vector<ReportRow>> run_at(double gflops, bool busy = false) {
  static int runs = 0;  // each a run of its own: its start date
  RunRecord run;
  run.date = "2026-12-07T10:00:" + std::to_string(10 + runs++ % 50) + "+0000";
  run.complete = true;
  run.config_file = "q.toml";
  run.config_text = "[[experiment]]";
  ReportRow r;
  r.name = "mm";
  r.workload = "gemm";
  r.params_label = "size=64";
  r.ranks = 2;
  r.status = CaseStatus::ok;
  r.gflops = gflops;
  r.median_s = 1.0;
  if (busy) r.host.busy = "others used 60% of node 0's 2 CPUs";
  return {run, {r}};
}

}  // namespace

TEST_CASE("baseline: the median of the runs less the larger of 10% and 3x their scatter", "[fleet-baseline]") {
  const Runs runs{{"a.h5", run_at(100)}, {"b.h5", run_at(102)}, {"c.h5", run_at(98)}};
  const FleetBaseline b = derive_baseline(runs);
  REQUIRE(b.cases.size() == 1);
  CHECK(b.cases[0].limit == "min_gflops_per_rank");
  CHECK(b.cases[0].value == Approx(90.0));  // scatter 2% x 3 = 6%, under 10%
  CHECK(b.cases[0].comment == "median 100 GFLOP/s of 3 runs (98.0-102), scatter 3.0%: 10% below the median");
  const Runs wide{{"a.h5", run_at(100)}, {"b.h5", run_at(90)}, {"c.h5", run_at(112)}};
  const FleetBaseline w = derive_baseline(wide);
  CHECK(w.cases[0].value == Approx(100 * (1 - 3 * (std::exp(1.4826 * std::log(100.0 / 90)) - 1))));
  CHECK(w.cases[0].comment.find("too scattered to catch a change of 20%") != std::string::npos);
  // Of 3 runs the median deviation is the nearer one's: here 2.8%, where the runs' standard deviation (of the
  // logs) is 12.2%; the larger counts (quick.toml's sendrecv of 8 KiB; its next two runs gave 2.62 and 1.17).
  const Runs three{{"a.h5", run_at(1.60)}, {"b.h5", run_at(1.63)}, {"c.h5", run_at(1.97)}};
  const FleetBaseline t = derive_baseline(three);
  CHECK(t.cases[0].comment == "median 1.63 GFLOP/s of 3 runs (1.60-1.97), scatter 12.2%: 37% below the median; too "
                              "scattered to catch a change of 20%");
  CHECK(t.cases[0].value == Approx(1.63 * (1 - 3 * 0.12197)).epsilon(1e-3));
  CHECK(t.cases[0].value < 1.17);
  // Scattered so widely that 3x it reaches the median: no limit (a minimum of 0 or less is none, and a limits
  // file holding one is refused), and the file says why.
  const Runs wider{{"a.h5", run_at(0.4)}, {"b.h5", run_at(0.3)}, {"c.h5", run_at(0.14)}};
  const FleetBaseline n = derive_baseline(wider);
  CHECK(n.cases[0].skipped == "median 0.300 GFLOP/s of 3 runs (0.140-0.400), scatter 72.0%: 3x that is 216%, which "
                              "leaves no lower limit above 0");
  CHECK(limits_toml(n).find("# no limit: median 0.300 GFLOP/s") != std::string::npos);
  CHECK(limits_toml(n).find("min_gflops_per_rank =") == std::string::npos);
}

TEST_CASE("baseline: runs on a busy host are left out, and a case with too few others gets no limit",
          "[fleet-baseline]") {
  const Runs runs{{"a.h5", run_at(100)}, {"b.h5", run_at(101)}, {"c.h5", run_at(40, true)}, {"d.h5", run_at(99)}};
  FleetBaseline b = derive_baseline(runs);
  CHECK(b.cases[0].value == Approx(90.0));
  CHECK(b.cases[0].comment.find("1 run(s) with the host busy or a rank descheduled left out") != std::string::npos);
  const Runs few{{"a.h5", run_at(100)}, {"b.h5", run_at(40, true)}, {"c.h5", run_at(99)}};
  b = derive_baseline(few);
  CHECK(b.cases[0].skipped == "2 of 3 runs measured it on a quiet host (1 with the host busy or a rank descheduled, "
                              "left out); 3 needed");
  CHECK(limits_toml(b).find("# no limit: 2 of 3 runs") != std::string::npos);
}

TEST_CASE("baseline: refused for fewer than 3 runs, incomplete ones, or runs of other configs", "[fleet-baseline]") {
  Runs runs{{"a.h5", run_at(100)}, {"b.h5", run_at(100)}};
  CHECK_THROWS_WITH(derive_baseline(runs), "a baseline needs at least 3 runs of one config, got 2: nothing written");
  runs.push_back({"c.h5", run_at(100)});
  runs[2].second.first.config_text = "other";
  runs[2].second.first.config_file = "o.toml";
  CHECK_THROWS_WITH(derive_baseline(runs), "c.h5 is a run of another config (o.toml) than a.h5 (q.toml): a baseline "
                                           "takes runs of one config");
  runs[2].second.first.config_text = "[[experiment]]";
  runs[1].second.first.complete = false;
  runs[1].second.first.status = "running";
  CHECK_THROWS_WITH(derive_baseline(runs), "b.h5: the run did not complete (status: running): a baseline takes "
                                           "whole runs");
}

TEST_CASE("baseline: the limits file read back gives each case its limit", "[fleet-baseline]") {
  const Runs runs{{"a.h5", run_at(100)}, {"b.h5", run_at(102)}, {"c.h5", run_at(98)}};
  const std::string path = "test_fleet_baseline_limits.toml";
  {
    std::ofstream f(path);
    f << limits_toml(derive_baseline(runs));
  }
  const auto limits = read_limits_file(path);
  std::remove(path.c_str());
  REQUIRE(limits.size() == 1);
  std::vector<ReportRow> rows = runs[0].second.second;
  rows[0].expect = {{"max_median_s", 5.0}};
  CHECK(apply_limits(rows, limits) == 1);
  REQUIRE(rows[0].expect.size() == 1);
  CHECK(rows[0].expect[0].first == "min_gflops_per_rank");
  CHECK(rows[0].expect[0].second == Approx(90.0));
  rows[0].ranks = 4;  // another job shape: no limit of the file is its
  CHECK(apply_limits(rows, limits) == 0);
  CHECK(rows[0].expect.empty());
}

TEST_CASE("baseline: one run by two names counts once, and is refused naming both", "[fleet-baseline]") {
  const auto a = run_at(100);
  auto b = run_at(100);
  b.first.ranks.resize(2);
  auto a2 = a;
  a2.first.ranks.resize(2);
  CHECK(same_run_twice({{"a.h5", &a.first}, {"b.h5", &b.first}}).empty());
  CHECK(same_run_twice({{"a.h5", &a2.first}, {"b.h5", &b.first}}).empty());  // another date
  b.first.date = a2.first.date;
  b.first.ranks[1].pid = 7;  // the same date, another process
  CHECK(same_run_twice({{"a.h5", &a2.first}, {"b.h5", &b.first}}).empty());
  b.first.ranks[1].pid = a2.first.ranks[1].pid;
  CHECK(same_run_twice({{"a.h5", &a2.first}, {"link.h5", &b.first}}) ==
        "link.h5 holds the same run as a.h5 (started " + a2.first.date + ", the same ranks' pids and hosts: one file "
        "by two paths, or a copy): each run counts once");
  try {
    derive_baseline({{"a.h5", a}, {"b.h5", run_at(98)}, {"copy.h5", a}});
    FAIL("one run counted twice");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("copy.h5 holds the same run as a.h5 (started "));
    CHECK_THAT(e.what(), Catch::EndsWith(": nothing written"));
  }
}

namespace {

// The error of reading `text` as a limits file ("" where it reads).
std::string limits_error(const std::string& text) {
  const std::string path = "test_fleet_baseline_bad.toml";
  {
    std::ofstream f(path);
    f << text;
  }
  std::string error;
  try {
    read_limits_file(path);
  } catch (const InputError& e) {
    error = e.what();
  }
  std::remove(path.c_str());
  return error;
}

const std::string kCase = "[[case]]\nexperiment = \"mm\"\nworkload = \"gemm\"\nparams = \"size=64\"\n"
                          "mode = \"parallel\"\nranks = 2\nnodes = 1\n";

}  // namespace

TEST_CASE("baseline: a limits file loses nothing silently: each mistake names the file, line and key",
          "[fleet-baseline]") {
  const std::string head = "gpuscale_limits = 1\n";
  CHECK(limits_error(head + kCase + "max_median_s = 2\n").empty());
  CHECK(limits_error(head + kCase + "max_median_s = 2\nmin_gflops_per_rank = 5\n") ==
        "test_fleet_baseline_bad.toml:10: case 1: a second limit, 'min_gflops_per_rank', beside 'max_median_s': a "
        "case holds one limit");
  CHECK(limits_error(head + kCase + "max_median_s = 2\n" + kCase + "max_median_s = 3\n") ==
        "test_fleet_baseline_bad.toml:10: case 2: the same case as case 1 (experiment, workload, params, mode, ranks "
        "and nodes): one [[case]] a case");
  std::string wrapped = kCase;
  wrapped.replace(wrapped.find("ranks = 2"), 9, "ranks = 4294967298");
  CHECK(limits_error(head + wrapped + "max_median_s = 2\n") ==
        "test_fleet_baseline_bad.toml:7: case 1: 'ranks' is missing or not a whole number from 1 to 2147483647");
  std::string text = kCase;
  text.replace(text.find("nodes = 1"), 9, "nodes = \"1\"");
  CHECK(limits_error(head + text) ==
        "test_fleet_baseline_bad.toml:8: case 1: 'nodes' is missing or not a whole number from 1 to 2147483647");
  CHECK(limits_error(head + kCase + "max_median_s = 2\nmax_median_s = 3\n").rfind(
            "test_fleet_baseline_bad.toml:10: not a gpuscale limits file (from 'gpuscale baseline'): ", 0) == 0);
  CHECK(limits_error(head + kCase + "min_flops = 3\n") ==
        "test_fleet_baseline_bad.toml:9: case 1: unknown key 'min_flops' (a limit is min_busbw_gbps, "
        "min_gbps_per_rank, min_gflops_per_rank or max_median_s)");
  try {
    read_limits_file("/dev/null");
    FAIL("read a device");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "/dev/null: is a character device, not a limits file");
  }
}
