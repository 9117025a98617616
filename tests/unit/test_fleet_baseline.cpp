// gpuscale baseline (report/fleet_baseline.hpp): limits from made-up runs, the limits file written and read back.
#include <catch2/catch.hpp>

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
  RunRecord run;
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
  const Runs wide{{"a.h5", run_at(100)}, {"b.h5", run_at(80)}, {"c.h5", run_at(125)}};
  const FleetBaseline w = derive_baseline(wide);
  CHECK(w.cases[0].value < 60.0);
  CHECK(w.cases[0].comment.find("too scattered to catch a change of 20%") != std::string::npos);
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
