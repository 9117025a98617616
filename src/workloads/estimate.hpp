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

// The links a transfer crosses: within a node, or between nodes (a group that spans nodes). One operation takes
// op_s plus its bus bytes (op bytes x bus factor) at bytes_s, or at beyond_cache_bytes_s where the message's two
// ends (send and receive buffers) overflow Rates::cache_bytes, and a reduction the fresh pages of its temporary
// buffer at fresh_bytes_s.
struct LinkRate {
  double bytes_s = 0;
  double beyond_cache_bytes_s = 0;  // 0: bytes_s at every size
  double op_s = 0;
  bool measured = false;  // false: all or part of it assumed, which the output says
  std::string text;       // for the output: "measured, 19.5 GB/s ..." or "not measured, assumed 1 GB/s and 30 us ..."
  // MPI within a node on the CPU backend: a reduction's temporary buffer of kFreshBufferBytes or more (as allocated
  // in each call) touched at this rate, fresh pages each call (reduction_fresh_bytes); 0: not priced.
  double fresh_bytes_s = 0;
};

struct Rates {
  Backend backend = Backend::cpu;
  CommKind comm = CommKind::mpi;
  std::string source;   // where the compute and memory rates come from, for the output
  std::map<std::pair<DType, GemmImpl>, GemmRate> gemm;
  GemmRate gemm_default;  // a kind not measured
  std::map<std::string, double> stream_bytes_s;  // bytes per second of each built-in kind of stream (work.hpp)
  double copy_call_s = 0;
  // CPU backend: a copy whose source and destination together overflow the largest cache (bytes; 0: unknown) runs
  // at the memory's rate, copy_beyond_cache_bytes_s (0: not measured), not at the cache's.
  double cache_bytes = 0;
  double copy_beyond_cache_bytes_s = 0;
  double fill_bytes_s = 0;  // setup and verification: bytes of the case's memory made and checked per second
  std::map<std::string, double> setup_bytes_s;  // the same, measured on a workload's own setup (one rank alone)
  // Transfers. Within a node over MPI on the CPU backend, calibrate measures them (the host's copy rate and a
  // hand-off between two threads); between nodes, and on a GPU, nothing moves before the job runs: the defaults.
  LinkRate intra, inter;
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
  // The same for calls of `call_bytes` each: on the CPU backend a copy past the cache at the memory's rate.
  double stream_rate(const std::string& kind, double call_bytes) const;
};

// Whether a call whose two ends (source and destination, send and receive buffers) hold `call_bytes` each overflows
// a cache of `cache_bytes` (0: unknown, never).
inline bool call_passes_cache(double call_bytes, double cache_bytes) {
  return cache_bytes > 0 && 2 * call_bytes > cache_bytes;
}

// glibc gives an allocation this large pages of its own (mmap) and returns them when it is freed, at any setting
// of its dynamic threshold: a buffer allocated and freed in every call is fresh pages in every call.
constexpr double kFreshBufferBytes = 32.0 * 1024 * 1024;
// Bytes of fresh pages one operation of `t` touches in its temporary buffer, as Open MPI's reductions within a node
// allocate one the size of their input in each call (measured with Open MPI 4.1 on 2 ranks): an allreduce sums the
// (n-1)/n of its input that it receives from the others into it; a reduce_scatter all of its input at one rank. 0
// for other operations, and below kFreshBufferBytes (glibc keeps and reuses smaller buffers).
double reduction_fresh_bytes(const TransferWork& t);

// Seconds of `t.count` operations of a transfer on its link (inter where its group spans nodes), before any
// slowdown by a busy host.
double transfer_seconds(const TransferWork& t, const Rates& r);
// "measured, 19.5 GB/s (the host's copy rate; 18.2 GB/s beyond the 32 MiB cache) and 0.3 us per operation" and the
// like: a link's rates in the words of the output.
std::string link_rates_text(double bytes_s, double op_s);

// Conservative rates for a backend and data plane, where nothing was measured.
Rates default_rates(Backend backend, CommKind comm);
// The links and groups of a data plane, as default_rates assumes them (nothing moves before the job runs).
void assume_links(Rates& r, CommKind comm);

struct PlanEstimate {
  std::string rates_source;  // Rates::source
  double start_s = 0;
  std::vector<double> case_s;  // per case, in plan order
  // Per case, in plan order: why the job skips it (the reason its run records), "" where it runs.
  std::vector<std::string> skip_reason;
  // Whether a case that runs has transfers within a node, between nodes, that the rates price (not a model).
  bool intra_used = false, inter_used = false;
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

// What the estimate's transfers took, for the output: "transfers within a node: measured, ...; transfers between
// nodes: not measured, assumed ..." for the links the plan's cases that run use ("" where none).
std::string transfers_text(const PlanEstimate& e, const Rates& r);
// The same for the links priced by an assumption only ("" where none): what `run` prints beside its estimate.
std::string assumed_transfers_text(const PlanEstimate& e, const Rates& r);

// "" or, on the CPU backend where the plan's cases that run have transfers within a node, what the estimate leaves
// out on a busy host (to print under its "host busy" line): each transfer waits for both its ranks to get a CPU.
std::string busy_transfers_note(const PlanEstimate& e, const Rates& r);

// A case that sets up this much memory per rank, beside other ranks of its node, takes longer than the estimate
// (measured on one rank) says: the first touch of fresh pages does not scale across ranks.
constexpr double kLargeSetupBytes = 1024.0 * 1024 * 1024;
// "" or a note naming how many of the plan's cases that run set up that much with more than one rank on a node.
std::string large_setup_note(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job, bool cpu);

// "" or, on the CPU backend, a note naming how many of the plan's cases stream memory past the cache on several
// ranks of a node at once: the memory's rate is measured on one rank, and the ranks of a node share its
// bandwidth (2 ranks on a 2-core machine: an elementwise pass of 400 MB took 1.9x its time on one rank).
std::string shared_memory_note(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job,
                               const Rates& r);

// The notes under an estimate on what it leaves out, each without its "note: ", in the order check and run print
// them: transfers' waits on a busy host (where `host_busy`), setting up GiB per rank, memory bandwidth shared.
std::vector<std::string> left_out_notes(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job,
                                        const Rates& r, bool host_busy);

}  // namespace gpuscale
