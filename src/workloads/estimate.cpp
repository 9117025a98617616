#include "workloads/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "comm/groups.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "workloads/memory_need.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

namespace {

// CPU backend: the cores one rank's gemm gets (its threads, fewer where the
// node's busy ranks want more cores than it has, or others' work takes its share); 1 on a GPU.
double cores_per_rank(const CaseWork& w, const Case& c, const JobShape& job, const Rates& r) {
  if (r.backend != Backend::cpu) return 1.0;
  const double threads = static_cast<double>(c.params.get_int("threads"));
  const double own = std::min(threads, static_cast<double>(std::max(1, job.cores_per_node)) / w.busy_ranks_per_node);
  return own / r.host.slowdown(w.busy_ranks_per_node * threads);
}

double sample_seconds(const SampleWork& w, double cores, const Rates& r) {
  double compute = 0;
  for (const auto& g : w.gemms) {
    const GemmRate& rate = r.gemm_rate(g.dtype, g.impl);
    compute += g.calls * (rate.call_s + g.flops_per_call / rate.flops_s);
  }
  compute /= cores;
  double streams = 0;
  for (const auto& s : w.streams) streams += s.bytes / r.stream_rate(s.kind);
  const double copies = streams / std::min(1.0, cores) + w.stream_calls() * r.copy_call_s;
  const double wire =
      w.transfers * r.transfer_s + w.wire_bytes / (w.across_nodes ? r.wire_inter_bytes_s : r.wire_intra_bytes_s);
  const double lanes = w.overlapped ? std::max(compute, copies + wire) : compute + copies + wire;
  return lanes + w.host_waits * r.host_wait_s + r.sample_s;
}

}  // namespace

double HostShare::slowdown(double threads) const {
  if (others <= 0 || node_cpus <= 0) return 1.0;
  const double own = threads / (job_cpus > 0 ? std::min(job_cpus, node_cpus) : node_cpus);  // per CPU of the job
  const double shared = std::max(own, (threads + others) / node_cpus);
  return std::max(1.0, shared) / std::max(1.0, own);
}

const GemmRate& Rates::gemm_rate(DType t, GemmImpl i) const {
  const auto it = gemm.find({t, i});
  return it == gemm.end() ? gemm_default : it->second;
}

double Rates::stream_rate(const std::string& kind) const {
  auto it = stream_bytes_s.find(kind);
  if (it == stream_bytes_s.end()) it = stream_bytes_s.find(find_stream_kind(kind).priced_as);
  if (it == stream_bytes_s.end()) throw std::logic_error("no rate for streams of kind '" + kind + "'");
  return it->second;
}

CaseWork case_work(const Case& c, const JobShape& job) {
  CaseWork cw = find_workload(c.workload).work(c.params, job);
  if (c.mode == Mode::parallel) {
    cw.turns = 1;
  } else if (!find_workload(c.workload).scope(c.params)) {
    cw.busy_ranks_per_node = 1;  // device-local work in turns: one rank at a time
  }
  return cw;
}

Rates default_rates(Backend backend, CommKind comm) {
  Rates r;
  r.backend = backend;
  if (backend == Backend::cuda) {
    r.source = "defaults for the CUDA backend (no GPU measured)";
    // Below an H100's figures, so that an estimate errs long.
    r.gemm_default = {10e-6, 2e12};
    for (DType t : {DType::fp64, DType::fp32}) r.gemm[{t, GemmImpl::vendor}] = {10e-6, 40e12};
    r.gemm[{DType::tf32, GemmImpl::vendor}] = {10e-6, 250e12};
    for (DType t : {DType::fp16, DType::bf16}) {
      r.gemm[{t, GemmImpl::vendor}] = {10e-6, 500e12};
      // Our kernels (naive: gemm_default): under half of what an H100 gave naive, tiled and tensor (5.4, 8.8,
      // 18.6 TFLOP/s); blocked and mma at under half of their targets (kernels/README.md).
      r.gemm[{t, GemmImpl::tiled}] = {10e-6, 4e12};
      r.gemm[{t, GemmImpl::tensor}] = {10e-6, 10e12};
      r.gemm[{t, GemmImpl::mma}] = r.gemm[{t, GemmImpl::mma_async}] = {10e-6, 100e12};
    }
    for (DType t : {DType::fp64, DType::fp32}) {
      r.gemm[{t, GemmImpl::tiled}] = {10e-6, 4e12};
      r.gemm[{t, GemmImpl::blocked}] = {10e-6, 10e12};
    }
    r.stream_bytes_s = {{kHostPinned, 20e9}, {kHostPageable, 8e9}, {kDeviceCopy, 1000e9}, {kPass, 1500e9}};
    r.copy_call_s = 10e-6;
    r.fill_bytes_s = 0.3e9;  // inputs are made and results checked on the host
    r.host_wait_s = 20e-6;
    r.sample_s = 50e-6;
    r.case_s = 0.05;
    r.start_s = 5.0;
    r.warmup_s = 0.5;
  } else {
    r.source = "defaults for the CPU backend (nothing measured)";
    r.gemm_default = {5e-6, 1e9};
    r.gemm[{DType::fp64, GemmImpl::vendor}] = {5e-6, 20e9};
    r.gemm[{DType::fp32, GemmImpl::vendor}] = {5e-6, 40e9};
    for (const auto& k : builtin_stream_kinds()) r.stream_bytes_s[k.name] = 5e9;
    r.copy_call_s = 5e-6;
    r.fill_bytes_s = 0.3e9;
    r.host_wait_s = 10e-6;
    r.sample_s = 50e-6;
    r.case_s = 0.02;
    r.start_s = 0.5;
    r.warmup_s = 0.0;
  }
  if (comm == CommKind::nccl) {
    r.wire_source = "NCCL defaults: 100 GB/s bus bandwidth within a node, 10 GB/s between nodes, 20 us per operation";
    r.wire_intra_bytes_s = 100e9;
    r.wire_inter_bytes_s = 10e9;
    r.transfer_s = 20e-6;
    r.group_s = 2.0;
  } else {
    r.wire_source = "MPI defaults: " + std::string(backend == Backend::cuda ? "10" : "2") +
                    " GB/s bus bandwidth within a node, 1 GB/s between nodes, 30 us per operation";
    r.wire_intra_bytes_s = backend == Backend::cuda ? 10e9 : 2e9;
    r.wire_inter_bytes_s = 1e9;
    r.transfer_s = 30e-6;
    r.group_s = 0.01;
  }
  return r;
}

