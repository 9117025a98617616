// Turns a result file into rows: statistics of each case and, for every
// serial/parallel pair of the same parameters, speedup and efficiency.
// Definitions: docs/metrics.md.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/intervals.hpp"
#include "io/result_model.hpp"
#include "report/breakdown.hpp"
#include "report/finding.hpp"
#include "report/host_noise.hpp"
#include "report/stragglers.hpp"

namespace gpuscale {

// The same case in a baseline file (report --baseline): ratio = this median / the baseline's. With several baseline
// runs, the baseline's is the run whose time is their median (the lower of the two middle ones).
struct BaselineComparison {
  std::string file;            // the baseline run compared with
  std::size_t case_index = 0;  // in the baseline file (when found)
  std::size_t runs = 0;        // the baseline runs that hold the case (0: none)
  double runs_scatter = NAN;   // how much its time scatters between those runs (stats run_scatter); NaN under 2
  double effect = NAN;         // the change its verdict needed, where it has a ratio
  double median_s = NAN;         // the baseline's median sample
  std::optional<double> op_time_s;  // transfers: the baseline's op time, which the ratio compares
  double ratio = NAN;             // compared_time here / there
  std::optional<Interval> ratio_ci;
  std::string verdict;  // faster | slower | within noise | too few samples | not in baseline | skipped in baseline
  std::string ran_there;  // not in baseline, but the same case ran there in another shape: "2 rank(s) on 1 node(s)"
};

// A number a workload adds to its rows: `key` in JSON and CSV; a table column
// headed `head` where that is set; in the row's phase note as "words VALUE"
// where `words` is set.
enum class FigureKind {
  seconds,      // "1.2 ms"
  share,        // of a whole, two significant digits below 10%: "87%", "2.5%"
  percent,      // whole percents: "87%"
  case_number,  // a case of the same file, by its index (shown from 1)
};
struct Figure {
  std::string key;
  double value = 0.0;
  FigureKind kind = FigureKind::seconds;
  std::string head;
  std::string words;
};

struct ReportRow {
  std::string file;  // the result file the row comes from (set by the caller)
  std::size_t case_index = 0;  // the file's index (/cases/NNNN); every view shows case_index + 1, as `run` does
  std::string name, workload;
  Mode mode = Mode::parallel;
  Backend backend = Backend::cpu;
  CaseStatus status = CaseStatus::ok;
  std::string status_reason;  // why a case was skipped
  int ranks = 1, nodes = 1, reps = 0;
  int turns = 1;  // serial mode: turns that ran one after another (ranks, or groups for transfers)
  Params params;       // workload parameters (no warmup/reps)
  std::string params_label;
  // Statistics of the case's sample time: serial = sum over ranks of each
  // rank's sample; parallel = makespan (max end - min start, common clock).
  double median_s = 0, min_s = 0, p95_s = 0;
  std::optional<Interval> median_ci;  // kMedianConfidence interval of the median (none under kMinIntervalSamples)
  double enqueue_median_s = 0;          // median host time until a sample's work was enqueued
  std::optional<double> gflops;        // one rank: flops per sample / median device time
  std::optional<double> total_gflops;  // all ranks: ranks * flops per sample / median_s
  std::optional<double> gbps;          // bandwidth workloads: bytes per sample / median device time, 1e9 B/s
  std::optional<double> total_gbps;    // all ranks: ranks * bytes per sample / median_s
  std::optional<double> speedup;       // parallel rows with a serial twin, or strong scaling (below)
  std::optional<double> efficiency;    // speedup / the serial twin's turns, or / group_size
  // 95% intervals of both, from the two medians' intervals (core/intervals.hpp).
  std::optional<Interval> speedup_ci, efficiency_ci;
  // Transfers: the scope, its groups, and nccl-tests' numbers: the time of
  // one operation (mean over ranks of device time / iters, median over
  // samples), algbw = bytes / that time, busbw = algbw x the bus factor.
  std::optional<Scope> scope;
  std::optional<CommKind> comm;
  int groups = 0, group_size = 0;  // group_size: the largest group
  std::optional<double> op_time_s, algbw_gbps, busbw_gbps;
  std::optional<Interval> op_time_ci;  // of the op time (as median_ci of the median)
  // The fastest and the slowest rank's op time: per sample the least and the most over ranks of device time /
  // iters, median over samples (the mean over ranks is op_time_s).
  std::optional<double> op_time_min_s, op_time_max_s;
  std::int64_t wrong_elements = 0;  // the most of any rank
  int slowest_rank = 0;
  double slowest_ratio = 1.0;  // slowest rank's median / median of the other ranks' medians (slowest_rank())
  double max_verify_error = 0.0;
  std::string note;  // the workload's note on how it ran (e.g. memcpy on the CPU backend)
  // Workloads that mark phases: each phase's time in a sample (the sum of its
  // intervals; median over ranks and samples), in the order they appeared.
  std::vector<std::pair<std::string, double>> phase_s;
  // Where the median sample's time goes (report/breakdown.hpp); none for a skipped case.
  std::optional<Breakdown> breakdown;
  // What a reader should doubt about this case's numbers (ran cold, throttled, clocks below the maximum).
  std::vector<std::string> flags;
  // What the case says of one node, GPU or link (a rank's wrong results, a slow pair of nodes), for the verdict.
  std::vector<Finding> findings;
  // What else the host did while the case ran (report/host_noise.hpp); its flags are also in `flags`.
  HostNoise host;
  // What the run's header warns of every case (e.g. more ranks than cores), so that a row read alone keeps it.
  std::vector<std::string> run_warnings;
  // Ranks and nodes slower than the others by more than the straggler threshold (also in flags).
  Stragglers stragglers;
  std::optional<BaselineComparison> baseline;
  std::vector<std::pair<std::string, double>> expect;  // its experiment's [experiment.expect] limits
  int node_ranks = 0, node_cores = 0;  // the job's node with the most ranks per core (0: cores unknown)
  // What the case's workload adds (its RowAnalysis, report/analysis.hpp).
  std::vector<Figure> figures;
  std::vector<std::string> notes;          // lines under the table, after the flags ("case 3: ..." where about one)
  std::vector<std::string> section_lines;  // a section of its own after the table's notes
  std::vector<std::pair<std::string, std::string>> json;  // JSON key, value as JSON text

