// report --baseline: verdicts that need a minimum effect, the cases' scatter, uncertain rows on a busy host, and
// which cases --fail-on names; from hand-made rows whose ratios and intervals are known.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/baseline.hpp"
#include "report/report.hpp"

using namespace gpuscale;

namespace {

// Case `index` of `file` whose median is `median` with the interval [lo, hi] (a parameter of its own per case).
ReportRow row(std::size_t index, double median, double lo, double hi, const std::string& file = "new.h5") {
  ReportRow r;
  r.file = file;
  r.case_index = index;
  r.name = "g";
  r.workload = "gemm";
  r.mode = Mode::parallel;
  r.reps = 10;
  r.params.set("size", static_cast<std::int64_t>(100 + index));
  r.median_s = median;
  r.median_ci = Interval{lo, hi};
  return r;
}

// Baseline rows of median 1 with the interval [1, 1], so that a row's ratio interval is its own interval.
std::vector<ReportRow> ones(std::size_t n) {
  std::vector<ReportRow> base;
  for (std::size_t i = 0; i < n; ++i) base.push_back(row(i, 1.0, 1.0, 1.0, "old.h5"));
  return base;
}

bool fits_80(const std::string& text) {
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    if ((nl == std::string::npos ? text.size() : nl) - from > 80) return false;
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return true;
}

// Wrapped text on one line: each line break and the indent after it as one space.
std::string flat(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    out += ' ';
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}

}  // namespace

TEST_CASE("report --min-effect takes a share below 1 or a percentage", "[baseline]") {
  CHECK(*parse_min_effect("5%") == Approx(0.05));
  CHECK(*parse_min_effect("0.05") == Approx(0.05));
  CHECK(*parse_min_effect("0") == 0.0);
  CHECK(*parse_min_effect("0%") == 0.0);
  CHECK(*parse_min_effect("150%") == Approx(1.5));
  for (const char* bad : {"5", "1", "-1%", "-0.1", "abc", "", "%", "5%%", "nan", "inf%", "0.05x"}) {
    INFO(bad);
    CHECK_FALSE(parse_min_effect(bad));
  }
}

TEST_CASE("a verdict needs the whole interval beyond the minimum effect", "[baseline]") {
  // Two back-to-back runs of one config on a quiet machine: intervals that leave out 1 by a few percent.
  CHECK(effect_verdict(Interval{1.017, 1.045}, 0.05) == "within noise");
  CHECK(effect_verdict(Interval{0.961, 0.990}, 0.05) == "within noise");
  CHECK(effect_verdict(Interval{1.051, 1.2}, 0.05) == "slower");
  CHECK(effect_verdict(Interval{1.05, 1.2}, 0.05) == "within noise");  // on the bound: not beyond it
  CHECK(effect_verdict(Interval{0.5, 0.95}, 0.05) == "faster");         // below 1 / 1.05 = 0.952
  CHECK(effect_verdict(Interval{0.5, 0.953}, 0.05) == "within noise");
  CHECK(effect_verdict(Interval{0.9, 1.3}, 0.05) == "within noise");
  CHECK(effect_verdict(std::nullopt, 0.05) == "too few samples");
  // No minimum effect: any interval that leaves out 1.
  CHECK(effect_verdict(Interval{1.001, 1.002}, 0.0) == "slower");
  CHECK(effect_verdict(Interval{0.998, 0.999}, 0.0) == "faster");
}

