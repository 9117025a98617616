// gpuscale report: read result files and print their rows, no MPI.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "io/result_reader.hpp"
#include "report/analysis.hpp"
#include "report/baseline.hpp"
#include "report/expectations.hpp"
#include "report/fleet_baseline.hpp"
#include "report/report.hpp"
#include "report/side_by_side.hpp"
#include "report/stragglers.hpp"
#include "report/terminal_text.hpp"
#include "report/verdict.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// --min-effect: "5%" or "0.05", handed on as the share.
CLI::Validator min_effect_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_min_effect(text);
        if (v) {
          text = format_number("%.17g", *v);
          return "";
        }
        const bool whole = parse_min_effect(text + "%").has_value();
        return whole ? "must be a share below 1 or a percentage, got " + text + ": write " + text + "% or " +
                           format_number("%g", std::strtod(text.c_str(), nullptr) / 100)
                     : "must be a share from 0 to below 1 (0.05) or a percentage (5%), got " + text;
      },
      "SHARE|N%");
}

// --min-effect and --fail-on judge verdicts against a baseline: without one they would silently do nothing.
void check_baseline_options(const ReportOptions& opt) {
  if (!opt.baseline.empty()) return;
  const char* flag = !opt.fail_on.empty() ? "--fail-on" : !std::isnan(opt.min_effect) ? "--min-effect" : nullptr;
  if (flag) {
    throw InputError(std::string(flag) + " judges the verdicts against a baseline: add --baseline OLD.h5 (a result "
                     "file of the same cases)");
  }
}

// What the report's options say to every row's analysis.
RowSettings settings_of(const ReportOptions& opt) {
  RowSettings s;
  s.straggler_threshold = opt.straggler_threshold;
  s.options = opt.workload_options;
  // The table shows none (--breakdown aside), nor do the verdict's formats; JSON and CSV show each case's.
  s.breakdown = opt.breakdown || opt.format == "json" || opt.format == "json-full" || opt.format == "csv";
  return s;
}

// The options the workloads' analyses add to the report, each once, in the registry's order.
std::vector<ReportOption> workload_report_options() {
  std::vector<ReportOption> out;
  for (const WorkloadType* t : workload_registry()) {
    const RowAnalysis* a = t->analysis();
    if (!a) continue;
    for (auto& o : a->options()) {
      const auto same = [&](const ReportOption& x) { return x.flag == o.flag; };
      if (std::none_of(out.begin(), out.end(), same)) out.push_back(std::move(o));
    }
  }
  return out;
}

// A file's run and its rows, read one case at a time (a case's memory is reused once its row is made); a large
// case's row is made on a second thread while the next case is read.
// For a table, every string from the file made printable (CSV and JSON escape their own).
std::pair<RunRecord, std::vector<ReportRow>> rows_of(const std::string& path, const ReportOptions& opt, bool table) {
  std::vector<ReportRow> rows;
  const RowSettings settings = settings_of(opt);
  RunRecord run = read_result_file(
      path,
      [&](const RunRecord& header, CaseRecord&& c) {
        rows.push_back(report_row(header, c, settings));
        rows.back().file = path;
      },
      VisitOn::either_thread);
  relate_rows(rows);
  if (table) return {for_terminal(std::move(run)), for_terminal(std::move(rows))};
  return {std::move(run), std::move(rows)};
}

// The runs of --baseline, which must be of one config (its file in `config`): none without --baseline.
std::vector<BaselineRun> baseline_runs(const ReportOptions& opt, bool table, std::string& config) {
  std::vector<BaselineRun> bases;
  std::vector<RunRecord> runs;
  for (const auto& path : opt.baseline) {
    auto [run, rows] = rows_of(path, opt, table);
    if (!runs.empty() && (run.config_text != runs.front().config_text ||
                          run.config_overrides != runs.front().config_overrides)) {
      throw InputError("--baseline " + path + " is a run of another config (" + run.config_file + ") than " +
                       bases.front().path + " (" + runs.front().config_file + "): the baseline's runs must be of "
                       "one config");
    }
    bases.push_back({path, std::move(rows)});
    runs.push_back(std::move(run));
  }
  std::vector<std::pair<std::string, const RunRecord*>> files;
  for (std::size_t i = 0; i < runs.size(); ++i) files.emplace_back(bases[i].path, &runs[i]);
  if (const std::string twice = same_run_twice(files); !twice.empty()) throw InputError("--baseline " + twice);
  config = runs.empty() ? "" : runs.front().config_file;
  return bases;
}

