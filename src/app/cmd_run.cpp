// gpuscale run: validate everything that can be validated before MPI starts
// (bad input exits 2 and writes nothing), then run the plan case by case,
// writing each finished case to the result file on rank 0.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "app/commands.hpp"
#include "app/mpi_session.hpp"
#include "app/rank_table.hpp"
#include "app/run_metadata.hpp"
#include "app/run_file.hpp"
#include "report/expectations.hpp"
#include "app/termination_signals.hpp"
#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
#include "comm/groups.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/backend.hpp"
#include "io/result_writer.hpp"
#include "report/report.hpp"
#include "runner/runner.hpp"
#include "runner/watchdog.hpp"
#include "workloads/calibrate.hpp"
#include "workloads/estimate.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

namespace fs = std::filesystem;

namespace gpuscale {

namespace {

void check_output_path(const std::string& out, bool force) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (fs::is_directory(out, ec)) throw InputError(out + ": is a directory; give a file name with -o");
    if (!force) throw InputError(out + ": the file exists; use --force to overwrite it, or choose another -o");
  }
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw InputError(out + ": directory '" + parent.string() + "' does not exist");
  }
}

// results/<config stem>[-job<SLURM_JOB_ID>]-<timestamp>[-N].h5, not an existing file.
std::string default_output(const std::string& config) {
  const std::string stem = fs::path(config).stem().string();
  fs::create_directories("results");
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string base = "results/" + stem + (job && *job ? std::string("-job") + job : "") + "-" + compact_timestamp_now();
  std::string path = base + ".h5";
  for (int i = 2; fs::exists(path); ++i) path = base + "-" + std::to_string(i) + ".h5";
  return path;
}

// Creates the file without overwriting one that appeared since the name was
// checked (another run writing the same name at the same second): a default
// name moves on to the next free one, a name given with -o is an error.
std::unique_ptr<ResultWriter> create_writer(std::string& path, bool named, bool force, const RunRecord& run,
                                           const std::string& config) {
  for (int attempt = 2;; ++attempt) {
    try {
      return std::make_unique<ResultWriter>(path, force, run);
    } catch (const std::exception&) {
      std::error_code ec;
      if (force || !fs::exists(path, ec) || attempt > 100) throw;
      if (named) throw InputError(path + ": the file was created by someone else since it was checked; choose another -o");
      path = default_output(config);  // the name now taken is skipped
    }
  }
}

// The report's row of a finished case.
ReportRow case_row(const CaseRecord& rec, const std::vector<RankRecord>& ranks) {
  RunRecord run;
  run.ranks = ranks;  // each GPU's maximum clock and each rank's clock offset, for the flags
  return report_row(run, rec);
}

// The progress line of a finished case.
std::string summary_line(const CaseRecord& rec, const ReportRow& r) {
  if (rec.status == "skipped") return "skipped: " + rec.status_reason;
  std::string s = "median " + format_seconds(r.median_s) +
                  (rec.mode == "serial" && r.turns > 1 ? " (sum over " + std::to_string(r.turns) + " turns)" : "");
  char buf[96] = "";
  if (r.gflops) std::snprintf(buf, sizeof buf, ", %.2f GFLOP/s per rank", *r.gflops);
  if (r.gbps) std::snprintf(buf, sizeof buf, ", %.2f GB/s per rank", *r.gbps);
  if (r.algbw_gbps) std::snprintf(buf, sizeof buf, ", algbw %.2f GB/s, busbw %.2f GB/s", *r.algbw_gbps, *r.busbw_gbps);
  s += buf;
  for (const auto& f : r.flags) s += "; " + f;  // ran cold, throttled, clocks low
  if (rec.status == "ok") return s + ", verified";
  if (!rec.scope.empty()) return s + ", VERIFICATION FAILED (" + std::to_string(r.wrong_elements) + " wrong elements)";
  return s + ", VERIFICATION FAILED (max error " + std::to_string(r.max_verify_error) + ")";
}

struct Prepared {
  Config cfg;
  std::vector<Case> plan;
  CudaStatus cuda;
  BackendChoice backend;
  CommChoice comm;
  std::vector<std::string> plan_notes;
};

// Everything that needs no MPI: a mistake here exits 2 before any rank starts work.
Prepared prepare(const RunOptions& opt) {
  Prepared p;
  const char* cpus = std::getenv("SLURM_CPUS_PER_TASK");
  const Defaults base = environment_defaults(cpus);
  p.cfg = load_config(opt.config, opt.sets, workload_schemas(), base);
  check_plan_size(p.cfg, opt.max_cases);
  p.plan = expand(p.cfg);
  if (!opt.output.empty()) check_output_path(opt.output, opt.force);
  p.cuda = probe_cuda();
  p.backend = choose_backend(p.cfg.defaults.backend, p.cuda);
  p.comm = choose_comm(p.cfg.defaults.comm, p.backend.backend, nccl_built());
  p.plan_notes = drop_single_turn_serials(p.plan);
  if (base.threads != Defaults{}.threads && p.cfg.defaults.threads == base.threads) {
    p.plan_notes.push_back("threads = " + std::to_string(base.threads) +
                           " per rank from SLURM_CPUS_PER_TASK, where the config sets none");
  }
  check_plan_runs_on(p.plan, {p.backend.backend, p.comm.comm});
  check_plan_memory(p.plan, memory_limits_here(p.backend.backend, p.cuda, ranks_per_node_from_env()));
  return p;
}

