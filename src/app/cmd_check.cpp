// gpuscale check: validate a config and summarise its plan (--cases: each case), no MPI.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>

#include "app/cli_options.hpp"
#include "app/commands.hpp"
#include "app/host_busy.hpp"
#include "comm/comm_choice.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/backend.hpp"
#include "model/model_file.hpp"
#include "model/predict.hpp"
#include "workloads/calibrate.hpp"
#include "workloads/estimate.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/rates_file.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

// The job to estimate for: as asked, else the Slurm job check runs in, else 2 ranks on one node.
JobShape estimate_job(const CheckOptions& opt) {
  JobShape job;
  const bool slurm_ranks = opt.ranks == 0 && env_int("SLURM_NTASKS") > 0;
  job.ranks = opt.ranks > 0 ? opt.ranks : slurm_ranks ? env_int("SLURM_NTASKS") : 2;
  job.nodes = opt.nodes > 0 ? opt.nodes : env_int("SLURM_JOB_NUM_NODES") > 0 ? env_int("SLURM_JOB_NUM_NODES") : 1;
  // Asked for, a job with nodes and no rank on them is a mistake to say, not to estimate for fewer nodes quietly.
  if (opt.nodes > job.ranks) {
    const std::string from = opt.ranks > 0   ? "--ranks"
                             : slurm_ranks ? "SLURM_NTASKS; give --ranks"
                                           : "the default; give --ranks";
    throw InputError("--nodes " + std::to_string(opt.nodes) + " is more than the job's " + std::to_string(job.ranks) +
                     " rank(s) (" + from + "): every node runs at least one rank; see 'gpuscale check --help'");
  }
  job.nodes = std::min(job.nodes, job.ranks);
  job.cores_per_node = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return job;
}

// The plan is checked against the backend it asks for, even where that backend cannot run (a config written on a
// login node without GPUs); with a rates table, against the table's backend, which "auto" takes.
BackendChoice check_backend(const std::string& asked, const Rates* given, const std::string& rates_path) {
  if (given) {
    if (asked != "auto" && *parse_backend(asked) != given->backend) {
      throw InputError(rates_path + " holds rates of the " + backend_name(given->backend) + " backend; the config "
                       "asks for backend = \"" + asked + "\"");
    }
    return {given->backend, "the rates' backend (" + rates_path + ")"};
  }
  try {
    return choose_backend(asked, probe_cuda());
  } catch (const InputError& e) {
    return {*parse_backend(asked), std::string(e.what()) + " on this machine"};  // "cuda" asked
  }
}