TEST_CASE("small changes read within noise, with the effect in the table and in JSON and CSV", "[baseline]") {
  std::vector<ReportRow> rows{row(0, 1.029, 1.017, 1.045), row(1, 0.982, 0.961, 0.990), row(2, 2.0, 1.9, 2.1),
                              row(3, 1.0, 0.99, 1.01)};
  const BaselineSummary s = compare_with_baseline(rows, ones(4), "old.h5", 0.05);
  CHECK(s.file == "new.h5");
  CHECK(s.effect == 0.05);
  CHECK(std::isnan(s.scatter));  // 4 cases: too few to see the scatter
  CHECK(s.scatter_cases == 4);
  CHECK(s.median_ratio == Approx(std::sqrt(1.029 * 1.0)));
  CHECK(rows[0].baseline->verdict == "within noise");
  CHECK(small_change(*rows[0].baseline));
  CHECK(rows[1].baseline->verdict == "within noise");
  CHECK(rows[2].baseline->verdict == "slower");
  CHECK(rows[3].baseline->verdict == "within noise");
  CHECK_FALSE(small_change(*rows[3].baseline));  // its interval holds 1
  CHECK(verdict_text(*rows[0].baseline) == "within noise (<5%)");
  CHECK(verdict_text(*rows[3].baseline) == "within noise");

  const std::string t = render_baseline(rows, s);
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("against the baseline old.h5") == 0);
  CHECK(flat(t).find("slower where the whole interval lies above 1.050, faster where below 0.952: a change of at "
                     "least 5% (--min-effect)") != std::string::npos);
  CHECK(t.find("within noise (<5%)\n") != std::string::npos);
  CHECK(t.find("slower\n") != std::string::npos);
  CHECK(flat(t).find("note: within noise (<5%): the interval leaves out 1 but does not lie wholly beyond a change "
                     "of 5%, so the change may be smaller") != std::string::npos);
  CHECK(flat(t).find("note: 4 case(s) with an interval and a host not busy on either side, too few (5 needed)") !=
        std::string::npos);

  const auto j = nlohmann::json::parse(render_json(rows, {s}));
  CHECK(j[0]["baseline"]["verdict"] == "within noise");
  CHECK(j[0]["baseline"]["small_change"] == true);
  CHECK(j[3]["baseline"]["small_change"] == false);
  CHECK(j[0]["baseline"]["min_effect"] == 0.05);
  CHECK(j[0]["baseline"]["effect_needed"] == 0.05);
  CHECK_FALSE(j[0]["baseline"].contains("run_scatter"));
  CHECK_FALSE(nlohmann::json::parse(render_json(rows))[0]["baseline"].contains("min_effect"));

  const std::string csv = render_csv(rows, {s});
  const std::string head = csv.substr(0, csv.find('\n'));
  CHECK(head.find(",baseline_min_effect,baseline_effect_needed,baseline_run_scatter,baseline_small_change,"
                  "baseline_uncertain_why") != std::string::npos);
  CHECK(csv.find(",0.05,0.05,,true,\"\"") != std::string::npos);
  CHECK(csv.find(",0.05,0.05,,false,\"\"") != std::string::npos);
}

TEST_CASE("the cases' scatter raises the effect a verdict needs", "[baseline]") {
  // Seven cases: six that moved by a few to 20 percent either way, and one twice as slow.
  const std::vector<double> ratios{1.0, 1.1, 0.9, 1.2, 0.85, 1.0, 2.0};
  std::vector<ReportRow> rows;
  for (std::size_t i = 0; i < ratios.size(); ++i) rows.push_back(row(i, ratios[i], ratios[i] - 0.05, ratios[i] + 0.05));
  const BaselineSummary s = compare_with_baseline(rows, ones(ratios.size()), "old.h5", 0.05);
  // log ratios about their median 0: |0, .0953, .1054, .1823, .1625, 0, .6931|, of which the median is ln(1/0.9).
  const double sigma = 1.4826 * std::log(1 / 0.9);
  CHECK(s.scatter_cases == 7);
  CHECK(s.scatter == Approx(std::expm1(sigma)));
  CHECK(s.effect == Approx(std::expm1(2 * sigma)));  // 36.7%
  CHECK(s.median_ratio == Approx(1.0));
  CHECK(rows[3].baseline->verdict == "within noise");  // 1.15-1.25: slower at 5%, not at 36.7%
  CHECK(rows[6].baseline->verdict == "slower");
  const std::string t = render_baseline(rows, s);
  INFO(t);
  CHECK(flat(t).find("twice the cases' scatter") != std::string::npos);
  CHECK(flat(t).find("note: the ratios of 7 cases scatter by 17%") != std::string::npos);
  const auto j = nlohmann::json::parse(render_json(rows, {s}));
  CHECK(j[6]["baseline"]["run_scatter"].get<double>() == Approx(std::expm1(sigma)));
  CHECK(j[6]["baseline"]["scatter_cases"] == 7);
  CHECK(j[6]["baseline"]["effect_needed"].get<double>() == Approx(std::expm1(2 * sigma)));

  // Where the scatter is under the minimum effect, the minimum effect stands.
  std::vector<ReportRow> quiet;
  for (std::size_t i = 0; i < 6; ++i) quiet.push_back(row(i, 1.0 + 0.01 * i, 0.99 + 0.01 * i, 1.01 + 0.01 * i));
  CHECK(compare_with_baseline(quiet, ones(6), "old.h5", 0.05).effect == 0.05);
}

