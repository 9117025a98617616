// gpuscale model: fit a cost model to result files; gpuscale predict: what a
// job of another shape will give, and how far that was from a measured run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "app/output_path.hpp"
#include "app/run_metadata.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"
#include "io/result_reader.hpp"
#include "model/fit.hpp"
#include "model/model_file.hpp"
#include "model/predict_report.hpp"
#include "report/analysis.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

std::vector<std::pair<std::string, RunRecord>> read_runs_to_fit(const std::vector<std::string>& files) {
  std::vector<std::pair<std::string, RunRecord>> runs;
  for (const auto& f : files) {
    check_input_file(f, "result file");  // before it is opened: a FIFO would wait for a writer
    refuse_json_for_results(f, "a model is fitted to the result files (HDF5) that 'gpuscale run' writes");
    runs.emplace_back(f, read_result_file(f));
    const RunRecord& run = runs.back().second;
    if (!run.complete) {
      std::fprintf(stderr, "%s", wrap("note: " + f + " is incomplete (status: " + run.status + "); its cases that "
                                      "ran are fitted").c_str());
    }
  }
  return runs;
}

namespace {

// One item of a list, its lines indented under it.
std::string item(const std::string& text) { return "  " + wrap(text, 78, "    "); }

// A fit's error under its line: how far its cases lie from it, and why it is poor where it is.
std::string error_lines(const FitError& e) {
  std::string line = fit_error_text(e);
  if (e.freedom() < 1) {
    line += "; " + std::to_string(e.terms) + " term(s) from " + std::to_string(e.cases) + " case(s): nothing left "
            "over to judge the fit by, so predictions from it get no interval";
  }
  std::string out = "    " + wrap(line, 76, "      ");
  if (!e.poor.empty()) out += "    " + wrap("poor fit: " + e.poor, 76, "      ");
  return out;
}

std::string rate_text(double bytes_s) { return format_sig3(bytes_s / 1e9) + " GB/s"; }

std::string transfer_text(const TransferFit& t) {
  std::vector<std::string> terms;
  const char* where[] = {"inside a node", "between nodes", "inside a node", "between nodes"};
  for (int j = 0; j < kTransferTerms; ++j) {
    if (!t.fitted[j]) continue;
    terms.push_back(j < kSecPerByteIntra ? "latency " + format_seconds(t.coef[j]) + " per step " + where[j]
                                         : "busbw " + rate_text(t.coef[j] > 0 ? 1 / t.coef[j] : 0) + " " + where[j]);
  }
  return fit_name(t) + ": " + join(terms, ", ");
}

// What the model holds, in a few lines.
std::string model_summary(const std::string& path, const Model& m) {
  std::string out = path + ": fitted from " + std::to_string(m.sources.size()) + " file(s)\n";
  for (const auto& g : m.gemm) {
    double lo = INFINITY, hi = 0;
    for (const auto& p : g.points) lo = std::min(lo, p.core_flops_s), hi = std::max(hi, p.core_flops_s);
    out += item(fit_name(g) + ": " + std::to_string(g.points.size()) + " size(s), " + format_sig3(lo / 1e9) + "-" +
                format_sig3(hi / 1e9) + " GFLOP/s per core") + error_lines(g.error);
  }
  for (const auto& c : m.copies) {
    // One size measured: latency and bandwidth cannot be told apart, the fit keeps the bandwidth (latency 0).
    const std::string latency =
        c.latency_s > 0 ? format_seconds(c.latency_s) + " per call, " : std::string("no latency fitted, ");
    out += item(fit_name(c) + ": " + latency + rate_text(c.bytes_s)) + error_lines(c.error);
  }
  for (const auto& t : m.transfers) {
    const bool known = std::any_of(t.points.begin(), t.points.end(), [](const auto& p) { return !p.algorithm.empty(); });
    out += item(transfer_text(t)) + (known ? "    " + wrap("as the MPI ran it: " + algorithms_measured(t), 76, "      ")
                                           : std::string()) + error_lines(t.error);
  }
  for (const auto& n : m.notes) out += wrap("note: " + n);
  return out;
}

}  // namespace

CLI::App* add_model_command(CLI::App& app, ModelOptions& opt) {
  auto* cmd = app.add_subcommand("model", "Fit a cost model to result files: GEMM rates by size, copies, and "
                                          "transfers' latency and bandwidth inside and between nodes (docs/model.md)");
  cmd->add_option("files", opt.files, "Result files (HDF5) to fit")->required();
  cmd->add_option("-o,--output", opt.output, "The model file to write (JSON)")->required();
  cmd->add_flag("--force", opt.force, "Overwrite the -o file if it exists");
  cmd->add_flag("--include-noisy", opt.include_noisy, "Fit the cases whose numbers the host makes doubtful too (busy, "
                                                    "descheduled, oversubscribed: report's host flags); without it "
                                                    "they are left out and named");
  cmd->footer("Example:\n  gpuscale model results/quick-1node.h5 results/quick-2nodes.h5 -o model.json\n"
              "  gpuscale predict model.json --ranks 64 --nodes 16");
  return cmd;
}

int cmd_model(const ModelOptions& opt) {
  FileBeside file(check_output(opt.output, opt.force, opt.files));  // before the reading: a mistake costs no time
  Model m = fit_model(read_runs_to_fit(opt.files), {opt.include_noisy});
  m.software_version = software_version();
  file.stream() << model_json(m);
  file.commit();
  std::cout << printable(model_summary(file.where(), m), "\n") << std::flush;  // names from files, escaped
  return kExitOk;
}

}  // namespace gpuscale