// Rates measured on this machine's device of the backend, where there is one; else the defaults.
Rates check_rates(const BackendChoice& backend, CommKind comm, const std::vector<Case>& plan,
                  double* took_s) {
  const Rates defaults = default_rates(backend.backend, comm);
  *took_s = 0;
  if (backend.backend == Backend::cuda && !probe_cuda().usable) return defaults;
  const auto t0 = std::chrono::steady_clock::now();
  const auto device = make_device(backend, 0);
  Rates r = calibrate(*device, plan, defaults);
  *took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string rates_text(const Rates& r, const std::vector<Case>& plan, const PlanEstimate& e, double took_s) {
  std::string s = r.source + (took_s > 0 ? " (" + format_duration(took_s) + ")" : "") + ":";
  for (const auto& [kind, rate] : r.gemm) {
    if (std::none_of(plan.begin(), plan.end(), [&, k = kind](const Case& c) {
          const auto gemms = case_work(c, JobShape{}).sample.gemms;
          return std::any_of(gemms.begin(), gemms.end(),
                             [&](const GemmWork& g) { return g.dtype == k.first && g.impl == k.second; });
        })) {
      continue;  // a default for a kind the plan does not use
    }
    const std::string impl = kind.second == GemmImpl::vendor ? "" : std::string("/") + gemm_impl_name(kind.second);
    const std::string flops = rate.flops_s >= 1e12 ? format_sig3(rate.flops_s / 1e12) + " TFLOP/s"
                                                   : format_sig3(rate.flops_s / 1e9) + " GFLOP/s";
    s += std::string(" gemm ") + dtype_name(kind.first) + impl + " " + flops + ",";
  }
  // Three significant digits as in every view (%.3g printed a copy rate of 1000 GB/s as "1e+03").
  s += " copies " + format_sig3(r.stream_bytes_s.at(kDeviceCopy) / 1e9) + " GB/s";
  if (r.copy_beyond_cache_bytes_s > 0) {
    s += " (" + format_sig3(r.copy_beyond_cache_bytes_s / 1e9) + " GB/s beyond the " + format_bytes(r.cache_bytes) +
         " cache)";
  }
  s += ", making inputs " + format_sig3(r.fill_bytes_s / 1e9) + " GB/s";
  std::string own;  // the workloads whose setup and check were timed on a case of their own
  for (const auto& [workload, rate] : r.setup_bytes_s) own += (own.empty() ? "" : ", ") + workload + " " +
                                                              format_sig3(rate / 1e9) + " GB/s";
  if (!own.empty()) s += " (a case's own setup and check: " + own + ")";
  const std::string transfers = transfers_text(e, r);
  return transfers.empty() ? s : s + "; " + transfers;
}

// Others' work on this node, from its load: the estimate counts it where the job is of one node and the rates were
// measured here, as what stays while the job runs. The line to print, "" on a quiet host.
std::string assume_host_load(const std::vector<Case>& plan, const JobShape& job, bool measured, Rates& rates) {
  const std::string not_counted = job.nodes > 1 ? "for " + std::to_string(job.nodes) + " nodes"
                                  : !measured   ? "from default rates"
                                                : "";
  const int per_node = (job.ranks + job.nodes - 1) / job.nodes;
  const HostBusy busy = host_busy(read_host_busy_inputs(), busiest_threads(plan, per_node), not_counted);
  if (not_counted.empty()) rates.host = busy.share;
  return busy.line;
}

// The model's sample times for the cases it can predict; the rates' source says for how many.
Model use_model(const std::string& path, CommKind comm, const std::vector<Case>& plan, const JobShape& job,
                Rates& rates) {
  Model m = read_model_file(path);
  PredictJob target = predict_job(m, job.ranks, job.nodes);
  target.backend = rates.backend;
  target.comm = comm;
  std::size_t covered = 0;
  for (const auto& c : plan) {
    covered += predict_case(m, {c.experiment, c.workload, c.mode, c.params}, target).predicted();
  }
  rates.sample_time = [m, target](const Case& c, const JobShape& shape) -> std::optional<double> {
    PredictJob t = target;
    t.shape = shape;
    const Prediction p = predict_case(m, {c.experiment, c.workload, c.mode, c.params}, t);
    if (!p.predicted()) return std::nullopt;
    return p.median_s / std::max(1, p.turns);
  };
  rates.source = "model " + path + " (fitted from " + std::to_string(m.sources.size()) + " file(s)) for the sample "
                 "times of " + std::to_string(covered) + " of " + std::to_string(plan.size()) + " case(s), " +
                 rates.source + " for the rest and for setup";
  return m;
}

// One note per reason the job skips cases for, with how many it skips: a case skipped for its shape (one node for
// scope inter-node) is no failure, but a reader should not take the plan's total for what will run.
void print_skipped(const std::vector<Case>& plan, const PlanEstimate& estimate) {
  std::vector<std::pair<std::string, int>> reasons;  // in the order the plan first meets them
  for (const auto& c : plan) {
    const std::string& why = estimate.skip_reason[c.index];
    if (why.empty()) continue;
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == why; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {why, 0});
    ++it->second;
  }
  for (const auto& [why, count] : reasons) {
    std::printf("%s", wrap("note: " + std::to_string(count) + " of " + std::to_string(plan.size()) +
                           " case(s) will be skipped on this job: " + why).c_str());
  }
}

// Per experiment (their cases are consecutive in the plan): cases, time, and the largest memory need; then the
// memory a rank has.
void print_experiments(const std::vector<Case>& plan, const PlanEstimate& estimate, const MemoryLimits& memory) {
  const bool on_host = memory.device_bytes == 0;
  const auto needs = memory_by_experiment(plan, on_host);
  std::size_t at = 0;
  for (const auto& [experiment, most] : needs) {
    int cases = 0, skipped = 0;
    double seconds = 0;
    for (; at < plan.size() && plan[at].experiment == experiment; ++at, ++cases) {
      seconds += estimate.case_s[plan[at].index];
      skipped += !estimate.skip_reason[plan[at].index].empty();
    }
    const std::string mem =
        on_host ? format_bytes(most.device_bytes + most.host_bytes)
                : format_bytes(most.device_bytes) + " device + " + format_bytes(most.host_bytes) + " host";
    const std::string skips = skipped > 0 ? " (" + std::to_string(skipped) + " skipped)" : "";
    std::printf("  %-24s %4d case(s)%s  about %-9s memory per rank up to %s\n", experiment.c_str(), cases,
                skips.c_str(), format_duration(seconds).c_str(), mem.c_str());
  }
  const std::string host = format_bytes(memory.host_bytes) + (on_host ? "" : " host") + " (" + memory.host_from + ")";
  const std::string device = format_bytes(memory.device_bytes) + " device (" + memory.device_from + "), ";
  std::printf("%s", wrap("memory per rank available: " + (on_host ? host : device + host)).c_str());
}