// --expect's limits file, read (none: empty).
std::vector<CaseLimit> expect_limits(const ReportOptions& opt) {
  if (opt.expect.empty()) return {};
  if (!opt.check && !opt.verdict) {
    throw InputError("--expect gives the limits --check and --verdict judge by: add one of them (gpuscale report "
                     "FILE --check --expect " + opt.expect + ")");
  }
  return read_limits_file(opt.expect);
}

// --expect: each row's limits from the limits file (none given: the config's stay).
void expect_from(const std::vector<CaseLimit>& limits, const std::string& file, const std::string& path,
                 std::vector<ReportRow>& rows) {
  if (!file.empty() && apply_limits(rows, limits) == 0) {
    throw InputError(path + ": none of its cases has a limit in " + file + " (a baseline of another config, or of "
                     "other job shapes?)");
  }
}

// Table text on the terminal: nothing raw, even in a string no row escaped.
void print_table_text(const std::string& text) { std::cout << printable(text, "\n") << std::flush; }

// report --check of one file: its limits, and those of the cases that did not run. False when any fails, or the
// run did not complete (what did not run was not checked).
// `verbose`: every limit of every case, not only those that failed; the verdict is the last line either way.
bool check_file(const std::string& path, const RunRecord& run, const std::vector<ReportRow>& rows, bool print,
                bool verbose) {
  auto checks = check_expectations(rows);
  const auto unrun = unchecked_limits(run, rows);
  checks.insert(checks.end(), unrun.begin(), unrun.end());
  if (checks.empty()) {
    throw InputError(path + ": no limits to check: its config sets no [experiment.expect] or [defaults.expect] "
                           "(docs/config.md)");
  }
  std::stable_sort(checks.begin(), checks.end(),
                   [](const LimitCheck& a, const LimitCheck& b) { return a.case_index < b.case_index; });
  // Flushed file by file: reading the next file may end the process (a damaged file).
  if (print) {
    std::string text = render_check_lines(checks, verbose);
    if (!run.complete) {
      text += wrap(path + ": the run did not complete (status: " + run.status + "): " + std::to_string(rows.size()) +
                   " of " + std::to_string(run.cases_planned) + " case(s) ran, so the check fails");
    }
    print_table_text(text + verdict_line(judge_run(path, run, rows)) + check_summary(path, checks));
  }
  return all_hold(checks) && run.complete;
}

// --breakdown is a view of its own: the options of other views do not combine with it.
void check_breakdown_options(const ReportOptions& opt) {
  if (!opt.breakdown) return;
  if (opt.check) {
    throw InputError("--breakdown and --check cannot be combined: --check judges limits and sets the exit code, "
                     "--breakdown only shows where the time goes; run them one at a time");
  }
  if (!opt.baseline.empty()) {
    throw InputError("--breakdown and --baseline cannot be combined: the breakdown splits each file's own median; "
                     "run 'report --breakdown' on each file, or --baseline without --breakdown");
  }
  if (opt.wide) {
    throw InputError("--breakdown and --wide cannot be combined: the breakdown has one table, which fits 80 "
                     "columns; --format json or csv has every number");
  }
}

