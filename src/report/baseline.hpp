// A run against an older one of the same cases (report NEW --baseline OLD):
// each case's median over the baseline's, with a 95% interval from both
// cases' samples, and a verdict: faster or slower only where the whole
// interval lies beyond a minimum effect (one run's samples do not show how
// much two runs differ), uncertain where the host was busy, else within noise.
// Definitions: docs/analysis.md, "Against a baseline".
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/intervals.hpp"
#include "report/report.hpp"

namespace gpuscale {

// The least change a verdict names, as a share (report --min-effect). One run on each side says nothing of how
// much two runs of the same software differ (measured: identical runs of configs/default.toml 0.56x-1.8x apart
// on one case), so changes under 10% are not called unless --min-effect says otherwise.
constexpr double kDefaultMinEffect = 0.10;
// The cases' scatter (below) is estimated from at least this many compared cases...
constexpr std::size_t kMinScatterCases = 5;
// ...and a verdict needs a change of this many times it, where that is more than the minimum effect.
constexpr double kScatterWidths = 2.0;

// The verdict words of BaselineComparison::verdict, the same in every view.
inline constexpr const char* kSlower = "slower";
inline constexpr const char* kFaster = "faster";
inline constexpr const char* kWithinNoise = "within noise";
inline constexpr const char* kUncertainHost = "uncertain (host busy)";
inline constexpr const char* kTooFewSamples = "too few samples";

// "5%" or "0.05" as 0.05: a share from 0 (without %, below 1, so that "5" is not read as 500%); nullopt otherwise.
std::optional<double> parse_min_effect(const std::string& text);

// A ratio new / old of times against a change of `effect` (a share): "slower" where its whole interval lies above
// 1 + effect, "faster" where it lies below 1 / (1 + effect), "within noise" otherwise, "too few samples" without one.
std::string effect_verdict(const std::optional<Interval>& ratio, double effect);

// What one file's comparison with the baseline judged by, beyond each row's BaselineComparison.
struct BaselineSummary {
  std::string file;                // the file compared (its rows' `file`)
  std::string base_file;           // the baseline (its first run)
  std::size_t base_runs = 1;       // the baseline's runs
  double min_effect = kDefaultMinEffect;
  // How much the compared cases' ratios scatter about their median: 1.4826 x the median absolute deviation of
  // ln(ratio), as a share (exp - 1); NaN where fewer than kMinScatterCases cases count (cases with an interval
  // whose host was not busy on either side).
  double scatter = NAN;
  std::size_t scatter_cases = 0;   // the cases that count (whether or not they were enough)
  double median_ratio = NAN;       // of those cases (NaN under 3)
  double effect = kDefaultMinEffect;  // the change a verdict needs: the larger of min_effect and the scatter's
  // Cases here whose verdict is uncertain, by case index: why, from the host of this row and the baseline's.
  std::map<std::size_t, std::string> uncertain;
};

// One run of the baseline: its file and its rows.
struct BaselineRun {
  std::string path;
  std::vector<ReportRow> rows;
};

// Sets `baseline` on every row of `rows` that ran: the rows of `bases` with the same experiment, parameters, mode,
// ranks and nodes, or a verdict saying why none. The verdict needs a change of at least `min_effect` (or twice the
// cases' scatter); with the case in 2 or more baseline runs, also of twice its scatter between them (kScatterWidths
// x run_scatter), and the ratio is to the median run's. `bases` holds at least one run.
BaselineSummary compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<BaselineRun>& bases,
                                      double min_effect = kDefaultMinEffect);
// The same with one baseline run.
BaselineSummary compare_with_baseline(std::vector<ReportRow>& rows, const std::vector<ReportRow>& base,
                                      const std::string& base_path, double min_effect = kDefaultMinEffect);

// "" where a row of `rows` found its twin in the baseline `file` (or none was compared), else why none did, in one
// line for an error: another shape (the side-by-side command that compares them), or other experiments (the two
// configs named).
std::string unrelated_baseline(const std::vector<ReportRow>& rows, const std::string& file,
                               const std::string& config_here, const std::string& config_there);

// The comparison as a table that fits 80 columns, with its rule and notes ("" when no row has one).
std::string render_baseline(const std::vector<ReportRow>& rows, const BaselineSummary& summary);

// A row's verdict as the table shows it: "within noise (<5%)" where its interval leaves out 1 but not its effect.
std::string verdict_text(const BaselineComparison& b);
// True where a row reads within noise although its interval leaves out 1 (the change is smaller than the effect).
bool small_change(const BaselineComparison& b);

// report --fail-on: which verdicts fail the run.
enum class FailOn { none, slower, faster, any };
FailOn parse_fail_on(const std::string& word);  // "" none; slower, faster, any; InputError otherwise
// "" when no row has a verdict `on` fails on, else the line for stderr: "2 case(s) slower than the baseline: 3, 5"
// (with each file's name where rows come from several).
std::string failing_cases(const std::vector<ReportRow>& rows, FailOn on);

// "" when no row is uncertain, else the line for stderr under --fail-on: "2 case(s) uncertain (host busy), not judged
// by --fail-on: 1, 4".
std::string uncertain_cases(const std::vector<ReportRow>& rows);

// --format json, json-full and csv with each file's summary in its rows' baseline fields (render_json.cpp,
// render_csv.cpp); rows of a file without one get none of those fields.
std::string render_json(const std::vector<ReportRow>& rows, const std::vector<BaselineSummary>& summaries);
std::string render_json_full(const std::vector<RunOfRows>& runs, const std::vector<BaselineSummary>& summaries);
std::string render_csv(const std::vector<ReportRow>& rows, const std::vector<BaselineSummary>& summaries);
// The summary of `file` among `summaries`, or nullptr.
const BaselineSummary* summary_of(const std::vector<BaselineSummary>& summaries, const std::string& file);

}  // namespace gpuscale