TEST_CASE("every case moving together gets a note: the machine may have moved", "[baseline]") {
  std::vector<ReportRow> rows;
  for (std::size_t i = 0; i < 6; ++i) rows.push_back(row(i, 1.69, 1.6, 1.8));
  const BaselineSummary s = compare_with_baseline(rows, ones(6), "old.h5");
  CHECK(s.median_ratio == Approx(1.69));
  CHECK(rows[0].baseline->verdict == "slower");
  const std::string t = render_baseline(rows, s);
  INFO(t);
  CHECK(flat(t).find("note: the median case is 1.69x the baseline's: most cases moved together") != std::string::npos);
}

TEST_CASE("a case on a busy host is uncertain, never slower or faster, and says why", "[baseline]") {
  std::vector<ReportRow> rows{row(0, 2.0, 1.9, 2.1), row(1, 0.5, 0.45, 0.55), row(2, 2.0, 1.9, 2.1)};
  rows[0].host.busy = "others used 63% of node 0's CPUs";
  std::vector<ReportRow> base = ones(3);
  base[1].host.descheduled = "rank 1 waited for a CPU 41% of the time it was ready to run";
  const BaselineSummary s = compare_with_baseline(rows, base, "old.h5");
  CHECK(rows[0].baseline->verdict == "uncertain (host busy)");
  CHECK(rows[1].baseline->verdict == "uncertain (host busy)");
  CHECK(rows[2].baseline->verdict == "slower");
  REQUIRE(s.uncertain.size() == 2);
  CHECK(s.uncertain.at(0) == "here, host busy: others used 63% of node 0's CPUs");
  CHECK(s.uncertain.at(1) ==
        "in the baseline, descheduled: rank 1 waited for a CPU 41% of the time it was ready to run");
  CHECK(std::isnan(s.median_ratio));  // one case left that counts
  const std::string t = render_baseline(rows, s);
  INFO(t);
  CHECK(fits_80(t));
  CHECK(t.find("uncertain (host busy)\n") != std::string::npos);
  CHECK(flat(t).find("note: case 1: uncertain: never slower or faster; here, host busy: others used 63%") !=
        std::string::npos);
  CHECK(flat(t).find("note: case 2: uncertain: never slower or faster; in the baseline, descheduled:") !=
        std::string::npos);
  // --fail-on never fails on it, and says it did not judge it.
  CHECK(failing_cases(rows, FailOn::any) == "1 case(s) slower or faster than the baseline: slower 3");
  CHECK(uncertain_cases(rows) == "2 case(s) uncertain (host busy), not judged by --fail-on: 1, 2");
  CHECK(s.scatter_cases == 1);
  const auto j = nlohmann::json::parse(render_json(rows, {s}));
  CHECK(j[0]["baseline"]["verdict"] == "uncertain (host busy)");
  CHECK(j[0]["baseline"]["uncertain_why"] == "here, host busy: others used 63% of node 0's CPUs");
  CHECK_FALSE(j[2]["baseline"].contains("uncertain_why"));
  CHECK(render_csv(rows, {s}).find("\"here, host busy: others used 63% of node 0's CPUs\"") != std::string::npos);
}

TEST_CASE("cases uncertain for the same reason read once, with their cases and the range of their numbers",
          "[baseline]") {
  std::vector<ReportRow> rows;
  for (std::size_t i = 0; i < 4; ++i) {
    rows.push_back(row(i, 2.0, 1.9, 2.1));
    rows.back().host.busy = "others used " + std::to_string(50 + 10 * i) + "% of node 0's CPUs";
  }
  const BaselineSummary s = compare_with_baseline(rows, ones(4), "old.h5");
  const std::string t = flat(render_baseline(rows, s));
  INFO(t);
  CHECK(t.find("note: uncertain in 4 of 4 cases (1-4): never slower or faster; here, host busy: others used 50-80% "
               "of node 0's CPUs") != std::string::npos);
  CHECK(t.find("note: case 1") == std::string::npos);  // not a line per case
}

