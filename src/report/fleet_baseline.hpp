// gpuscale baseline: the values a fleet's own runs of one config lead to expect, per case, written as the limits
// `report --check` already checks ([experiment.expect]'s names), into a limits file that `report --check --expect`
// applies to a later run of the same config (docs/analysis.md, "Fleet baselines").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/result_model.hpp"
#include "report/report.hpp"

namespace gpuscale {

// At least this many runs of one config make a baseline (a centre and a spread need three).
constexpr std::size_t kMinBaselineRuns = 3;
// A limit lies this share below the median of the runs (above, for a time), or kBaselineScatterWidths times their
// scatter where that is more: a run 20% worse than the baseline's runs fails, a quiet one passes.
constexpr double kBaselineMargin = 0.10;
constexpr double kBaselineScatterWidths = 3.0;
// The format of the limits file (its key gpuscale_limits).
constexpr int kLimitsFormat = 1;

// One case's limit from the runs: the case's identity, as `report --baseline` matches cases, and why it is what it is.
struct CaseLimit {
  std::string experiment, workload, params;  // params: the case's label (ReportRow::params_label)
  Mode mode = Mode::parallel;
  int ranks = 1, nodes = 1;
  std::string limit;      // an [experiment.expect] name: min_busbw_gbps, min_gflops_per_rank, ... or max_median_s
  double value = 0.0;     // 0 where `skipped` says why there is none
  std::string comment;    // "median 9.02 GFLOP/s of 3 runs (8.95-9.10), scatter 0.8%: 10% below the median"
  std::string skipped;    // why no limit: "2 of 3 runs measured it on a quiet host (3 needed)"
};

struct FleetBaseline {
  std::string config_file;  // of the runs
  std::vector<std::string> files;
  std::vector<CaseLimit> cases;
};

// The limits from `runs` (each a file's path, run and rows): InputError (one line) where they are fewer than
// kMinBaselineRuns, did not complete, or are not runs of one config (their config text and --set overrides).
FleetBaseline derive_baseline(const std::vector<std::pair<std::string, std::pair<RunRecord, std::vector<ReportRow>>>>&
                                  runs);

// Two of `files` that hold one run (one file by two paths, a link, or a copy: the same start date, ranks' pids and
// hosts): the line that names both ("" where every file holds a run of its own). A run counted twice would show no
// scatter between runs.
std::string same_run_twice(const std::vector<std::pair<std::string, const RunRecord*>>& files);

// The limits file: a comment on where it came from, gpuscale_limits, then a [[case]] table per case.
std::string limits_toml(const FleetBaseline& b);

// A limits file read back: InputError (one line naming the file and the key) where it is not one.
std::vector<CaseLimit> read_limits_file(const std::string& path);

// Replaces the limits of each row with those of its case in `limits` (none where the file has no limit for it); the
// number of rows that got one.
std::size_t apply_limits(std::vector<ReportRow>& rows, const std::vector<CaseLimit>& limits);

}  // namespace gpuscale