  const Figure* figure(const std::string& key) const;
  std::optional<double> figure_value(const std::string& key) const;
};

// Ranks that took part: all, except those outside the case's group (group
// index -1: a distributed_gemm with group_size below the job's ranks).
std::vector<bool> taking_part(const CaseRecord& c);
// The [rank][rep] rows of `x` of the ranks that took part, one after another.
std::vector<double> rows_of(const std::vector<double>& x, int reps, const std::vector<bool>& in);
// Each rank's turn in serial mode (ranks of one turn run together); none recorded (schema 1.0): each rank alone.
std::vector<std::int64_t> turns_of(const CaseRecord& c);
// What a row's median_s is the median of, one value per sample: serial, the sum over turns of each turn's makespan;
// parallel, the makespan (max end - min start over ranks, common clock).
std::vector<double> sample_times(const CaseRecord& c);
// The phases table of a case (kPhasesTable) as columns rank, sample, phase (its levels the names), start, end;
// empty where the case has none or it lacks one of them.
std::vector<const TableColumn*> phase_columns(const CaseRecord& c);
// Each phase's time in each sample (its intervals summed), [rank][rep], by
// phase name in the order of the phases table's names; empty without phases.
std::vector<std::pair<std::string, std::vector<double>>> phase_sums(const CaseRecord& c);

// The one time by which a row is compared with others (side by side,
// --baseline): a transfer's op time, else its median sample; with its interval.
struct ComparedTime {
  double s = NAN;
  std::optional<Interval> ci;
};
ComparedTime compared_time(const ReportRow& r);

// Speedup of `p` over `base` (its median over p's), with its interval, and efficiency = speedup / `workers`.
void set_speedup(ReportRow& p, const ReportRow& base, double workers);

// A case whose first timed sample took more than this times its rank's median device time, and more than that
// median by more than both the spread of the rank's other samples (their interquartile range) and kColdStartFloorS,
// is flagged as having run cold (docs/metrics.md).
constexpr double kColdStartRatio = 1.25;
constexpr double kColdStartFloorS = 10e-6;

// Every case's row under the report's default options (other options: build_report and report_row of
// report/analysis.hpp, with RowSettings).
std::vector<ReportRow> build_report(const RunRecord& run);
// build_report in two steps, for reading a file one case at a time: each
// case's row (`run` gives the ranks; its cases are not looked at), then what
// rows say about each other (speedup, efficiency, strong scaling, of vendor).
ReportRow report_row(const RunRecord& run, const CaseRecord& c);
void relate_rows(std::vector<ReportRow>& rows);

enum class ReportFormat { table, csv, json, json_full, trace };
ReportFormat parse_report_format(const std::string& s);  // InputError for others

// True when a row's speedup cannot be told from 1: its interval holds 1.
bool speedup_uncertain(const ReportRow& r);
// A speedup as every view words it: always the point estimate, "1.88x";
// " (uncertain)" where its interval holds 1; `interval`: "1.88x (0.91-2.09)".
std::string speedup_text(double speedup, const std::optional<Interval>& ci, bool interval);

// A header about the run (file, version, backend, completeness), the rows and
// notes on them. By default at most 80 columns: one block per experiment with
// only the parameters that vary in it; `wide`: every column in one table.
std::string render_table(const std::string& path, const RunRecord& run, const std::vector<ReportRow>& rows,
                         bool wide = false);
// report --breakdown: the run in a line, then where each case's time goes (render_breakdown), labelled
// "#N varying-parameters [mode]" under a line per experiment with what its cases share.
std::string render_breakdown_report(const std::string& path, const RunRecord& run,
                                    const std::vector<ReportRow>& rows);
std::string render_csv(const std::vector<ReportRow>& rows);
std::string render_json(const std::vector<ReportRow>& rows);
// --format json-full: {"runs": [each file's metadata, warnings and completeness], "cases": [the rows, as json]}.
struct RunOfRows {
  std::string path;
  const RunRecord* run = nullptr;
  const std::vector<ReportRow>* rows = nullptr;
};
std::string render_json_full(const std::vector<RunOfRows>& runs);

// The parameters of `rows`: " k=v ..." of those with one value in all of
// them, and the others with a cell per row (in order of first appearance).
struct ParamSplit {
  std::string shared;
  std::vector<std::pair<std::string, std::vector<std::string>>> varying;
};
ParamSplit split_params(const std::vector<const ReportRow*>& rows);

// Rows grouped by experiment, experiments in order of first appearance.
std::vector<std::vector<const ReportRow*>> by_experiment(const std::vector<ReportRow>& rows);

// The width every text table fits (--wide aside), and whether each line of `text` does.
constexpr std::size_t kTerminalWidth = 80;
bool fits_terminal(const std::string& text);

// "12.3 ms", "1.23 s", "45.6 us"
std::string format_seconds(double s);
// Rows of cells as text columns two spaces apart; column i left-aligned where left(i), else right-aligned.
std::string align_columns(const std::vector<std::vector<std::string>>& cells,
                          const std::function<bool(std::size_t)>& left);

}  // namespace gpuscale