// -o and --cases belong to --format trace, which exports one file on its own (the other views judge or compare).
void check_trace_options(const ReportOptions& opt) {
  if (opt.format != "trace") {
    if (!opt.output.empty()) {
      throw InputError("-o is for --format trace (a timeline file for Perfetto); the other formats print to "
                       "stdout: redirect it, e.g. 'gpuscale report FILE --format json > report.json'");
    }
    if (!opt.cases.empty()) {
      throw InputError("--cases is for --format trace; the other formats show every case (pick rows from "
                       "--format json or csv)");
    }
    if (opt.force) throw InputError("--force is for -o of --format trace; the other formats print to stdout");
    return;
  }
  if (opt.output.empty()) {
    throw InputError("--format trace writes a file: name it with -o, e.g. -o run.json (-o - writes to stdout)");
  }
  if (opt.files.size() != 1) {
    throw InputError("--format trace exports one result file, not " + std::to_string(opt.files.size()) +
                     ": run it once per file, each with its own -o");
  }
  const char* other = opt.check ? "--check"
                      : !opt.baseline.empty() ? "--baseline"
                      : opt.breakdown       ? "--breakdown"
                      : opt.wide            ? "--wide"
                                            : nullptr;
  if (other) {
    throw InputError(std::string("--format trace and ") + other + " cannot be combined: the trace shows every "
                     "sample on a timeline, " + other + " belongs to the report's table; run them one at a time");
  }
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& opt) {
  auto* report =
      app.add_subcommand("report", "Summarize result files: one row per case, speedup of parallel over serial");
  report->add_option("files", opt.files,
                     "Result files (HDF5) written by 'gpuscale run'; with several, the table ends with them side by "
                     "side (each case's median in each file)");
  report->add_option("--format", opt.format,
                     "table | csv | json | json-full (every column, numbers as numbers; json-full: each file's run "
                     "too) | trace (a timeline for ui.perfetto.dev, written to -o) | slurm, hosts (--verdict: the "
                     "nodes to take out)")
      ->check(choice_validator({"table", "csv", "json", "json-full", "trace", "slurm", "hosts"}));
  report->add_option("-o,--output", opt.output,
                     "--format trace: the JSON file to write (- for stdout); the other formats print to stdout");
  report->add_option("--cases", opt.cases,
                     "--format trace: only these cases, numbered from 1 as the table numbers them (e.g. 2 or "
                     "1,3-5); a trace of more than 1000000 events gets a note on stderr that suggests it, and is "
                     "written all the same");
  report->add_flag("--force", opt.force, "--format trace: overwrite the -o file if it exists");
  report->add_flag("--wide", opt.wide, "table: every column in one wide table (default: fits 80 columns)");
  report->add_option("--baseline", opt.baseline,
                     "result files of the same cases (e.g. before a driver update), one run or several of one "
                     "config (every file after it): each case's median over the baseline's, with a 95% interval "
                     "and a verdict: slower or faster where the whole interval lies beyond --min-effect (and, with "
                     "several runs, beyond twice the case's scatter between them), 'uncertain (host busy)' where "
                     "either run's host was busy, else within noise");
  report->add_option("--min-effect", opt.min_effect,
                     "--baseline: the least change a verdict names, a share or a percentage (default 10%: one run on each side does not show how much runs differ): slower only "
                     "where the whole interval lies above 1 + it, faster only below 1 / (1 + it); twice the cases' "
                     "scatter instead where that is larger (docs/analysis.md)")
      ->transform(min_effect_validator());
  report->add_option("--fail-on", opt.fail_on,
                     "--baseline: exit 1 (after printing everything) when a case reads slower, faster, or either "
                     "(any), naming the cases on stderr; 'uncertain (host busy)' and 'within noise' never fail")
      ->check(choice_validator({"slower", "faster", "any"}));
  CLI::Option* check = report->add_flag(
      "--check", opt.check,
      "check the limits the config set in [experiment.expect] and [defaults.expect]: each limit that failed, with "
      "its case and what was measured, then the count (--verbose: every limit); exit 1 when one fails, 0 when all "
      "hold");
  report->add_flag("--verbose", opt.verbose,
                   "--check: each case with each of its limits, whether it holds and what was measured")
      ->needs(check);
  report->add_option("--expect", opt.expect,
                     "--check and --verdict: the limits of a limits file ('gpuscale baseline' of runs of the same "
                     "config) in place of the config's, each case its own");
  report->add_flag("--verdict", opt.verdict,
                   "one verdict per node, GPU (rank) and link: PASS, WARN or FAIL with the reasons, from every "
                   "judgment the file supports (limits, stragglers, slow node pairs, throttling, wrong results, a busy "
                   "host); --format json, slurm (the failed nodes as a hostlist and a drain command for an operator "
                   "to run) or hosts (one a line); exit 0 pass or warn, 1 fail, 2 no verdict possible");
  report->add_flag("--breakdown", opt.breakdown,
                   "where the time goes: each case's median split into compute, exposed transfer, overhead and "
                   "waiting for the slowest rank, with the transfer on the wire beside them (docs/metrics.md); "
                   "--format json, json-full and csv carry it in every row, with or without this flag");
  std::string examples;  // of the workloads' options
  for (const ReportOption& o : workload_report_options()) {
    double& value = opt.workload_options[o.flag];
    value = o.default_value;
    report->add_option(o.flag, value, o.help)
        ->check(number_validator(o.type_name, [o](double v) { return o.accepts(v); }, o.must));
    if (!o.example.empty()) examples += "  gpuscale report " + o.example + "\n";
  }
  opt.straggler_threshold = kStragglerThreshold;
  report->add_option("--straggler-threshold", opt.straggler_threshold,
                     "a rank (or node) whose median sample is more than this share above the median of the others "
                     "is named as a straggler (default 0.2: 20%)")
      ->check(number_validator(
          "SHARE", [](double v) { return v > 0 && std::isfinite(v); },
          "a number above 0 (how much slower than the others' median a rank or node may be, e.g. 0.2 for 20%)"));
  report->footer("Examples:\n  gpuscale report results/default.h5\n"
                 "  gpuscale report results/default.h5 --format json\n" + examples +
                 "  gpuscale report results/one-node.h5 results/two-nodes.h5   # and side by side\n"
                 "  gpuscale report results/after.h5 --baseline results/before.h5\n"
                 "  gpuscale report results/after.h5 --baseline results/before.h5 --fail-on slower --min-effect 10%\n"
                 "  gpuscale report results/acceptance.h5 --check && echo accepted\n"
                 "  gpuscale report results/acceptance.h5 --verdict --format slurm   # the nodes to take out\n"
                 "  gpuscale report results/training-step.h5 --breakdown\n"
                 "  gpuscale report results/overlap.h5 --format trace -o overlap.json --cases 2   # ui.perfetto.dev\n"
                 "Needs neither MPI nor mpirun.");
  return report;
}

