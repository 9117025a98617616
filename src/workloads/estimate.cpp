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

// Seconds of a sample's transfers: on the CPU backend those within a node are the host's copies, which take a
// share of the cores as copies do (`cores` below 1 on a busy host); between nodes, the network's.
double wire_seconds(const SampleWork& w, double cores, const Rates& r) {
  double intra = 0, inter = 0;
  for (const auto& t : w.transfer_ops) (t.group_nodes > 1 ? inter : intra) += transfer_seconds(t, r);
  return intra / (r.backend == Backend::cpu ? std::min(1.0, cores) : 1.0) + inter;
}

double sample_seconds(const SampleWork& w, double cores, const Rates& r) {
  double compute = 0;
  for (const auto& g : w.gemms) {
    const GemmRate& rate = r.gemm_rate(g.dtype, g.impl);
    compute += g.calls * (rate.call_s + g.flops_per_call / rate.flops_s);
  }
  compute /= cores;
  double streams = 0;
  for (const auto& s : w.streams) streams += s.bytes / r.stream_rate(s.kind, s.call_bytes());
  const double copies = streams / std::min(1.0, cores) + w.stream_calls() * r.copy_call_s;
  const double wire = wire_seconds(w, cores, r);
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

double Rates::stream_rate(const std::string& kind, double call_bytes) const {
  const double rate = stream_rate(kind);
  const std::string& as = find_stream_kind(kind).priced_as;
  const std::string& base = as.empty() ? kind : as;
  const bool copy = base == kHostPinned || base == kHostPageable || base == kDeviceCopy;
  if (!copy || backend != Backend::cpu || cache_bytes <= 0 || copy_beyond_cache_bytes_s <= 0) return rate;
  return call_passes_cache(call_bytes, cache_bytes) ? std::min(rate, copy_beyond_cache_bytes_s) : rate;
}

double transfer_seconds(const TransferWork& t, const Rates& r) {
  const LinkRate& link = t.group_nodes > 1 ? r.inter : r.intra;
  const bool past_cache = link.beyond_cache_bytes_s > 0 && call_passes_cache(t.op_bytes, r.cache_bytes);
  const double rate = past_cache ? std::min(link.bytes_s, link.beyond_cache_bytes_s) : link.bytes_s;
  const double fresh = link.fresh_bytes_s > 0 ? reduction_fresh_bytes(t) / link.fresh_bytes_s : 0.0;
  return t.count * (link.op_s + t.op_bytes * t.bus_factor / rate + fresh);
}

double reduction_fresh_bytes(const TransferWork& t) {
  if (t.op_bytes < kFreshBufferBytes || t.group_size < 2) return 0;
  if (t.op == "allreduce") return t.op_bytes * (t.group_size - 1) / t.group_size;
  return t.op == "reduce_scatter" ? t.op_bytes : 0.0;
}

std::string link_rates_text(double bytes_s, double op_s) {
  return format_sig3(bytes_s / 1e9) + " GB/s and " + format_sig3(op_s * 1e6) + " us per operation";
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

namespace {

LinkRate assumed_link(double bytes_s, double op_s, CommKind comm) {
  LinkRate l;
  l.bytes_s = bytes_s;
  l.op_s = op_s;
  const char* plane = comm == CommKind::nccl ? "NCCL" : "MPI";
  l.text = "not measured, assumed " + link_rates_text(bytes_s, op_s) + " (" + plane + " defaults)";
  return l;
}

}  // namespace

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
  assume_links(r, comm);
  return r;
}

void assume_links(Rates& r, CommKind comm) {
  r.comm = comm;
  const bool nccl = comm == CommKind::nccl;
  // Conservative: NCCL over NVLink within a node and a fast network between them; MPI over shared memory (a few
  // us where its buffers are the host's; staged through the host on a GPU) and an ordinary network.
  const bool host = r.backend == Backend::cpu;  // MPI on the CPU: shared memory, no staging
  r.intra = assumed_link(nccl ? 100e9 : host ? 2e9 : 10e9, nccl ? 20e-6 : host ? 2e-6 : 30e-6, comm);
  r.inter = assumed_link(nccl ? 10e9 : 1e9, nccl ? 20e-6 : 30e-6, comm);
  r.group_s = nccl ? 2.0 : 0.01;
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
    const CaseWork w = case_work(c, job);
    e.skip_reason.push_back(w.skip_reason);
    if (w.skipped() || (rates.sample_time && rates.sample_time(c, job))) continue;  // priced by a model
    for (const auto& t : w.sample.transfer_ops) (t.group_nodes > 1 ? e.inter_used : e.intra_used) = true;
  }
  return e;
}

