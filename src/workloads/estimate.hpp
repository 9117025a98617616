// How long a plan will take, before it runs. Each case's work per sample
// comes from its parameters (gemm calls, bytes copied, bytes on the wire);
// rates turn work into seconds: measured on this machine just now
// (calibrate.hpp) or a backend's defaults. Setup, verification and the
// runner's own steps are counted from the case's memory (what it fills and
// checks) and fixed costs per sample, case and job.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"
#include "workloads/work.hpp"

namespace gpuscale {

// How a case runs on a job: its workload's work (WorkloadType::work) in the case's mode.
CaseWork case_work(const Case& c, const JobShape& job);

struct GemmRate {
  double call_s = 0;   // fixed cost of one call
  double flops_s = 0;  // flops per second beyond it
};

// Other work on a node while a job runs, as read at its start (app/host_busy.hpp) and assumed to stay: others'
// runnable threads on the node, which the kernel spreads over all its CPUs, and the CPUs the job's ranks there may
// use. Calibration measures a core's speed, which that work barely changes; a case's threads get their share of the
// CPUs only here.
struct HostShare {
  double others = 0;  // others' runnable threads: the node's load (app/host_busy.hpp), the job's own not yet running
  int node_cpus = 0;  // 0: nothing assumed
  int job_cpus = 0;   // of them, the job's (0: all)

  // How many times longer `threads` busy threads of the job take beside the others: each CPU runs its part of the
  // node's threads, and the job's CPUs at least the job's own; 1 where they all fit.
  double slowdown(double threads) const;
};

struct Rates {
  Backend backend = Backend::cpu;
  std::string source;   // where the compute and memory rates come from, for the output
  std::map<std::pair<DType, GemmImpl>, GemmRate> gemm;
  GemmRate gemm_default;  // a kind not measured
  std::map<std::string, double> stream_bytes_s;  // bytes per second of each built-in kind of stream (work.hpp)
  double copy_call_s = 0;
  double fill_bytes_s = 0;  // setup and verification: bytes of the case's memory made and checked per second
  std::map<std::string, double> setup_bytes_s;  // the same, measured on a workload's own setup (device-local ones)
  // Transfers: always defaults (nothing moves between ranks before the job runs).
  std::string wire_source;
  double wire_intra_bytes_s = 0, wire_inter_bytes_s = 0, transfer_s = 0;
  double host_wait_s = 0;  // one wait of the host for the device
  double sample_s = 0;     // the runner's own steps per sample (barrier, events)
  double case_s = 0;       // per case: barriers, gathering, writing the file
  double group_s = 0;      // making one scope's groups (NCCL communicators)
  double start_s = 0;      // the job's start: MPI, devices, the rank table, the file
  double warmup_s = 0;     // the backend's minimum warm-up time per turn, where a case sets none
  HostShare host;          // other work on the node (none: nothing assumed)
  // Where set (check --model), one turn's sample time of a case from elsewhere (a fitted model); none: the rates'.
  std::function<std::optional<double>(const Case&, const JobShape&)> sample_time;

  const GemmRate& gemm_rate(DType t, GemmImpl i) const;
  // A kind's own rate where one was set, else the rate of the built-in kind it is priced as.
  double stream_rate(const std::string& kind) const;
};

// Conservative rates for a backend and data plane, where nothing was measured.
Rates default_rates(Backend backend, CommKind comm);

struct PlanEstimate {
  std::string rates_source;  // Rates::source
  double start_s = 0;
  std::vector<double> case_s;  // per case, in plan order
  // Per case, in plan order: why the job skips it (the reason its run records), "" where it runs.
  std::vector<std::string> skip_reason;
  double total_s() const;
};
PlanEstimate estimate_plan(const std::vector<Case>& plan, const JobShape& job, const Rates& rates);
double estimate_case(const Case& c, const JobShape& job, const Rates& rates, bool first_of_scope);

// The largest contributors to an estimate, for the refusal of a plan over a
// time budget: "experiment 'sweep' about 10 min (41 cases), …".
std::string largest_parts(const std::vector<Case>& plan, const PlanEstimate& e, std::size_t count);
// Without a budget, a plan estimated over this is refused all the same: a
// day of work is most often a typo in reps, ops or a size (as --max-cases).
constexpr double kDefaultTimeLimitS = 24 * 3600.0;

// InputError when the plan's estimate exceeds budget_s, or kDefaultTimeLimitS
// where budget_s is 0 (none): the estimate, the job it is for, and the
// largest contributors; `host`, where not "", what the estimate assumed of the host ("host busy: ...").
void check_time_budget(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job, double budget_s,
                       const std::string& budget_from, const std::string& host = "");

// "2 ranks on 1 node"
std::string job_text(const JobShape& job);

}  // namespace gpuscale
