// gpuscale: the command line. Parses, hands over to a subcommand, maps errors
// to exit codes (2: bad input, 1: failure).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/commands.hpp"
#include "app/run_metadata.hpp"
#include "core/error.hpp"
#include "core/param_spec.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "report/node_pairs.hpp"
#include "report/stragglers.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

// Messages quote the user's input (keys, names, paths): control characters escaped, nothing raw on the terminal.
void print_error(const std::string& message) {
  std::fprintf(stderr, "gpuscale: error: %s\n", printable(message, "\n").c_str());
}

namespace {

// True unless a launcher started this process as a rank other than 0
// (mpirun, srun): a mistake every rank finds before MPI starts is then
// printed once, not once per rank.
bool first_rank_or_alone() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::string(v) == "0";
  }
  return true;
}

// An error of the command line or the config, the same on every rank: on one line.
void print_input_error(const std::string& message) {
  if (first_rank_or_alone()) print_error(printable(message));
}

}  // namespace

namespace {

std::string workloads_help() {
  std::string s = "Workloads:\n";
  for (const WorkloadType* t : workload_registry()) {
    const WorkloadSchema& w = t->schema();
    s += "  " + w.name + ": " + w.description + "\n    keys:";
    for (const auto& p : w.params) s += " " + p.key;
    s += "\n";
  }
  return s + "Each key's default, choices and largest value: docs/config.md.\n";
}

// --time-budget: seconds from 0 to kMaxDurationS, as budget_s in a config.
CLI::Validator budget_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(v >= 0 && v <= kMaxDurationS)) {
          return "must be a number of seconds from 0 to 2592000 (30 days), got " + text;
        }
        return "";
      },
      "SECONDS");
}

std::string joined_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace
}  // namespace gpuscale