// With --cases, one line per case: its label, its settings, and its estimate, or why this job skips it; else a line
// that says how to get them.
void print_cases(const std::vector<Case>& plan, const PlanEstimate& estimate, bool every) {
  if (!every) {
    std::printf("(--cases: a line for each of the %zu case(s))\n", plan.size());
    return;
  }
  for (const auto& c : plan) {
    const std::string& why = estimate.skip_reason[c.index];
    const std::string outcome = why.empty() ? "~" + format_duration(estimate.case_s[c.index])
                                            : "skipped on this job: " + why;
    std::printf("  [%zu/%zu] %s  workload=%s  warmup=%lld reps=%lld threads=%lld  %s\n", c.number(), plan.size(),
                c.label().c_str(), c.workload.c_str(), static_cast<long long>(c.params.get_int("warmup")),
                static_cast<long long>(c.params.get_int("reps")), static_cast<long long>(c.params.get_int("threads")),
                outcome.c_str());
  }
}

// The notes on a plan before its estimate: cases estimated past a fixed timeout, ranks that share a GPU over NCCL.
// Whether the plan moves data between ranks.
bool print_plan_notes(const Config& cfg, const std::vector<Case>& plan, const PlanEstimate& estimate, CommKind comm) {
  if (cfg.defaults.timeout_s > 0) {  // a case estimated past its timeout would abort the job
    std::size_t over = 0;
    for (const auto& c : plan) over += estimate.case_s[c.index] > cfg.defaults.timeout_s;
    if (over > 0) {
      std::printf("%s", wrap("note: " + std::to_string(over) + " case(s) are estimated to take longer than timeout = " +
                             format_number("%g", cfg.defaults.timeout_s) + " s, which aborts the job (exit 3); raise "
                             "timeout, or 0 to derive it from each case").c_str());
    }
  }
  // check runs without the job, so it cannot see which ranks will share a GPU;
  // it says up front what happens if some do.
  const bool transfers = std::any_of(plan.begin(), plan.end(), [](const Case& c) {
    return find_workload(c.workload).scope(c.params).has_value();
  });
  if (transfers && cfg.defaults.share_devices && comm == CommKind::nccl) {
    std::printf("note: share_devices = true: NCCL refuses two ranks on one GPU (\"Duplicate GPU detected\"), so %s\n",
                cfg.defaults.comm == "nccl"
                    ? "a job whose ranks share a GPU stops before any case runs, naming them; comm = \"auto\" or "
                      "\"mpi\" moves their data with MPI instead"
                    : "a job whose ranks share a GPU moves data with MPI (comm auto), and says so");
  }
  return transfers;
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& opt) {
  auto* check = app.add_subcommand(
      "check", "Validate a config file and summarise its plan: cases per experiment, what this job skips and why, "
               "memory per rank and the estimated time; --cases: a line per case (runs nothing but a short "
               "measurement of this machine's rates)");
  check->add_option("config", opt.config, "Experiment file (TOML)")->required();
  check->add_option("--set", opt.sets, "Override a config key, as for 'run'");
  add_plan_limits(*check, opt.max_cases, opt.time_budget_s);
  check->add_option("--ranks", opt.ranks, "Ranks of the job to estimate for (default: the job check runs in, else 2)")
      ->check(whole_number_validator("ranks"));
  check->add_option("--nodes", opt.nodes, "Nodes of that job (default: the job check runs in, else 1)")
      ->check(whole_number_validator("nodes"));
  check->add_flag("--cases", opt.cases, "a line for each case of the plan: its parameters, warm-up, reps and "
                                           "threads, and its estimate or why this job skips it");
  check->add_option("--rates", opt.rates, "A rates table of another machine (configs/rates/h100.toml): the estimate "
                                          "for its backend and GPU, nothing measured here");
  check->add_option("--model", opt.model, "A fitted model (gpuscale model -o FILE): the sample times of the cases it "
                                          "covers come from it instead of this machine's rates");
  check->footer("Examples:\n  gpuscale check configs/default.toml --set size=[256,512]\n"
                "  gpuscale check configs/collectives.toml --cases   # and a line for each case\n"
                "  gpuscale check configs/full.toml --ranks 16 --nodes 2 --time-budget 3600\n"
                "  gpuscale check configs/kernel-ladder.toml --rates configs/rates/h100.toml   # as on an H100\n\n" +
                workloads_help());
  return check;
}

