// gpuscale: the command line. Parses, hands over to a subcommand, maps errors
// to exit codes (2: bad input, 1: failure).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "app/launcher.hpp"
#include "app/run_metadata.hpp"
#include "app/termination_signals.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

namespace {

// True unless a launcher started this process as a rank other than 0
// (mpirun, srun): a mistake every rank finds before MPI starts is then
// printed once, not once per rank.
bool first_rank_or_alone() { return rank_from_launcher() <= 0; }

// An error of the command line or the config, the same on every rank: on one line (a config's mistakes, which
// core/config lists a line each, each on its own line).
void print_input_error(const std::string& message) {
  if (!first_rank_or_alone()) return;
  std::size_t from = 0;
  for (std::size_t to = message.find('\n'); to != std::string::npos; from = to + 1, to = message.find('\n', from)) {
    print_error(printable(message.substr(from, to - from)));
  }
  print_error(printable(message.substr(from)));
}

// Every write to standard output is checked once, at the end: a failed or short write (a full disk, a closed
// descriptor) turns the exit code into 1 and says so in one line. Standard output is fully buffered into a file or
// pipe, so the last flush fails too when an earlier write did.
// The reason is errno as the failed write left it, when it is one a write gives (a later call may have set it to
// something else: then no reason is guessed).
int checked_stdout(int rc) {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
  const int e = errno;
  const bool of_a_write = e == ENOSPC || e == EDQUOT || e == EFBIG || e == EIO || e == EPIPE || e == EBADF;
  const std::string why = of_a_write ? ": " + std::string(std::strerror(e)) : "";
  print_error("writing to standard output failed" + why);
  return rc == kExitOk ? kExitFailure : rc;
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
  // Before any thread starts (CUDA's, MPI's): SIGTERM and the like go to one thread of ours, which removes what
  // was half written before the process ends.
  block_termination_signals();
  start_termination_thread();
  CLI::App app{"gpuscale: how matmul work scales from one device, to all devices of a server, to many servers.\n"
               "One MPI rank per device; rank 0 writes every raw timing to one HDF5 file per run."};
  app.set_version_flag("--version", std::function<std::string()>(version_text));
  app.require_subcommand(1);
  app.footer("Examples:\n"
             "  mpirun -np 2 gpuscale run configs/default.toml -o results/default.h5\n"
             "  gpuscale report results/default.h5\n"
             "Run 'gpuscale COMMAND --help' for the options of a command.");

  RunOptions run_opt;
  run_opt.command_line = joined_args(argc, argv);
  CheckOptions check_opt;
  ReportOptions report_opt;
  CLI::App* run = add_run_command(app, run_opt);
  CLI::App* check = add_check_command(app, check_opt);
  CLI::App* report = add_report_command(app, report_opt);
  ModelOptions model_opt;
  PredictOptions predict_opt;
  CLI::App* model = add_model_command(app, model_opt);
  CLI::App* predict = add_predict_command(app, predict_opt);
  BaselineOptions baseline_opt;
  CLI::App* baseline = add_baseline_command(app, baseline_opt);
  CLI::App* info = add_info_command(app);

  // CLI11 would only say "A subcommand is required" for a misspelt command, or an option before the command.
  std::vector<std::string> commands;
  for (const CLI::App* c : {run, check, report, model, predict, baseline, info}) commands.push_back(c->get_name());
  const std::string first = argc > 1 ? argv[1] : "";
  const bool top_level_flag = first == "-h" || first == "--help" || first == "--version";
  if (argc > 1 && std::find(commands.begin(), commands.end(), first) == commands.end() && !top_level_flag) {
    print_input_error((first[0] == '-' ? "unknown option '" + first + "'; gpuscale takes a command first"
                                       : "unknown command '" + first + "'" + did_you_mean(first, commands)) +
                      "; commands: " + join(commands, ", ") + "; see 'gpuscale --help'");
    return kExitUsage;
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
    // A mistake after the command is that command's, and its --help says what each option takes.
    const CLI::App* command = &app;
    for (const CLI::App* c : {run, check, report, model, predict, baseline, info}) {
      command = c->get_name() == first ? c : command;
    }
    print_input_error(parse_error_text(*command, e, command == &app ? "gpuscale" : "gpuscale " + first));
    return kExitUsage;
  }

  try {
    if (*run) return checked_stdout(cmd_run(run_opt, &argc, &argv));
    if (*check) return checked_stdout(cmd_check(check_opt));
    if (*report) return checked_stdout(cmd_report(report_opt));
    if (*model) return checked_stdout(cmd_model(model_opt));
    if (*predict) return checked_stdout(cmd_predict(predict_opt));
    if (*baseline) return checked_stdout(cmd_baseline(baseline_opt));
    if (*info) return checked_stdout(cmd_info(&argc, &argv));
  } catch (const InputError& e) {  // found before MPI started (later ones say which rank)
    print_input_error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFailure;
  }
  return kExitUsage;
}