int cmd_report(const ReportOptions& opt) {
  if (opt.files.empty()) {
    // --baseline takes every file after it: `report --baseline OLD NEW` leaves none to report.
    throw InputError(opt.baseline.size() > 1 ? "no result file to report: --baseline takes every file after it (" +
                                                   join(opt.baseline, ", ") + "); put the files to report first: "
                                                   "gpuscale report NEW.h5 --baseline OLD.h5"
                                             : "files is required; see 'gpuscale report --help'");
  }
  check_verdict_options(opt);
  const std::vector<CaseLimit> limits = expect_limits(opt);
  if (opt.verdict) {
    auto [run, rows] = rows_of(opt.files.front(), opt, opt.format != "json");
    expect_from(limits, opt.expect, opt.files.front(), rows);
    return report_verdict(opt, run, rows);
  }
  check_trace_options(opt);
  check_breakdown_options(opt);
  check_baseline_options(opt);
  const double min_effect = std::isnan(opt.min_effect) ? kDefaultMinEffect : opt.min_effect;
  const ReportFormat f = parse_report_format(opt.format);
  if (f == ReportFormat::trace) return cmd_report_trace(opt);
  const bool table = f == ReportFormat::table;
  std::string base_config;
  const std::vector<BaselineRun> bases = baseline_runs(opt, table, base_config);
  std::vector<ReportRow> all;
  std::vector<RunRows> runs;
  std::vector<RunRecord> headers;  // json-full: each file's run
  std::vector<BaselineSummary> summaries;
  bool held = true;
  for (const auto& path : opt.files) {
    auto [run, rows] = rows_of(path, opt, table);
    expect_from(limits, opt.expect, path, rows);
    if (f == ReportFormat::json_full) headers.push_back(run);
    if (!opt.baseline.empty()) {
      summaries.push_back(compare_with_baseline(rows, bases, min_effect));
      // A baseline that shares no case (another config, or another job shape) compares nothing: refused.
      const std::string why = unrelated_baseline(rows, bases.front().path, run.config_file, base_config);
      if (!why.empty()) throw InputError(why);
    }
    if (opt.check) {
      held = check_file(path, run, rows, table, opt.verbose) && held;
    } else if (table && opt.breakdown) {
      print_table_text(render_breakdown_report(path, run, rows) + (opt.files.size() > 1 ? "\n" : ""));
    } else if (table) {
      print_table_text(render_table(path, run, rows, opt.wide) +
                       (summaries.empty() ? "" : render_baseline(rows, summaries.back())) +
                       (opt.files.size() > 1 ? "\n" : ""));
    }
    all.insert(all.end(), rows.begin(), rows.end());
    runs.push_back({path, static_cast<int>(run.ranks.size()), run.nodes, std::move(rows)});
  }
  if (table && !opt.check && !opt.breakdown) print_table_text(render_side_by_side(runs));
  if (f == ReportFormat::csv) std::cout << render_csv(all, summaries);
  if (f == ReportFormat::json) std::cout << render_json(all, summaries);
  if (f == ReportFormat::json_full) {
    std::vector<RunOfRows> out;
    for (std::size_t i = 0; i < runs.size(); ++i) out.push_back({runs[i].path, &headers[i], &runs[i].rows});
    std::cout << render_json_full(out, summaries);
  }
  const FailOn fail_on = parse_fail_on(opt.fail_on);
  const std::string failing = failing_cases(all, fail_on);
  const std::string uncertain = fail_on == FailOn::none ? "" : uncertain_cases(all);
  std::cout << std::flush;  // the lines come after everything printed
  if (!uncertain.empty()) std::cerr << "gpuscale: note: " << printable(uncertain) << std::endl;
  if (!failing.empty()) std::cerr << "gpuscale: " << printable(failing) << std::endl;
  return held && failing.empty() ? kExitOk : kExitFailure;
}

}  // namespace gpuscale
