// gpuscale run: validate everything that can be validated before MPI starts
// (bad input exits 2 and writes nothing), then run the plan case by case,
// writing each finished case to the result file on rank 0.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include <hdf5.h>

#include <CLI/CLI.hpp>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "app/end_watch.hpp"
#include "app/host_busy.hpp"
#include "app/launcher.hpp"
#include "app/mpi_session.hpp"
#include "app/output_path.hpp"
#include "app/rank_table.hpp"
#include "app/run_file.hpp"
#include "app/run_metadata.hpp"
#include "app/termination_signals.hpp"
#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
#include "comm/groups.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/backend.hpp"
#include "io/disk_space.hpp"
#include "report/expectations.hpp"
#include "report/report.hpp"
#include "runner/group_setup.hpp"
#include "runner/runner.hpp"
#include "runner/watchdog.hpp"
#include "workloads/calibrate.hpp"
#include "workloads/estimate.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// The report's row of a finished case.
ReportRow case_row(const CaseRecord& rec, const std::vector<RankRecord>& ranks) {
  RunRecord run;
  run.ranks = ranks;  // each GPU's maximum clock and each rank's clock offset, for the flags
  return report_row(run, rec);
}

// The progress line of a finished case.
std::string summary_line(const CaseRecord& rec, const ReportRow& r) {
  if (rec.status == CaseStatus::skipped) return "skipped: " + rec.status_reason;
  std::string s;
  const auto latency = r.figure_value("latency_us"), bandwidth = r.figure_value("bandwidth_mbps");
  if (latency || bandwidth) {  // p2p, in OSU's terms as its table prints them
    s = latency ? "latency " + format_sig3(*latency) + " us" : "bandwidth " + format_sig3(*bandwidth) + " MB/s";
  } else if (r.op_time_s) {  // a transfer's headline, as the table prints it: the time of one operation and its rates
    s = "op time " + format_seconds(*r.op_time_s) + ", algbw " + format_sig3(*r.algbw_gbps) + " GB/s, busbw " +
        format_sig3(*r.busbw_gbps) + " GB/s";
  } else {
    s = "median " + format_seconds(r.median_s) +
        (rec.mode == Mode::serial && r.turns > 1 ? " (sum over " + std::to_string(r.turns) + " turns)" : "");
    if (r.gflops) s += ", " + format_sig3(*r.gflops) + " GFLOP/s per rank";
    if (r.gbps) s += ", " + format_sig3(*r.gbps) + " GB/s per rank";
  }
  if (r.ranks > 1) s += ", slowest rank " + std::to_string(r.slowest_rank) + format_number(" %.2fx", r.slowest_ratio);
  for (const auto& f : r.flags) s += "; " + f;  // ran cold, throttled, clocks low
  if (rec.status == CaseStatus::ok) return s + ", verified";
  if (rec.scope) return s + ", VERIFICATION FAILED (" + std::to_string(r.wrong_elements) + " wrong elements)";
  return s + ", VERIFICATION FAILED (max error " + std::to_string(r.max_verify_error) + ")";
}

// What a run did with its cases, for its last lines: "ran 18 of 24 cases (6 skipped: 6 because scope inter-node
// needs ranks on at least 2 nodes; 0 failed verification)".
class RunTally {
 public:
  void add(const CaseRecord& rec) {
    if (rec.status != CaseStatus::skipped) {
      ++ran_;
      failed_ += rec.status == CaseStatus::verify_failed;
      return;
    }
    // A reason's cause, before its particulars ("p2p needs groups of an even size; group 0 ... has 3 rank(s)").
    const std::string cause = rec.status_reason.substr(0, rec.status_reason.find("; "));
    auto it = std::find_if(skipped_.begin(), skipped_.end(), [&](const auto& s) { return s.first == cause; });
    if (it == skipped_.end()) it = skipped_.insert(skipped_.end(), {cause, 0});
    ++it->second;
  }
  int ran() const { return ran_; }
  int failed() const { return failed_; }
  std::string line(std::size_t planned) const;