// Rank 0's verdict on every rank: true (and the message, printed once) when
// rank 0 found a reason to stop.
bool stop_all(const MpiCommunicator& comm, const std::string& root_message) {
  const std::string m = comm.broadcast(root_message);
  if (!m.empty() && comm.rank() == 0) print_error(m);
  return !m.empty();
}

// `file`: rank 0's result file, once it exists, for the caller to end with a failure's cause.
int run_plan(const RunOptions& opt, const Prepared& p, const MpiCommunicator& comm, std::shared_ptr<RunFile>& file) {
  const bool root = comm.rank() == 0;
  // Ranks other than 0 fire a little later, so that rank 0 records a timeout in the file first.
  Watchdog watchdog("rank " + std::to_string(comm.rank()) + " on " + comm.hostname(), root ? 0.0 : 5.0);
  watchdog.arm("the start of the run (common clock, rank table)", kRunEdgeTimeoutS);
  // All ranks must run the same backend.
  const auto backends = comm.gather(p.backend.backend);
  std::string disagree;
  for (std::size_t r = 1; r < backends.size(); ++r) {
    if (backends[r] != backends[0]) {
      disagree = "ranks disagree on the backend: rank 0 uses " + backends[0] + ", rank " + std::to_string(r) +
                 " uses " + backends[r];
    }
  }
  if (stop_all(comm, disagree)) return kExitUsage;

  const auto device = make_device(p.backend, comm.local_rank());
  // NVML, loaded at run time: a machine without a driver runs without telemetry and the file says why.
  const GpuTelemetry telemetry = open_device_telemetry(device->info());
  CommonClock clock(comm);
  std::vector<LinkRecord> links;
  auto table = gather_rank_table(comm, device->info(), clock.offset(), rank_gpu(device->info(), telemetry), &links);
  if (stop_all(comm, root && !p.cfg.defaults.share_devices ? shared_device_error(table) : "")) return kExitUsage;
  // NCCL refuses ranks that share a GPU (share_devices = true): auto falls back to MPI, "nccl" is an error.
  CommChoice comm_choice = p.comm;
  std::string comm_error;
  if (root) {
    try {
      comm_choice = comm_for_shared_devices(p.comm, p.cfg.defaults.comm, shared_device_ranks(table));
    } catch (const InputError& e) {
      comm_error = e.what();
    }
  }
  if (stop_all(comm, comm_error)) return kExitUsage;
  comm_choice.comm = comm.broadcast(comm_choice.comm);
  comm_choice.reason = comm.broadcast(comm_choice.reason);
  // Rank 0 measures its device's rates and estimates the plan on this job; a
  // plan over the time budget stops here, before the file exists.
  PlanEstimate estimate;
  std::string over_budget;
  if (root) {  // the rank table is rank 0's
    const JobShape job{comm.size(), comm.node_count(), std::max(1, table[0].node_cores)};
    const Rates rates = calibrate(*device, p.plan, default_rates(p.backend.backend, comm_choice.comm));
    estimate = estimate_plan(p.plan, job, rates);
    const double budget_s = opt.time_budget_s >= 0 ? opt.time_budget_s : p.cfg.defaults.budget_s;
    try {
      check_time_budget(p.plan, estimate, job, budget_s, opt.time_budget_s >= 0 ? "--time-budget" : "budget_s");
    } catch (const InputError& e) {
      over_budget = e.what();
    }
  }
  comm.idle_barrier();  // the other ranks wait without spinning on the cores rank 0 measures
  if (stop_all(comm, over_budget)) return kExitUsage;
  std::string output = comm.broadcast(root ? (opt.output.empty() ? default_output(opt.config) : opt.output)
                                           : std::string());

  if (root) {
    std::printf("gpuscale %s: %zu case(s) from %s on %d rank(s), %d node(s)\n", software_version().c_str(),
                p.plan.size(), opt.config.c_str(), comm.size(), comm.node_count());
    std::printf("backend %s: %s\n", p.backend.backend.c_str(), p.backend.reason.c_str());
    std::printf("comm %s: %s\n", comm_choice.comm.c_str(), comm_choice.reason.c_str());
    for (const auto& n : p.plan_notes) std::printf("note: %s\n", n.c_str());
    std::printf("estimated time: about %s (rates %s)\n", format_duration(estimate.total_s()).c_str(),
                estimate.rates_source.c_str());
    std::printf("%s%s", format_rank_table(table, {}).c_str(), format_gpu_facts(table, links).c_str());
    const auto warnings = oversubscription_warnings(table);
    for (const auto& w : warnings) std::printf("WARNING: %s\n", w.c_str());
    RunRecord run;
    run.software_version = software_version();
    run.date = iso8601_now();
    run.software_dependencies = software_dependencies(p.cuda);
    run.command_line = opt.command_line;
    run.config_file = opt.config;
    run.config_text = p.cfg.text;
    run.config_overrides = join(opt.sets, "\n");
    run.backend = p.backend.backend;
    run.backend_reason = p.backend.reason;
    run.comm = comm_choice.comm;
    run.comm_reason = comm_choice.reason;
    if (const char* j = std::getenv("SLURM_JOB_ID")) run.slurm_job_id = j;
    run.environment = relevant_environment();
    run.ranks = table;
    run.links = links;
    run.warnings = warnings;
    run.nodes = comm.node_count();
    run.cases_planned = p.plan.size();
    file = std::make_shared<RunFile>(create_writer(output, !opt.output.empty(), opt.force, run, opt.config));
    std::printf("writing %s\n", output.c_str());
    std::fflush(stdout);
    set_termination_hook([file](int sig) {
      file->end_early(std::string("aborted: ") + signal_name(sig) + " " + during(file->current()));
    });
    watchdog.on_timeout([file](const std::string& what, double seconds) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", seconds);
      file->end_early("timed out: " + what + " ran past its timeout of " + buf + " s");
    });
  }
  watchdog.disarm();

  // Each scope's group is made on first use and kept for the run.
  Groups groups(comm, *device, data_comm_factory(comm_choice.comm));
  watchdog.on_timeout([&groups](const std::string&, double) { groups.abort_all(); });
  Runner runner(comm, *device, &groups, clock, p.backend.backend, static_cast<std::uint64_t>(p.cfg.defaults.seed));
  runner.set_telemetry(telemetry.source.get(), kTelemetryIntervalS);
  runner.set_watchdog(&watchdog, CaseTimeout{p.cfg.defaults.timeout_s});
  int failed = 0;
  std::vector<ReportRow> rows;  // rank 0: for the limits of [experiment.expect]
  const auto started = std::chrono::steady_clock::now();
  double estimated_done = 0, estimated_left = estimate.total_s() - estimate.start_s;
  for (const auto& c : p.plan) {
    if (root) {
      file->set_current("case " + std::to_string(c.index) + " (" + c.label() + ")");
      std::printf("[%zu/%zu] %s ...", c.index + 1, p.plan.size(), c.label().c_str());
      std::fflush(stdout);
    }
    CaseRecord rec = runner.run(c);
    if (rec.status == "verify-failed") ++failed;
    if (root) {
      file->write_case(rec);
      rows.push_back(case_row(rec, table));
      // Elapsed, and the estimate of the cases left scaled by how the
      // estimate of the cases so far compares with their time.
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      estimated_done += estimate.case_s[c.index];
      estimated_left -= estimate.case_s[c.index];
      std::string pace = " (" + format_duration(elapsed) + " elapsed";
      if (c.index + 1 < p.plan.size()) {
        pace += ", about " + format_duration(estimated_left * elapsed / std::max(1e-9, estimated_done)) + " left";
      }
      std::printf(" %s%s)\n", summary_line(rec, rows.back()).c_str(), pace.c_str());
      for (const auto& f : rows.back().flags) {  // in the file too: a reader of it should not miss that
        if (f.rfind("clock:", 0) == 0) file->add_warning("case " + std::to_string(rec.index) + ": " + f);
      }
      std::fflush(stdout);
    }
  }
  if (root) file->set_current("");
  watchdog.arm("the end of the run (common clock)", kRunEdgeTimeoutS);
  gather_end_offsets(comm, estimate_clock_offset(comm), table);
  watchdog.disarm();
  if (root) {
    file->finish(failed ? "complete; " + std::to_string(failed) + " case(s) failed verification" : "complete", table);
    set_termination_hook({});
    std::printf("done: %s (gpuscale report %s)\n", output.c_str(), output.c_str());
    relate_rows(rows);
    if (const auto checks = check_expectations(rows); !checks.empty()) {
      std::printf("%s", render_checks(output, checks).c_str());
      std::printf("(gpuscale report --check %s exits 1 when a limit fails)\n", output.c_str());
    }
  }
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

int cmd_run(const RunOptions& opt, int* argc, char*** argv) {
  // Before any thread starts (CUDA's, MPI's): SIGTERM and the like go to one thread of ours.
  block_termination_signals();
  start_termination_thread();
  const Prepared p = prepare(opt);  // InputError -> exit 2, before MPI starts
  MpiSession mpi(argc, argv);
  MpiCommunicator comm(MPI_COMM_WORLD);
  std::shared_ptr<RunFile> file;
  try {
    return run_plan(opt, p, comm, file);
  } catch (const std::exception& e) {
    // One rank failed: say where, and end the whole job so no rank waits forever.
    const std::string m = "rank " + std::to_string(comm.rank()) + " on " + comm.hostname() + ": " + e.what();
    print_error(m);
    std::fflush(stderr);
    if (file) file->end_early("failed: " + m);  // a no-op once the run finished
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
    return kExitFailure;
  }
}

}  // namespace gpuscale