int cmd_check(const CheckOptions& opt) {
  const std::string& config = opt.config;
  const Config cfg = load_config(config, opt.sets, workload_schemas(),
                                 environment_defaults(std::getenv("SLURM_CPUS_PER_TASK")));
  check_plan_size(cfg, opt.max_cases);
  auto plan = expand(cfg);
  const auto notes = drop_single_turn_serials(plan);
  std::optional<RatesFile> given;
  if (!opt.rates.empty()) given = read_rates_file(opt.rates);
  const BackendChoice backend = check_backend(cfg.defaults.backend, given ? &given->rates : nullptr, opt.rates);
  CommChoice comm;
  try {
    comm = choose_comm(cfg.defaults.comm, backend.backend, nccl_built());
  } catch (const InputError& e) {
    if (backend_name(backend.backend) == cfg.defaults.backend || cfg.defaults.comm != "nccl") throw;
    comm = {CommKind::nccl, std::string(e.what()) + " on this machine"};  // the CUDA backend is not here either
  }
  check_plan_runs_on(plan, {backend.backend, comm.comm});
  const JobShape job = estimate_job(opt);
  const CudaStatus cuda = probe_cuda();
  MemoryLimits memory = memory_limits_here(backend.backend, cuda, (job.ranks + job.nodes - 1) / job.nodes);
  if (given && given->device_memory_bytes > 0) {
    memory.device_bytes = 0.9 * given->device_memory_bytes;
    memory.device_from = "90% of the rates' GPU's " + format_bytes(given->device_memory_bytes);
  }
  check_plan_memory(plan, memory);
  double took_s = 0;
  Rates rates = given ? given->rates : check_rates(backend, comm.comm, plan, &took_s);
  if (given) assume_links(rates, comm.comm);
  std::optional<Model> model;
  if (!opt.model.empty()) model = use_model(opt.model, comm.comm, plan, job, rates);
  const std::string host = assume_host_load(plan, job, took_s > 0, rates);
  const PlanEstimate estimate = estimate_plan(plan, job, rates);
  const double budget_s = opt.time_budget_s >= 0 ? opt.time_budget_s : cfg.defaults.budget_s;
  check_time_budget(plan, estimate, job, budget_s, opt.time_budget_s >= 0 ? "--time-budget" : "budget_s", host);
  const std::string timeout = cfg.defaults.timeout_s > 0 ? format_number("%g s per case", cfg.defaults.timeout_s)
                                                           : std::string("from each case's samples (docs/metrics.md)");
  std::printf("%s: %zu experiment(s), %zu case(s); backend %s (%s); comm %s (%s); timeout %s, seed %lld\n",
              config.c_str(), cfg.experiments.size(), plan.size(), backend_name(backend.backend),
              backend.reason.c_str(), comm_name(comm.comm), comm.reason.c_str(), timeout.c_str(),
              static_cast<long long>(cfg.defaults.seed));
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  const bool transfers = print_plan_notes(cfg, plan, estimate, comm.comm);
  for (const auto& e : cfg.experiments) {
    if (e.expect.empty()) continue;
    std::string limits;
    for (const auto& [limit, value] : e.expect) limits += " " + limit + "=" + format_number("%g", value);
    std::printf("limits of '%s' (report --check):%s\n", e.name.c_str(), limits.c_str());
  }
  std::printf("%s", wrap("estimated time on " + job_text(job) + ": " + about_duration(estimate.total_s()) +
                           " (start " + format_duration(estimate.start_s) + "; --ranks and --nodes for another job" +
                           (budget_s > 0 ? "; budget " + format_duration(budget_s) : std::string()) + ")").c_str());
  if (!host.empty()) std::printf("%s", wrap(host).c_str());
  for (const auto& n : left_out_notes(plan, estimate, job, rates, !host.empty())) {
    std::printf("%s", wrap("note: " + n).c_str());
  }
  print_skipped(plan, estimate);
  std::printf("%s", wrap("rates: " + rates_text(rates, plan, estimate, took_s)).c_str());
  print_experiments(plan, estimate, memory);
  if (transfers && comm.comm == CommKind::nccl) {
    std::printf("%s", wrap("note: NCCL's own device memory is not counted above: its buffers for each peer and "
                           "channel (NCCL_BUFFSIZE, 4 MiB by default) and its communicators' state").c_str());
  }
  print_cases(plan, estimate, opt.cases);
  return kExitOk;
}

}  // namespace gpuscale
