// The subcommands of the gpuscale command line: each adds itself and its options to the app (add_*_command) and
// runs (cmd_*), returning the exit code.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.hpp"

namespace CLI {
class App;
}

namespace gpuscale {

struct RunRecord;  // io/result_model.hpp
struct ReportRow;  // report/report.hpp

struct RunOptions {
  std::string config;
  std::string output;  // empty: results/<config stem>-<timestamp>.h5
  std::vector<std::string> sets;
  bool force = false;
  std::size_t max_cases = kDefaultMaxCases;
  double time_budget_s = -1;  // < 0: the config's budget_s
  std::string command_line;
};

CLI::App* add_run_command(CLI::App& app, RunOptions& opt);
int cmd_run(const RunOptions& opt, int* argc, char*** argv);

struct CheckOptions {
  std::string config;
  std::vector<std::string> sets;
  std::size_t max_cases = kDefaultMaxCases;
  double time_budget_s = -1;  // < 0: the config's budget_s
  int ranks = 0;              // the job the estimate is for; 0: the job check runs in, else 2
  int nodes = 0;              // 0: the job check runs in, else 1
  std::string model;          // a fitted model (gpuscale model) for the cases' sample times ("" none)
  std::string rates;          // a rates table of another machine (configs/rates/) instead of this one's ("" none)
  bool cases = false;         // a line for each case of the plan (else a summary per experiment)
};
CLI::App* add_check_command(CLI::App& app, CheckOptions& opt);
int cmd_check(const CheckOptions& opt);

struct ReportOptions {
  std::vector<std::string> files;
  std::string format = "table";  // table | csv | json | json-full
  bool wide = false;             // table: every column
  std::vector<std::string> baseline;  // runs of one config to compare every case with (none: no comparison)
  double min_effect = NAN;       // --baseline: the least change a verdict names (NaN: kDefaultMinEffect)
  std::string fail_on;           // --baseline: slower | faster | any: exit 1 on such a verdict ("" never)
  bool check = false;            // check [experiment.expect]'s limits: exit 1 when one fails
  bool verbose = false;          // --check: every limit, not only the failed ones
  bool breakdown = false;        // where the time goes: a line per case (table); JSON and CSV carry it anyway
  double straggler_threshold = 0.2;
  std::map<std::string, double> workload_options;  // the workloads' own options by flag (RowAnalysis::options)
  std::string output;  // --format trace: the file to write ("-" stdout)
  std::string cases;   // --format trace: the cases to export ("1,3-5"; "" all)
  bool force = false;  // --format trace: -o may replace a file
  std::string expect;  // --check: a limits file (gpuscale baseline) whose limits replace the config's
  bool verdict = false;  // a verdict per node, GPU and link (report/verdict.hpp): exit 0 pass/warn, 1 fail, 2 none
};

CLI::App* add_report_command(CLI::App& app, ReportOptions& opt);
int cmd_report(const ReportOptions& opt);
// report --format trace (app/report_trace.cpp): one file's timeline for Perfetto, written to opt.output.
int cmd_report_trace(const ReportOptions& opt);
// report --verdict (app/report_verdict.cpp): InputError for options it does not combine with; then one file's
// verdict from its run and rows, printed in the --format asked (table, json, slurm, hosts), and its exit code.
void check_verdict_options(const ReportOptions& opt);
int report_verdict(const ReportOptions& opt, const RunRecord& run, const std::vector<ReportRow>& rows);

struct BaselineOptions {
  std::vector<std::string> files;
  std::string output;
  bool force = false;
};
CLI::App* add_baseline_command(CLI::App& app, BaselineOptions& opt);
int cmd_baseline(const BaselineOptions& opt);

struct ModelOptions {
  std::vector<std::string> files;
  std::string output;
  bool force = false;          // -o may replace a file
  bool include_noisy = false;  // fit the cases the host made doubtful too (report/host_noise.hpp)
};
CLI::App* add_model_command(CLI::App& app, ModelOptions& opt);
// The result files a model is fitted to (model, predict FILES...), with a note on stderr for each that did not
// complete (the cases that ran are fitted).
std::vector<std::pair<std::string, RunRecord>> read_runs_to_fit(const std::vector<std::string>& files);
int cmd_model(const ModelOptions& opt);

struct PredictOptions {
  std::vector<std::string> inputs;  // a model file, or result files
  int ranks = 0, nodes = 0;         // 0: those of --against
  std::string config;               // "" the cases of the model's files
  std::string format = "table";     // table | json
  std::string against;              // a measured result file ("" none)
  bool breakdown = false;
  bool include_noisy = false;       // result files fitted now: the cases the host made doubtful too
};
CLI::App* add_predict_command(CLI::App& app, PredictOptions& opt);
int cmd_predict(const PredictOptions& opt);

CLI::App* add_info_command(CLI::App& app);
int cmd_info(int* argc, char*** argv);

// "gpuscale: error: MESSAGE" on stderr.
void print_error(const std::string& message);

}  // namespace gpuscale
