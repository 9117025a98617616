// gpuscale predict: a model's prediction of every case on a job of another shape, and with --against how far it
// was from a measured run.
#include <algorithm>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/backend.hpp"
#include "io/result_reader.hpp"
#include "model/fit.hpp"
#include "model/model_file.hpp"
#include "model/predict_report.hpp"
#include "report/host_noise.hpp"
#include "workloads/estimate.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// A model file, or result files to fit one from now.
Model model_from(const std::vector<std::string>& inputs, bool include_noisy, std::string* from) {
  for (const auto& f : inputs) check_input_file(f, "model file or result file");  // before a FIFO is opened
  if (inputs.size() == 1 && looks_like_json(inputs[0])) {
    if (include_noisy) {
      throw InputError("--include-noisy applies where predict fits result files, and " + inputs[0] + " is a model "
                       "file, fitted already: fit it again with 'gpuscale model --include-noisy RESULT_FILES... -o " +
                       inputs[0] + " --force'");
    }
    *from = inputs[0];
    return read_model_file(inputs[0]);
  }
  for (const auto& f : inputs) {
    if (!looks_like_json(f)) continue;
    read_model_file(f);  // says what the file is where it is no model: empty, not JSON, a report
    throw InputError(f + ": a model file among result files; give either one model file or result files to fit");
  }
  *from = join(inputs, " ") + " (fitted now)";
  return fit_model(read_runs_to_fit(inputs), {include_noisy});
}

// "6 gemm cases", "6 gemm and 4 collective cases": the cases by workload, in order of first appearance.
std::string cases_text(const std::vector<ModelCase>& cases) {
  std::vector<std::pair<std::string, int>> by;
  for (const auto& c : cases) {
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& b) { return b.first == c.workload; });
    if (it == by.end()) it = by.insert(by.end(), {c.workload, 0});
    ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [workload, n] : by) parts.push_back(std::to_string(n) + " " + workload);
  const std::string last = parts.empty() ? "0" : parts.back();
  if (!parts.empty()) parts.pop_back();
  return (parts.empty() ? last : join(parts, ", ") + " and " + last) + (cases.size() == 1 ? " case" : " cases");
}

// InputError where the measured file holds none of the cases predicted: nothing to compare.
void check_shared(const PredictOptions& opt, const RunRecord& run, const std::vector<ModelCase>& cases) {
  const std::string& config = run.config_file;
  const std::string of = config.empty() ? "" : " of " + config.substr(config.find_last_of('/') + 1);
  throw InputError(opt.against + " holds " + std::to_string(run.cases.size()) +
                   (run.cases.size() == 1 ? " case" : " cases") + of + ", none of " +
                   (opt.config.empty() ? "the model's " + cases_text(cases)
                                       : "the " + cases_text(cases) + " of " + opt.config) +
                   "; --against takes a run of the same cases on the job predicted");
}

std::vector<ModelCase> config_cases(const std::string& path) {
  const Config cfg =
      load_config(path, {}, workload_schemas(), environment_defaults(std::getenv("SLURM_CPUS_PER_TASK")));
  auto plan = expand(cfg);
  drop_single_turn_serials(plan);
  std::vector<ModelCase> cases;
  for (const auto& c : plan) cases.push_back({c.experiment, c.workload, c.mode, c.params});
  return cases;
}

// The job: as asked, else the measured run's; --nodes defaults to 1.
JobShape target_shape(const PredictOptions& opt, const RunRecord* against) {
  JobShape job;
  job.ranks = opt.ranks > 0 ? opt.ranks : static_cast<int>(against->ranks.size());
  job.nodes = opt.nodes > 0 ? opt.nodes : opt.ranks > 0 || !against ? 1 : against->nodes;
  if (against && (job.ranks != static_cast<int>(against->ranks.size()) || job.nodes != against->nodes)) {
    throw InputError("--against " + opt.against + " ran " + std::to_string(against->ranks.size()) + " rank(s) on " +
                     std::to_string(against->nodes) + " node(s), not the " + job_text(job) + " asked for; leave "
                     "out --ranks and --nodes to predict its job");
  }
  return job;
}

std::vector<ReportRow> measured_rows(const std::string& path, const RunRecord& run) {
  std::vector<ReportRow> rows = build_report(run);
  for (auto& r : rows) r.file = path;
  return rows;
}