int main(int argc, char** argv) {
  using namespace gpuscale;
  CLI::App app{"gpuscale: how matmul work scales from one device, to all devices of a server, to many servers.\n"
               "One MPI rank per device; rank 0 writes every raw timing to one HDF5 file per run."};
  app.set_version_flag("--version", "gpuscale " + software_version());
  app.require_subcommand(1);
  app.footer("Examples:\n"
             "  mpirun -np 2 gpuscale run configs/default.toml -o results/default.h5\n"
             "  gpuscale report results/default.h5\n"
             "Run 'gpuscale COMMAND --help' for the options of a command.");

  RunOptions run_opt;
  run_opt.command_line = joined_args(argc, argv);
  auto* run = app.add_subcommand("run", "Run the experiments of a config file and write the results (HDF5)");
  run->add_option("config", run_opt.config, "Experiment file (TOML)")->required();
  run->add_option("-o,--output", run_opt.output, "Result file (default: results/<config>-<timestamp>.h5)");
  run->add_option("--set", run_opt.sets,
                  "Override a config key: KEY=VALUE, defaults.KEY=VALUE or EXPERIMENT.KEY=VALUE; "
                  "the value is TOML (e.g. size=[256,512]); repeatable");
  run->add_flag("--force", run_opt.force, "Overwrite the output file if it exists");
  const std::string max_cases_help = "Refuse a plan of more cases than this (default " +
                                     std::to_string(kDefaultMaxCases) + "): more is most often a list typo";
  run->add_option("--max-cases", run_opt.max_cases, max_cases_help);
  const std::string budget_help =
      "Refuse a plan estimated to take longer than this many seconds (before anything runs; 'check' prints the "
      "estimate); overrides budget_s in [defaults]; 0: none, but a plan estimated over 24 h is refused all the same "
      "(most often a typo); at most 2592000 (30 days)";
  run->add_option("--time-budget", run_opt.time_budget_s, budget_help)->check(budget_seconds());
  run->footer("Examples:\n"
              "  mpirun -np 2 gpuscale run configs/default.toml -o results/default.h5\n"
              "  mpirun -np 4 gpuscale run configs/auto-parallelism.toml --set reps=5 --set dtype=fp32\n"
              "  mpirun -np 4 gpuscale run configs/cross-server.toml --set bytes=1048576 --set defaults.comm=mpi\n"
              "Every rank runs the same cases; 'serial' cases let the ranks take turns (transfers: the\n"
              "groups of their scope), 'parallel' ones start all ranks together. A case this job's shape\n"
              "cannot run (scope inter-node on one node) is kept in the file as skipped, with the reason.\n"
              "Exit code: 0 ok, 1 failure (e.g. verification), 2 bad input, 3 a case ran past its timeout.\n\n" +
              workloads_help());

  CheckOptions check_opt;
  auto* check = app.add_subcommand(
      "check", "Validate a config file and print its expanded plan, its memory per rank and estimated time "
               "(runs nothing but a short measurement of this machine's rates)");
  check->add_option("config", check_opt.config, "Experiment file (TOML)")->required();
  check->add_option("--set", check_opt.sets, "Override a config key, as for 'run'");
  check->add_option("--max-cases", check_opt.max_cases, max_cases_help);
  check->add_option("--time-budget", check_opt.time_budget_s, budget_help)->check(budget_seconds());
  check->add_option("--ranks", check_opt.ranks,
                    "Ranks of the job to estimate for (default: the job check runs in, else 2)")
      ->check(CLI::PositiveNumber);
  check->add_option("--nodes", check_opt.nodes, "Nodes of that job (default: the job check runs in, else 1)")
      ->check(CLI::PositiveNumber);
  check->footer("Examples:\n  gpuscale check configs/default.toml --set size=[256,512]\n"
                "  gpuscale check configs/full.toml --ranks 16 --nodes 2 --time-budget 3600\n\n" +
                workloads_help());

  ReportOptions report_opt;
  auto* report = app.add_subcommand("report", "Summarize result files: one row per case, speedup of parallel over serial");
  report->add_option("files", report_opt.files,
                     "Result files (HDF5) written by 'gpuscale run'; with several, the table ends with them side by "
                     "side (each case's median in each file)")->required();
  report->add_option("--format", report_opt.format, "table | csv | json (every column, numbers as numbers)");
  report->add_flag("--wide", report_opt.wide, "table: every column in one wide table (default: fits 80 columns)");
  report->add_option("--baseline", report_opt.baseline,
                     "a result file of the same cases (e.g. before a driver update): each case's median over the "
                     "baseline's, with a 95% interval and a verdict: faster, slower or within noise");
  report->add_flag("--check", report_opt.check,
                   "check the limits the config set in [experiment.expect]: one line per failed limit (case, "
                   "limit, measured) and exit 1 when any fails, 0 when all hold");
  report_opt.pair_threshold = kNodePairThreshold;
  report->add_option("--pair-threshold", report_opt.pair_threshold,
                     "node-pairs cases: a pair below this share of the best pair's bandwidth is slow (default 0.93, "
                     "as ClusterKit)");
  report_opt.straggler_threshold = kStragglerThreshold;
  report->add_option("--straggler-threshold", report_opt.straggler_threshold,
                     "a rank (or node) whose median sample is more than this share above the median of the others "
                     "is named as a straggler (default 0.2: 20%)");
  report->footer("Examples:\n  gpuscale report results/default.h5\n  gpuscale report results/default.h5 --format json\n"
                 "  gpuscale report results/node-pairs.h5 --pair-threshold 0.9\n"
                 "  gpuscale report results/one-node.h5 results/two-nodes.h5   # and side by side\n"
                 "  gpuscale report results/after.h5 --baseline results/before.h5\n"
                 "  gpuscale report results/acceptance.h5 --check && echo accepted\n"
                 "Needs neither MPI nor mpirun.");

  auto* info = app.add_subcommand("info", "Show where every rank runs and which device it uses, and why");
  info->footer("Example:\n  mpirun -np 4 gpuscale info");

  // CLI11 would only say "A subcommand is required" for a misspelt command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::vector<std::string> commands{"run", "check", "report", "info"};
    if (std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
      print_input_error("unknown command '" + std::string(argv[1]) + "'" + did_you_mean(argv[1], commands) +
                  "; commands: " + join(commands, ", "));
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_input_error(std::string(e.what()) + "; see 'gpuscale --help'");
    return kExitUsage;
  }

  try {
    if (*run) return cmd_run(run_opt, &argc, &argv);
    if (*check) return cmd_check(check_opt);
    if (*report) return cmd_report(report_opt);
    if (*info) return cmd_info(&argc, &argv);
  } catch (const InputError& e) {  // found before MPI started (later ones say which rank)
    print_input_error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFailure;
  }
  return kExitUsage;
}