TEST_CASE("report --fail-on names the cases with that verdict", "[baseline]") {
  std::vector<ReportRow> rows{row(0, 1.0, 0.99, 1.01), row(1, 2.0, 1.9, 2.1), row(2, 0.5, 0.45, 0.55),
                              row(3, 2.0, 1.9, 2.1)};
  compare_with_baseline(rows, ones(4), "old.h5");
  CHECK(failing_cases(rows, FailOn::none).empty());
  CHECK(failing_cases(rows, FailOn::slower) == "2 case(s) slower than the baseline: 2, 4");
  CHECK(failing_cases(rows, FailOn::faster) == "1 case(s) faster than the baseline: 3");
  CHECK(failing_cases(rows, FailOn::any) == "3 case(s) slower or faster than the baseline: slower 2, 4; faster 3");
  // Rows of several files: each file's cases under its name.
  std::vector<ReportRow> other{row(0, 2.0, 1.9, 2.1, "b.h5"), row(1, 1.0, 0.99, 1.01, "b.h5")};
  compare_with_baseline(other, ones(2), "old.h5");
  rows.insert(rows.end(), other.begin(), other.end());
  CHECK(failing_cases(rows, FailOn::slower) == "3 case(s) slower than the baseline: new.h5: 2, 4; b.h5: 1");
  // Nothing within noise fails.
  std::vector<ReportRow> same{row(0, 1.03, 1.02, 1.04)};
  compare_with_baseline(same, ones(1), "old.h5");
  CHECK(failing_cases(same, FailOn::any).empty());
  CHECK(uncertain_cases(same).empty());

  CHECK(parse_fail_on("") == FailOn::none);
  CHECK(parse_fail_on("any") == FailOn::any);
  CHECK_THROWS_WITH(parse_fail_on("slow"), "--fail-on must be one of slower, faster, any, got slow");
  CHECK_THROWS_AS(parse_fail_on("slow"), InputError);
}

TEST_CASE("with several baseline runs a case is compared with the median run and called only beyond twice its "
          "scatter between them", "[baseline]") {
  // Case 0 scatters 10% between the runs, case 1 1%; case 2 is in the first run only. Here each is 1.25 (1.2-1.3).
  const std::vector<std::vector<double>> times{{1.1, 1.0, 0.9}, {1.01, 1.0, 0.99}, {1.0}};
  std::vector<BaselineRun> bases{{"a.h5", {}}, {"b.h5", {}}, {"c.h5", {}}};
  for (std::size_t c = 0; c < times.size(); ++c) {
    for (std::size_t i = 0; i < times[c].size(); ++i) {
      bases[i].rows.push_back(row(c, times[c][i], times[c][i], times[c][i], bases[i].path));
    }
  }
  std::vector<ReportRow> rows;
  for (std::size_t c = 0; c < times.size(); ++c) rows.push_back(row(c, 1.25, 1.2, 1.3));
  const BaselineSummary s = compare_with_baseline(rows, bases, 0.10);
  CHECK(s.base_runs == 3);
  const BaselineComparison& wide = *rows[0].baseline;
  CHECK(wide.file == "b.h5");  // its time, 1.0, is the median of 1.1, 1.0 and 0.9
  CHECK(wide.ratio == Approx(1.25));
  CHECK(wide.runs == 3);
  // 1.4826 x the median absolute deviation of the logs (ln 1.1) is wider than their standard deviation.
  const double sigma = 1.4826 * std::log(1.1);
  CHECK(wide.runs_scatter == Approx(std::expm1(sigma)));
  CHECK(wide.effect == Approx(std::expm1(2 * sigma)));  // 32.6%: 1.2-1.3 is not beyond it
  CHECK(wide.verdict == "within noise");
  const BaselineComparison& tight = *rows[1].baseline;
  CHECK(tight.effect == Approx(0.10));  // twice its scatter is under the minimum effect
  CHECK(tight.verdict == "slower");
  const BaselineComparison& once = *rows[2].baseline;
  CHECK(once.runs == 1);
  CHECK(std::isnan(once.runs_scatter));
  CHECK(once.verdict == "slower");
  const std::string t = flat(render_baseline(rows, s));
  INFO(t);
  CHECK(t.find("against the baseline's 3 runs (a.h5 and others; there: the run whose time is the median)") !=
        std::string::npos);
  CHECK(t.find("note: 3 baseline runs: a case is called only beyond twice its own scatter between them (and the "
               "effect above); their scatter: median ") != std::string::npos);
  CHECK(t.find("over 2 case(s); 1 case(s) in one baseline run only: scatter unknown there") != std::string::npos);
  CHECK(t.find("one run each") == std::string::npos);
  const auto j = nlohmann::json::parse(render_json(rows, {s}));
  CHECK(j[0]["baseline"]["baseline_runs"] == 3);
  CHECK(j[0]["baseline"]["runs_scatter"].get<double>() == Approx(std::expm1(sigma)));
  CHECK(j[0]["baseline"]["effect_needed"].get<double>() == Approx(std::expm1(2 * sigma)));
  CHECK(j[2]["baseline"].count("runs_scatter") == 0);
}