// The options' mistakes that need no file read, before any is.
void check_job_options(const PredictOptions& opt) {
  if (opt.ranks == 0 && opt.against.empty()) {
    throw InputError("--ranks is missing: the job to predict for (or --against FILE, whose job it takes); see "
                     "'gpuscale predict --help'");
  }
  if (opt.ranks > 0 && opt.nodes > opt.ranks) {
    throw InputError("--nodes " + std::to_string(opt.nodes) + " is more than the job's " + std::to_string(opt.ranks) +
                     " rank(s): every node runs at least one rank");
  }
}

}  // namespace

CLI::App* add_predict_command(CLI::App& app, PredictOptions& opt) {
  auto* cmd = app.add_subcommand("predict", "Predict every case on a job of another shape from a model (or result "
                                            "files, fitted now): median, op time and busbw, speedup, where the time "
                                            "goes; --against a measured run says how far off it was");
  cmd->add_option("inputs", opt.inputs, "A model file (gpuscale model -o) or result files to fit")->required();
  cmd->add_option("--ranks", opt.ranks, "Ranks of the job to predict (default: those of --against)")
      ->check(whole_number_validator("ranks"));
  cmd->add_option("--nodes", opt.nodes, "Nodes of that job (default: those of --against, else 1)")
      ->check(whole_number_validator("nodes"));
  cmd->add_option("--config", opt.config, "Predict this config's cases (default: the cases of the model's files)");
  cmd->add_option("--format", opt.format, "table | json")->check(choice_validator({"table", "json"}));
  cmd->add_option("--against", opt.against, "A result file of the same cases on the job predicted: measured "
                                            "beside predicted, with the error");
  cmd->add_flag("--breakdown", opt.breakdown, "table: where each case's predicted time goes (JSON always has it)");
  cmd->add_flag("--include-noisy", opt.include_noisy, "Result files fitted now: fit the cases whose numbers the host "
                                                    "makes doubtful too (without it they are left out and named)");
  cmd->footer("Examples:\n  gpuscale predict model.json --ranks 64 --nodes 16\n"
              "  gpuscale predict model.json --config configs/quick.toml --ranks 8 --nodes 2 --format json\n"
              "  gpuscale predict model.json --against results/4nodes.h5");
  return cmd;
}

// What makes the measured run's numbers doubtful, said before the errors: "" where no case of it was noisy.
std::string target_noise(const std::string& path, const RunRecord& run) {
  std::size_t ran = 0, noisy = 0;
  std::string why;
  for (const auto& c : run.cases) {
    if (c.status == CaseStatus::skipped) continue;
    ++ran;
    const HostNoise n = host_noise(run, c);
    if (!n.doubtful()) continue;
    ++noisy;
    if (why.empty()) why = n.why();
  }
  if (noisy == 0) return "";
  return "target " + path + ": " + (noisy == ran ? "every case" : std::to_string(noisy) + " of " +
                                                                     std::to_string(ran) + " cases") +
         " measured noisy (" + why + (noisy > 1 ? ", and the like" : "") + "): the errors below are not the model's alone";
}

int cmd_predict(const PredictOptions& opt) {
  check_job_options(opt);
  PredictHeader h;
  const Model m = model_from(opt.inputs, opt.include_noisy, &h.model_from);
  h.noisy = m.noisy;
  h.noisy_fitted = m.noisy_fitted;
  std::optional<RunRecord> against;
  if (!opt.against.empty()) {
    check_input_file(opt.against, "result file");
    refuse_json_for_results(opt.against, "--against takes a result file (HDF5) that 'gpuscale run' wrote");
    against = read_result_file(opt.against);
  }
  h.job = predict_job(m, 1, 1);
  if (against) {  // the algorithms its MPI picked
    h.job.mpi_library = against->mpi_library;
    h.job.mpi_settings = against->mpi_settings;
  }
  h.job.shape = target_shape(opt, against ? &*against : nullptr);
  h.job.shape.cores_per_node = std::max(1, m.node_cores);
  h.against = opt.against;
  if (against) h.target_noise = target_noise(opt.against, *against);
  const std::vector<ModelCase> cases = opt.config.empty() ? m.cases : config_cases(opt.config);
  auto rows = predict_rows(m, cases, h.job);
  if (against && add_measured(rows, measured_rows(opt.against, *against)) == 0) check_shared(opt, *against, cases);
  // Names come from files (the model's, a result file's): a table prints them with control characters escaped, as
  // report does; JSON escapes them itself.
  std::cout << (opt.format == "json" ? render_predict_json(h, rows)
                                     : printable(render_predict_table(h, rows, opt.breakdown), "\n"))
            << std::flush;
  return kExitOk;
}

}  // namespace gpuscale