double estimate_case(const Case& c, const JobShape& job, const Rates& r, bool first_of_scope) {
  const CaseWork w = case_work(c, job);
  if (w.skipped()) return r.case_s;
  std::optional<double> given = r.sample_time ? r.sample_time(c, job) : std::nullopt;
  const double t = given ? *given : sample_seconds(w.sample, cores_per_rank(w, c, job, r), r);
  const double warmup = static_cast<double>(c.params.get_int("warmup"));
  const double reps = static_cast<double>(c.params.get_int("reps"));
  const double warmup_s = c.params.has("warmup_s") ? c.params.get_double("warmup_s") : r.warmup_s;
  const double per_turn = std::max(warmup * t, warmup_s > 0 ? warmup_s + t : 0.0) + reps * t;
  // Every rank makes its inputs at once, and checks its results at the end.
  const MemoryNeed need = memory_need(c, r.backend == Backend::cpu);
  const int per_node = ranks_per_node(job);
  const double setup_shared =
      r.backend == Backend::cpu ? std::max(1.0, double(per_node) / std::max(1, job.cores_per_node)) : 1.0;
  const auto own = r.setup_bytes_s.find(c.workload);
  const double setup_rate = own == r.setup_bytes_s.end() ? r.fill_bytes_s : own->second;
  // The host makes and checks the inputs, one thread per rank, on either backend: others' work slows it too.
  const double setup = (need.device_bytes + need.host_bytes) / setup_rate * setup_shared *
                       r.host.slowdown(per_node);
  return w.turns * per_turn + setup + r.case_s + (first_of_scope && w.sample.transfers > 0 ? r.group_s : 0.0);
}

double PlanEstimate::total_s() const {
  double s = start_s;
  for (double c : case_s) s += c;
  return s;
}

PlanEstimate estimate_plan(const std::vector<Case>& plan, const JobShape& job, const Rates& rates) {
  PlanEstimate e;
  e.rates_source = rates.source;
  e.start_s = rates.start_s;
  std::set<std::string> scopes;  // groups are made once per scope and kept
  for (const auto& c : plan) {
    const auto scope = find_workload(c.workload).scope(c.params);
    const bool first = scope && scopes.insert(scope_name(*scope)).second;
    e.case_s.push_back(estimate_case(c, job, rates, first));
    e.skip_reason.push_back(case_work(c, job).skip_reason);
  }
  return e;
}

std::string job_text(const JobShape& job) {
  return std::to_string(job.ranks) + (job.ranks == 1 ? " rank" : " ranks") + " on " + std::to_string(job.nodes) +
         (job.nodes == 1 ? " node" : " nodes");
}

std::string largest_parts(const std::vector<Case>& plan, const PlanEstimate& e, std::size_t count) {
  std::vector<std::pair<std::string, std::pair<double, int>>> parts;  // experiment, (seconds, cases)
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == plan[i].experiment; });
    if (it == parts.end()) it = parts.insert(parts.end(), {plan[i].experiment, {0.0, 0}});
    it->second.first += e.case_s[i];
    ++it->second.second;
  }
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < std::min(count, parts.size()); ++i) {
    out.push_back("experiment '" + parts[i].first + "' " + about_duration(parts[i].second.first) + " (" +
                  std::to_string(parts[i].second.second) + " cases)");
  }
  const auto longest = std::max_element(e.case_s.begin(), e.case_s.end());
  if (longest != e.case_s.end()) {
    const Case& c = plan[static_cast<std::size_t>(longest - e.case_s.begin())];
    out.push_back("the longest, " + c.numbered(plan.size()) + ", " + about_duration(*longest));
  }
  return join(out, "; ");
}

void check_time_budget(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job, double budget_s,
                       const std::string& budget_from, const std::string& host) {
  const std::string estimated = "the plan is estimated at " + about_duration(e.total_s()) + " on " +
                                job_text(job);
  const std::string assumed = host.empty() ? "" : " (" + host + ")";
  const std::string parts = "; the largest parts: " + largest_parts(plan, e, 3);
  if (budget_s <= 0) {
    if (e.total_s() <= kDefaultTimeLimitS) return;
    throw InputError(estimated + ", over " + format_duration(kDefaultTimeLimitS) + ", the limit where no budget is set" +
                     parts + ". A typo in reps, ops or a size? To run it all the same, set budget_s or --time-budget" +
                     assumed);
  }
  if (e.total_s() <= budget_s) return;
  throw InputError(estimated + ", over the time budget of " + format_duration(budget_s) + " (" + budget_from + ")" +
                   parts + ". Shorten the lists, lower reps, or raise the budget" + assumed);
}

}  // namespace gpuscale