 private:
  int ran_ = 0, failed_ = 0;
  std::vector<std::pair<std::string, int>> skipped_;  // by cause, in the order the plan met them
};

// The commonest two causes of skips with their counts, and the count of the rest.
std::string RunTally::line(std::size_t planned) const {
  auto causes = skipped_;
  std::stable_sort(causes.begin(), causes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  int skipped = 0, shown = 0;
  std::vector<std::string> parts;
  for (const auto& [cause, count] : causes) {
    skipped += count;
    if (parts.size() < 2) {
      parts.push_back(std::to_string(count) + " because " + cause);
      shown += count;
    }
  }
  if (skipped > shown) parts.push_back(std::to_string(skipped - shown) + " for other reasons");
  return "ran " + std::to_string(ran_) + " of " + std::to_string(planned) + (planned == 1 ? " case (" : " cases (") +
         std::to_string(skipped) + " skipped" + (parts.empty() ? "" : ": " + join(parts, ", ")) + "; " +
         std::to_string(failed_) + " failed verification)";
}

struct Prepared {
  Config cfg;
  std::vector<Case> plan;
  CudaStatus cuda;
  BackendChoice backend;
  CommChoice comm;
  std::vector<std::string> plan_notes;
  std::optional<OutputTarget> output;  // -o, checked; none: a default name in results/
  bool launched = false;               // a launcher started this process (asked before MPI starts)
};

// Everything that needs no MPI: a mistake here exits 2 before any rank starts work.
Prepared prepare(const RunOptions& opt) {
  Prepared p;
  p.launched = started_by_launcher();
  const char* cpus = std::getenv("SLURM_CPUS_PER_TASK");
  const Defaults base = environment_defaults(cpus);
  p.cfg = load_config(opt.config, opt.sets, workload_schemas(), base);
  check_plan_size(p.cfg, opt.max_cases);
  p.plan = expand(p.cfg);
  if (opt.output.empty()) {
    check_default_output_dir();
  } else {
    p.output = check_output(opt.output, opt.force, {opt.config});
  }
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
  if (const char* load = std::getenv("GPUSCALE_TEST_LOADAVG")) parse_test_loadavg(load);  // the estimate's test hook
  return p;
}

// Rank 0's verdict on every rank: true (and the message, printed once) when
// rank 0 found a reason to stop.
bool stop_all(const MpiCommunicator& comm, const std::string& root_message) {
  const std::string m = comm.broadcast(root_message);
  if (!m.empty() && comm.rank() == 0) print_error(m);
  return !m.empty();
}

// A case's bytes in the file, before it runs: with `datasets` 8, about what device-local work takes; 14, enough
// for any but the few that add phases or telemetry (whose records are checked again before they are written).
std::uint64_t planned_bytes(const Case& c, int ranks, int datasets) {
  const auto reps = static_cast<std::uint64_t>(c.params.get_int("reps"));
  const auto warmup = static_cast<std::uint64_t>(std::min<std::int64_t>(1000, c.params.get_int("warmup")));
  return case_bytes(static_cast<std::uint64_t>(ranks), reps, warmup, datasets);
}

// "" when the file system of `dir` has room for the whole plan's records (at the least), else why not.
std::string plan_room(const std::string& dir, const RunRecord& run, const std::vector<Case>& plan) {
  std::uint64_t need = header_bytes(run) + kEndReserveBytes;
  for (const auto& c : plan) need += planned_bytes(c, static_cast<int>(run.ranks.size()), 8);
  const std::uint64_t left = free_bytes(dir);
  if (left >= need) return "";
  return dir + ": not enough space for the results: the plan's records need about " + format_bytes(need) + ", " +
         format_bytes(left) + " free";
}

// Why the edges of the run are bounded as they are, for the timeout's message.
std::string edge_why(const Prepared& p) {
  return CaseTimeout{p.cfg.defaults.timeout_s}.automatic()
             ? "timeout = auto: " + format_number("%g", kRunEdgeTimeoutS) + " s for each edge of the run"
             : "the config's timeout, at least " + format_number("%g", kRunEdgeFloorS) + " s for each edge of the run";
}

std::string short_hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// From the end of the run on, a stop of this rank that lasts the edge bound is ended by its watcher.
void arm_end_watch(EndWatch& watch, const std::string& who, double edge_s) {
  watch.arm("gpuscale: error: " + printable(who) + " (pid " + std::to_string(getpid()) + "): stopped (SIGSTOP?) for " +
                format_number("%g", edge_s) +
                " s at the end of the run, where its own watchdog cannot act: its watcher sent it SIGKILL; ending the job",
            edge_s);
}

// One run of the plan on this rank: the job's shape and devices, rank 0's
// file, then the cases one after another; each step a member, the state they
// share in one place.
class PlanRun {
 public:
  PlanRun(const RunOptions& opt, const Prepared& p, const MpiCommunicator& comm, std::shared_ptr<RunFile>& file,
          Watchdog& watchdog, EndWatch& end_watch)
      : opt_(opt),
        p_(p),
        comm_(comm),
        root_(comm.rank() == 0),
        file_(file),
        watchdog_(watchdog),
        end_watch_(end_watch) {}

  int run() {
    // The other ranks outlive a termination signal a moment, so that rank 0, signalled at the same time, can tell
    // a rank that died before (it is gone) from one ending with it.
    if (!root_) set_termination_hook([](int) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
    watchdog_.arm("the start of the run (common clock, rank table, the plan's agreement, the file's opening)",
                  CaseTimeout{p_.cfg.defaults.timeout_s}.edge_s(), edge_why(p_));
    if (const int rc = start(); rc != kExitOk) return rc;
    if (stop_all(comm_, open_file())) return kExitFailure;
    return run_cases();  // still armed: until the first case's own bound, the start's holds
  }

 private:
  int start();
  std::string agree_on_comm();
  std::string memory_on_every_node() const;
  RunRecord run_record() const;
  std::string estimate_and_budget();
  std::string open_file();
  void print_start(const RunRecord& run) const;
  void install_endings();
  int run_cases();
  std::string set_up_data_plane(Groups& groups);
  std::string after_case(const Case& c, const CaseRecord& rec, double elapsed_s);
  int finish(const RunTally& tally);

  const RunOptions& opt_;
  const Prepared& p_;
  const MpiCommunicator& comm_;
  const bool root_;
  std::shared_ptr<RunFile>& file_;
  Watchdog& watchdog_;
  EndWatch& end_watch_;
  std::unique_ptr<Device> device_;
  GpuTelemetry telemetry_;
  std::optional<CommonClock> clock_;
  std::vector<RankRecord> table_;  // rank 0's
  std::vector<LinkRecord> links_;
  CommChoice comm_choice_;
  PlanEstimate estimate_;
  std::string host_line_;        // rank 0: "" or what the estimate assumed of a busy host
  std::vector<std::string> estimate_notes_;  // rank 0: rates it assumed (not measured), work it leaves out
  std::vector<ReportRow> rows_;  // rank 0: for the limits of [experiment.expect]
  double estimated_done_ = 0;    // rank 0: the estimate of the cases finished
};

// Devices, rank table and the choices every rank must share; rank 0 checks the time budget and the disk.
int PlanRun::start() {
  const auto backends = comm_.gather(std::string(backend_name(p_.backend.backend)));
  std::string disagree;
  for (std::size_t r = 1; r < backends.size(); ++r) {
    if (backends[r] != backends[0]) {
      disagree = "ranks disagree on the backend: rank 0 uses " + backends[0] + ", rank " + std::to_string(r) +
                 " uses " + backends[r];
    }
  }
  if (stop_all(comm_, disagree)) return kExitUsage;
  if (stop_all(comm_, memory_on_every_node())) return kExitUsage;
  device_ = make_device(p_.backend, comm_.local_rank());
  // NVML, loaded at run time: a machine without a driver runs without telemetry and the file says why.
  telemetry_ = open_device_telemetry(device_->info());
  clock_.emplace(comm_);
  table_ = gather_rank_table(comm_, device_->info(), clock_->offset(), rank_gpu(device_->info(), telemetry_), &links_);
  if (stop_all(comm_, root_ && !p_.cfg.defaults.share_devices ? shared_device_error(table_) : "")) return kExitUsage;
  if (stop_all(comm_, agree_on_comm())) return kExitUsage;
  const std::string over_budget = estimate_and_budget();
  comm_.idle_barrier();  // the other ranks wait without spinning on the cores rank 0 measures
  if (stop_all(comm_, over_budget)) return kExitUsage;
  const std::string dir = p_.output ? directory_of(p_.output->path) : "results";
  if (stop_all(comm_, root_ ? plan_room(dir, run_record(), p_.plan) : "")) return kExitUsage;
  return kExitOk;
}

// The memory check before MPI started counted a node's ranks by the launcher's variables. Where they were missing
// or said otherwise, it is done again with the ranks that share the node's memory (MPI_Comm_split_type): rank 0
// gets "" or the first node's reason to stop.
std::string PlanRun::memory_on_every_node() const {
  std::string mine;
  if (comm_.local_rank() == 0 && comm_.local_size() != ranks_per_node_from_env()) {
    try {
      check_plan_memory(p_.plan, memory_limits_here(p_.backend.backend, p_.cuda, comm_.local_size()));
    } catch (const InputError& e) {
      mine = comm_.hostname() + ": " + e.what();
    }
  }
  const auto all = comm_.gather(mine);
  const auto first = std::find_if(all.begin(), all.end(), [](const std::string& m) { return !m.empty(); });
  return first == all.end() ? "" : *first;
}

// NCCL refuses ranks that share a GPU (share_devices = true): auto falls back to MPI, "nccl" is an error.
std::string PlanRun::agree_on_comm() {
  comm_choice_ = p_.comm;
  std::string error;
  if (root_) {
    try {
      comm_choice_ = comm_for_shared_devices(p_.comm, p_.cfg.defaults.comm, shared_device_ranks(table_));
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  comm_choice_.comm = static_cast<CommKind>(comm_.broadcast(static_cast<int>(comm_choice_.comm)));
  comm_choice_.reason = comm_.broadcast(comm_choice_.reason);
  return error;
}

// Rank 0 measures its device's rates and estimates the plan on this job, with the load of its node as it is now:
// "" or why the plan is over its budget.
std::string PlanRun::estimate_and_budget() {
  if (!root_) return "";
  const JobShape job{comm_.size(), comm_.node_count(), std::max(1, table_[0].node_cores)};
  Rates rates = calibrate(*device_, p_.plan, default_rates(p_.backend.backend, comm_choice_.comm));
  std::vector<std::string> affinities;  // of the ranks of rank 0's node: the CPUs the job may use there
  for (const auto& r : table_) {
    if (r.node_index == table_[0].node_index) affinities.push_back(r.cpu_affinity);
  }
  const int cpus = cpus_in_lists(affinities);
  const HostBusy busy = host_busy(read_host_busy_inputs(cpus > 0 ? cpus : table_[0].node_cores),
                                  busiest_threads(p_.plan, comm_.local_size()));
  rates.host = busy.share;
  host_line_ = busy.line;
  estimate_ = estimate_plan(p_.plan, job, rates);
  if (const std::string assumed = assumed_transfers_text(estimate_, rates); !assumed.empty()) {
    estimate_notes_.push_back("estimate: " + assumed);
  }
  for (const auto& n : left_out_notes(p_.plan, estimate_, job, rates, !host_line_.empty())) {
    estimate_notes_.push_back("note: " + n);
  }
  const double budget_s = opt_.time_budget_s >= 0 ? opt_.time_budget_s : p_.cfg.defaults.budget_s;
  try {
    check_time_budget(p_.plan, estimate_, job, budget_s, opt_.time_budget_s >= 0 ? "--time-budget" : "budget_s",
                      host_line_);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

RunRecord PlanRun::run_record() const {
  RunRecord run;
  run.software_version = software_version();
  run.date = iso8601_now();
  run.software_dependencies = software_dependencies(p_.cuda);
  run.mpi_library = mpi_library_version();
  run.mpi_settings = mpi_tuning_settings();
  run.command_line = opt_.command_line;
  run.config_file = opt_.config;
  run.config_text = p_.cfg.text;
  run.config_overrides = join(opt_.sets, "\n");
  run.backend = p_.backend.backend;
  run.backend_reason = p_.backend.reason;
  run.comm = comm_choice_.comm;
  run.comm_reason = comm_choice_.reason;
  if (const char* j = std::getenv("SLURM_JOB_ID")) run.slurm_job_id = j;
  run.environment = relevant_environment();
  run.ranks = table_;
  run.links = links_;
  run.warnings = placement_warnings(table_);
  run.nodes = comm_.node_count();
  run.cases_planned = p_.plan.size();
  for (const auto& c : p_.plan) {
    PlannedCase planned{c.label(), {}};
    for (const auto& [name, value] : c.expect) {
      if (limit_applies(name, c.mode, c.params)) planned.limits.emplace_back(name, value);
    }
    run.plan.push_back(planned);
  }
  return run;
}

void PlanRun::print_start(const RunRecord& run) const {
  std::printf("gpuscale %s: %zu case(s) from %s on %d rank(s), %d node(s)\n", software_version().c_str(),
              p_.plan.size(), opt_.config.c_str(), comm_.size(), comm_.node_count());
  // Typed alone, `run` is a job of one rank, whose serial and parallel cases are one and the same: say how to get more.
  if (!p_.launched && comm_.size() == 1) std::printf("%s\n", printable(singleton_note(opt_.command_line)).c_str());
  std::printf("backend %s: %s\n", backend_name(p_.backend.backend), p_.backend.reason.c_str());
  std::printf("comm %s: %s\n", comm_name(comm_choice_.comm), comm_choice_.reason.c_str());
  for (const auto& n : p_.plan_notes) std::printf("note: %s\n", n.c_str());
  std::printf("estimated time: about %s (rates %s)\n", format_duration(estimate_.total_s()).c_str(),
              estimate_.rates_source.c_str());
  if (!host_line_.empty()) std::printf("%s\n", host_line_.c_str());
  for (const auto& n : estimate_notes_) std::printf("%s\n", n.c_str());
  std::printf("%s%s", format_rank_table(table_).c_str(), format_gpu_facts(table_, links_).c_str());
  for (const auto& w : run.warnings) std::printf("WARNING: %s\n", w.c_str());
}

// Rank 0 creates the file: "" or why it could not (a name taken meanwhile, a full disk).
std::string PlanRun::open_file() {
  if (!root_) return "";
  const RunRecord run = run_record();
  print_start(run);
  OutputTarget target = p_.output ? *p_.output : OutputTarget{default_output(opt_.config), false, ""};
  for (int attempt = 0;; ++attempt) {
    try {
      file_ = std::make_shared<RunFile>(target, run);
      break;
    } catch (const NoSpaceError& e) {
      return target.path + ": " + no_space_text(e.free_bytes()) + " for the file's start; nothing was written";
    } catch (const InputError& e) {
      return e.what();  // another --force run took the file's lock since it was checked
    } catch (const std::exception& e) {
      // Another run took the name since it was checked: a default name moves on, a name given with -o is an error.
      if (p_.output || attempt > 100) {
        return target.path + ": cannot create the file (" + std::string(e.what()) +
               "); was it created by someone else since it was checked?";
      }
      target.path = default_output(opt_.config);
    }
  }
  std::printf("writing %s%s\n", file_->written().c_str(),
              target.replace ? (" (replaces " + target.path + " when the run ends: --force)").c_str() : "");
  std::fflush(stdout);
  install_endings();
  return "";
}

// How a run that ends early says so: a signal (mpirun or Slurm ending the job, Ctrl-C), a timeout.
void PlanRun::install_endings() {
  auto file = file_;
  const auto table = table_;
  set_termination_hook([file, table](int sig) {
    // A rank of this node that is gone ended the job first; mpirun's SIGTERM only followed.
    const std::string peer = ended_peer(table), where = file->where();
    const std::string status = peer.empty() ? std::string("aborted: ") + signal_name(sig) + " " + where
                                            : "aborted: " + peer + " ended " + where + ", then " + signal_name(sig) +
                                                  " ended the job";
    const bool open_line = !file->current().empty();  // a case's progress line waits for its end
    if (!file->end_early(status)) return;  // the run had ended (or its file could not be marked: nothing to add)
    if (open_line) std::printf("\n");
    std::fflush(stdout);
    const std::string kept = file->location() + " keeps " + std::to_string(file->cases_written()) + " finished case(s)";
    if (peer.empty()) {
      std::fprintf(stderr, "gpuscale: interrupted: %s %s; %s\n", signal_name(sig), where.c_str(), kept.c_str());
    } else {
      print_error(peer + " ended " + where + " (killed, or crashed); " + kept);
    }
  });
  watchdog_.on_timeout([file](const std::string& what, double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", seconds);
    file->end_early("timed out: " + what + " ran past its timeout of " + buf + " s");
  });
}

int PlanRun::run_cases() {
  // Each scope's group is made on first use and kept for the run.
  Groups groups(comm_, *device_, data_comm_factory(comm_choice_.comm));
  const std::size_t abort_groups = watchdog_.on_timeout([&groups](const std::string&, double) { groups.abort_all(); });
  struct Forget {  // the groups end with this function, the watchdog lives on until MPI's finalize
    Watchdog& w;
    std::size_t hook;
    ~Forget() { w.forget(hook); }
  } forget{watchdog_, abort_groups};
  Runner runner(comm_, *device_, &groups, *clock_, p_.backend.backend,
                static_cast<std::uint64_t>(p_.cfg.defaults.seed));
  runner.set_telemetry(telemetry_.source.get(), kTelemetryIntervalS);
  const CaseTimeout timeout{p_.cfg.defaults.timeout_s};
  runner.set_watchdog(&watchdog_, timeout, p_.plan.size());
  RunTally tally;
  std::string stop = set_up_data_plane(groups);  // rank 0: why the run cannot go on (its file), for every rank
  const auto started = std::chrono::steady_clock::now();
  for (const auto& c : p_.plan) {
    if (root_) {
      file_->set_current(c.numbered(p_.plan.size()));
      if (stop.empty()) stop = file_->room_for(planned_bytes(c, comm_.size(), 14));
    }
    if (stop_all(comm_, stop)) return kExitFailure;
    if (root_) {
      std::printf("[%zu/%zu] %s ...", c.number(), p_.plan.size(), c.label().c_str());
      std::fflush(stdout);
    }
    CaseRecord rec = runner.run(c);
    tally.add(rec);
    // The other ranks wait in the next stop_all while rank 0 writes the case: a rank cut off there ends too.
    watchdog_.arm("rank 0's write of " + c.numbered(p_.plan.size()),
                  timeout.write_s(static_cast<double>(planned_bytes(c, comm_.size(), 14))),
                  timeout.automatic() ? "timeout = auto: 60 s + 1 s per 10 MB of the case's record"
                                      : "the case's timeout + 1 s per 10 MB of its record");
    if (root_) {
      stop = after_case(c, rec, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  }
  if (stop_all(comm_, stop)) return kExitFailure;
  return finish(tally);
}

// Every group the plan moves data in, made and first used before the first case, each with a bound of its own
// (NCCL's set-up and first connection are slow at scale, and no case's setup bound should pay for them). Rank 0
// prints the slowest rank's time and keeps it in the file: "" or why the run cannot go on.
std::string PlanRun::set_up_data_plane(Groups& groups) {
  const PlanGroups need = plan_groups(p_.plan, comm_.size());
  if (need.empty()) return "";
  const CaseTimeout timeout{p_.cfg.defaults.timeout_s};
  const std::string why = timeout.automatic()
                              ? "timeout = auto: " + format_number("%g", kRunEdgeTimeoutS) + " s for each communicator"
                              : "the config's timeout, at least " + format_number("%g", kRunEdgeFloorS) +
                                    " s for each communicator";
  const GroupSetup done = set_up_groups(groups, need, &watchdog_, timeout.edge_s(), why);
  const double slowest = comm_.max(done.seconds, false);
  if (!root_) return "";
  std::printf("%s: %d communicator(s) in %s\n", comm_choice_.comm == CommKind::nccl ? "NCCL" : "MPI",
              done.communicators, format_duration(slowest).c_str());
  std::fflush(stdout);
  return file_->write_data_plane(done.communicators, slowest);
}

// Rank 0, once a case ran: its file write, its progress line. "" or why the run cannot go on.
std::string PlanRun::after_case(const Case& c, const CaseRecord& rec, double elapsed_s) {
  std::string stop = file_->write_case(rec);
  rows_.push_back(case_row(rec, table_));
  // Elapsed, and the estimate of the cases left scaled by how the estimate of the cases so far compares with their
  // time.
  estimated_done_ += estimate_.case_s[c.index];
  std::string pace = " (" + format_duration(elapsed_s) + " elapsed";
  if (c.number() < p_.plan.size()) {
    const double left = estimate_.total_s() - estimate_.start_s - estimated_done_;
    pace += ", about " + format_duration(left * elapsed_s / std::max(1e-9, estimated_done_)) + " left";
  }
  std::printf(" %s%s)\n", summary_line(rec, rows_.back()).c_str(), pace.c_str());
  std::fflush(stdout);
  for (const auto& f : rows_.back().flags) {  // in the file too: a reader of it should not miss that
    if (stop.empty() && f.rfind("clock:", 0) == 0) {
      stop = file_->add_warning("case " + std::to_string(c.number()) + ": " + f);
    }
  }
  return stop;
}

// The file's end and the run's last lines; exit 1 where a case failed verification or none ran (all skipped: the
// file is complete all the same, and keeps them with their reasons).
int PlanRun::finish(const RunTally& tally) {
  if (root_) file_->set_current("");
  const double edge_s = CaseTimeout{p_.cfg.defaults.timeout_s}.edge_s();
  arm_end_watch(end_watch_, "rank " + std::to_string(comm_.rank()) + " on " + comm_.hostname(), edge_s);
  watchdog_.arm("the end of the run (common clock)", edge_s, edge_why(p_));
  gather_end_offsets(comm_, estimate_clock_offset(comm_), table_);
  watchdog_.disarm();
  const int failed = tally.failed();
  // Nothing ran: rank 0 alone exits 1, once its file is complete, so that a launcher which ends the job at the first
  // rank's failure never cuts the file short.
  const int rc = failed > 0 || (root_ && tally.ran() == 0) ? kExitFailure : kExitOk;
  if (!root_) return rc;
  const std::string status =
      failed ? "complete; " + std::to_string(failed) + " case(s) failed verification" : "complete";
  if (const std::string m = file_->finish(status, table_); !m.empty()) {
    print_error(m);
    return kExitFailure;
  }
  set_termination_hook({});
  const std::string where = file_->location();
  std::printf("%s\ndone: %s (gpuscale report %s)\n", tally.line(p_.plan.size()).c_str(), where.c_str(),
              where.c_str());
  if (!file_->kept_note().empty()) std::printf("WARNING: %s\n", file_->kept_note().c_str());
  relate_rows(rows_);
  if (const auto checks = check_expectations(rows_); !checks.empty()) {
    std::printf("%s", render_checks(where, checks).c_str());
    std::printf("(gpuscale report --check %s exits 1 when a limit fails)\n", where.c_str());
  }
  if (tally.ran() == 0) {
    std::fflush(stdout);
    print_error("no case ran: all " + std::to_string(p_.plan.size()) + " were skipped on this job (" +
                std::to_string(comm_.size()) + " rank(s) on " + std::to_string(comm_.node_count()) + " node(s)); " +
                where + " is complete and keeps them, each with its reason");
  }
  return rc;
}

// What a rank leaves for the end of its run, after MPI_Finalize.
struct RankEnd {
  int rc = kExitOk;
  std::string who;  // "rank 1 on node2"
};

// The plan on every rank, once MPI runs: a rank's failure is said where it happened, and ends the whole job.
RankEnd run_ranks(const RunOptions& opt, const Prepared& p, Watchdog& watchdog, EndWatch& end_watch) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  RankEnd end{kExitOk, "rank " + std::to_string(comm.rank()) + " on " + comm.hostname()};
  watchdog.set_who(end.who);
  std::shared_ptr<RunFile> file;
  try {
    end.rc = PlanRun(opt, p, comm, file, watchdog, end_watch).run();
  } catch (const std::exception& e) {
    const std::string m = end.who + ": " + e.what();
    print_error(m);
    std::fflush(stderr);
    if (file) file->end_early("failed: " + m);  // a no-op once the run finished
    // Hydra's proxies stop passing output on once an abort reaches them: give the line a moment to leave first.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
    end.rc = kExitFailure;
  }
  return end;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& opt) {
  auto* run = app.add_subcommand("run", "Run the experiments of a config file and write the results (HDF5)");
  run->add_option("config", opt.config, "Experiment file (TOML)")->required();
  run->add_option("-o,--output", opt.output, "Result file (default: results/<config>-<timestamp>.h5)");
  run->add_option("--set", opt.sets,
                  "Override a config key: KEY=VALUE, defaults.KEY=VALUE or EXPERIMENT.KEY=VALUE; "
                  "the value is TOML (e.g. size=[256,512]); repeatable");
  run->add_flag("--force", opt.force, "Overwrite the output file if it exists");
  add_plan_limits(*run, opt.max_cases, opt.time_budget_s);
  run->footer("Examples:\n"
              "  mpirun -np 2 gpuscale run configs/default.toml -o results/default.h5\n"
              "  mpirun -np 4 gpuscale run configs/auto-parallelism.toml --set reps=5 --set dtype=fp32\n"
              "  mpirun -np 4 gpuscale run configs/cross-server.toml --set bytes=1048576 --set defaults.comm=mpi\n"
              "Every rank runs the same cases; 'serial' cases let the ranks take turns (transfers: the\n"
              "groups of their scope), 'parallel' ones start all ranks together. A case this job's shape\n"
              "cannot run (scope inter-node on one node) is kept in the file as skipped, with the reason.\n"
              "Exit code: 0 ok, 1 failure (e.g. verification, or no case ran: this job skipped every one),\n"
              "2 bad input, 3 a case ran past its timeout.\n\n" +
              workloads_help());
  return run;
}

int cmd_run(const RunOptions& opt, int* argc, char*** argv) {
  // A result file whose write failed is left open, unflushed (ResultWriter::end_after_failure): the library
  // must not flush it at exit either.
  H5dont_atexit();
  EndWatch end_watch;  // forked before CUDA (prepare probes it), MPI or registered memory start
  const Prepared p = prepare(opt);  // InputError -> exit 2, before MPI starts
  // Every rank is bounded from its first MPI call to its last, so that a rank frozen at the start or the end of
  // the run ends the job as one frozen in a case does. Ranks other than 0 fire a little later, so that rank 0
  // records a timeout in the file first.
  const double edge_s = CaseTimeout{p.cfg.defaults.timeout_s}.edge_s();
  const int launched_rank = rank_from_launcher();
  Watchdog watchdog("rank " + (launched_rank < 0 ? std::string("?") : std::to_string(launched_rank)) + " on " +
                        short_hostname(), launched_rank > 0 ? 5.0 : 0.0);
  watchdog.arm("MPI's start (MPI_Init)", edge_s, edge_why(p));
  std::optional<MpiSession> mpi(std::in_place, argc, argv);
  const RankEnd end = run_ranks(opt, p, watchdog, end_watch);
  arm_end_watch(end_watch, end.who, edge_s);  // where the run ended early; else armed since its end began
  watchdog.arm("the end of the run (MPI_Finalize)", edge_s, edge_why(p));
  mpi.reset();
  watchdog.disarm();
  return end.rc;
}

}  // namespace gpuscale