namespace {

std::string links_text(const PlanEstimate& e, const Rates& r, bool assumed_only) {
  std::vector<std::string> parts;
  if (e.intra_used && !(assumed_only && r.intra.measured)) parts.push_back("transfers within a node: " + r.intra.text);
  if (e.inter_used && !(assumed_only && r.inter.measured)) parts.push_back("transfers between nodes: " + r.inter.text);
  return join(parts, "; ");
}

}  // namespace

std::string transfers_text(const PlanEstimate& e, const Rates& r) { return links_text(e, r, false); }

std::string assumed_transfers_text(const PlanEstimate& e, const Rates& r) { return links_text(e, r, true); }

std::string busy_transfers_note(const PlanEstimate& e, const Rates& r) {
  if (r.backend != Backend::cpu || !e.intra_used || r.host.others <= 0) return "";
  return "on a busy host each transfer between ranks, and each barrier, waits until both ranks have a CPU; the "
         "estimate counts the host's share of the CPUs for the work and the data moved, not those waits: plans of "
         "many small transfers can take several times longer";
}

std::string large_setup_note(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job, bool cpu) {
  if (ranks_per_node(job) < 2) return "";
  int large = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!e.skip_reason[i].empty()) continue;
    const MemoryNeed need = memory_need(plan[i], cpu);
    large += need.host_bytes + (cpu ? need.device_bytes : 0.0) >= kLargeSetupBytes;
  }
  if (large == 0) return "";
  return std::to_string(large) + " case(s) set up 1 GiB or more of host memory per rank: making inputs is measured "
         "on one rank, and " + std::to_string(ranks_per_node(job)) + " ranks that touch fresh memory at once on one "
         "node can take several times longer (page faults do not scale across ranks): not in the estimate";
}

std::string shared_memory_note(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job,
                               const Rates& r) {
  if (r.backend != Backend::cpu || r.cache_bytes <= 0 || ranks_per_node(job) < 2) return "";
  int cases = 0, most = 1;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const CaseWork w = case_work(plan[i], job);
    if (!e.skip_reason[i].empty() || w.busy_ranks_per_node < 2) continue;
    const auto& st = w.sample.streams;
    if (std::none_of(st.begin(), st.end(),
                     [&](const StreamWork& s) { return call_passes_cache(s.call_bytes(), r.cache_bytes); })) {
      continue;
    }
    ++cases;
    most = std::max(most, w.busy_ranks_per_node);
  }
  if (cases == 0) return "";
  return std::to_string(cases) + " case(s) stream memory past the " + format_bytes(r.cache_bytes) + " cache on " +
         std::to_string(most) + " ranks of a node at once: the memory's rate is measured on one rank, and the "
         "ranks of a node share its bandwidth, so their samples can take up to " + std::to_string(most) +
         "x longer: not in the estimate";
}

std::vector<std::string> left_out_notes(const std::vector<Case>& plan, const PlanEstimate& e, const JobShape& job,
                                        const Rates& r, bool host_busy) {
  std::vector<std::string> notes{host_busy ? busy_transfers_note(e, r) : std::string(),
                                 large_setup_note(plan, e, job, r.backend == Backend::cpu),
                                 shared_memory_note(plan, e, job, r)};
  notes.erase(std::remove(notes.begin(), notes.end(), std::string()), notes.end());  // those that do not apply
  return notes;
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
