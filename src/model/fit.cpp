#include "model/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>

#include "core/error.hpp"
#include "core/intervals.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "model/least_squares.hpp"
#include "report/analysis.hpp"
#include "report/report.hpp"
#include "workloads/estimate.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

std::vector<double> busy_per_sample(const CaseRecord& c) {
  const auto in = taking_part(c);
  const int part = static_cast<int>(std::count(in.begin(), in.end(), true));
  if (part == 0 || c.reps == 0) return {};
  // As the report's op time (core/metrics), over the ranks that took part and per sample, not per operation.
  return mean_op_times(rows_of(c.device_time_s, c.reps, in), part, c.reps, 1);
}

JobShape job_of(const RunRecord& run) {
  JobShape job;
  job.ranks = static_cast<int>(std::max<std::size_t>(1, run.ranks.size()));
  job.nodes = std::max(1, run.nodes);
  int cores = 0;
  for (const auto& r : run.ranks) cores = cores == 0 ? r.node_cores : std::min(cores, r.node_cores);
  job.cores_per_node = std::max(1, cores);
  return job;
}

double cores_used(Backend backend, const Params& params, const CaseWork& w, const JobShape& job) {
  if (backend != Backend::cpu) return 1.0;
  const double threads = params.has("threads") ? static_cast<double>(params.get_int("threads")) : 1.0;
  return std::min(threads, static_cast<double>(job.cores_per_node) / std::max(1, w.busy_ranks_per_node));
}

namespace {

// What a case gives the fit: one kind of work alone.
struct Measured {
  const RunRecord* run = nullptr;
  const CaseRecord* c = nullptr;
  std::string from;  // "FILE case N"
  CaseWork work;
  std::vector<double> busy;  // per sample
};

bool only_gemm(const SampleWork& s) {
  return s.gemms.size() == 1 && s.transfer_ops.empty() && s.streams.empty();
}
bool only_transfer(const SampleWork& s) {
  return s.gemms.empty() && s.transfer_ops.size() == 1 && s.streams.empty();
}
// The one kind of memory traffic of a case that does nothing else; null for others.
const StreamWork* only_stream(const SampleWork& s) {
  if (!s.gemms.empty() || !s.transfer_ops.empty() || s.streams.size() != 1) return nullptr;
  return s.streams[0].bytes > 0 && s.streams[0].calls > 0 ? &s.streams[0] : nullptr;
}

std::string device_of(const RunRecord& run) { return run.ranks.empty() ? "" : run.ranks[0].device_name; }

// What a fit is of: cases with the same key are fitted together, others apart.
struct GemmKey {
  Backend backend;
  std::string device, dtype, impl;
  bool operator<(const GemmKey& o) const {
    return std::tie(backend, device, dtype, impl) < std::tie(o.backend, o.device, o.dtype, o.impl);
  }
};
struct StreamKey {
  Backend backend;
  std::string kind;
  bool operator<(const StreamKey& o) const { return std::tie(backend, kind) < std::tie(o.backend, o.kind); }
};
struct TransferKey {
  Backend backend;
  CommKind comm;
  std::string op;
  bool operator<(const TransferKey& o) const { return std::tie(backend, comm, op) < std::tie(o.backend, o.comm, o.op); }
};

void add_gemm_points(const std::vector<Measured>& ms, Model& m) {
  // key -> flops -> (rates, relative half-widths) of its cases
  std::map<GemmKey, std::map<double, std::pair<std::vector<double>, std::vector<double>>>> by_kind;
  for (const auto& x : ms) {
    if (!only_gemm(x.work.sample)) continue;
    const GemmWork& g = x.work.sample.gemms[0];
    const double busy = median(x.busy);
    const double cores = cores_used(x.run->backend, x.c->params, x.work, job_of(*x.run));
    auto& point = by_kind[{x.run->backend, device_of(*x.run), dtype_name(g.dtype), gemm_impl_name(g.impl)}]
                         [g.flops_per_call];
    point.first.push_back(g.flops_per_call * g.calls / busy / cores);
    const auto ci = median_interval(x.busy);
    point.second.push_back(ci ? (ci->hi - ci->lo) / 2 / busy : 0.0);
  }
  for (const auto& [key, sizes] : by_kind) {
    GemmCurve curve{key.backend, key.device, key.dtype, key.impl, {}};
    for (const auto& [flops, r] : sizes) curve.points.push_back({flops, median(r.first), maximum(r.second)});
    m.gemm.push_back(curve);
  }
}

void add_copy_fits(const std::vector<Measured>& ms, Model& m) {
  std::map<StreamKey, std::vector<const Measured*>> by_kind;
  for (const auto& x : ms) {
    if (const StreamWork* s = only_stream(x.work.sample)) by_kind[{x.run->backend, s->kind}].push_back(&x);
  }
  for (const auto& [key, list] : by_kind) {
    std::vector<std::vector<double>> rows;
    std::vector<double> y;
    CopyFit f{key.backend, key.kind, 0, 0, INFINITY, 0, 0, static_cast<int>(list.size())};
    for (const Measured* x : list) {
      const StreamWork& s = x->work.sample.streams[0];
      rows.push_back({s.calls, s.bytes});
      y.push_back(median(x->busy));
      f.min_bytes = std::min(f.min_bytes, s.bytes / s.calls);
      f.max_bytes = std::max(f.max_bytes, s.bytes / s.calls);
    }
    const LsqFit fit = relative_nonneg_lsq(rows, y, {true, true}, {0, 1}, {0, 0});
    if (!fit.ok || !fit.used[1]) {
      m.notes.push_back("copies " + key.kind + " (" + backend_name(key.backend) +
                        "): the sizes measured cannot tell latency "
                        "from bandwidth; measure at least two sizes");
      continue;
    }
    f.latency_s = fit.coef[0];
    f.bytes_s = 1.0 / fit.coef[1];
    f.rel_rms = relative_rms(rows, y, fit.coef);
    m.copies.push_back(f);
  }
}


// One row of the transfer fit per case: the op's steps and wire bytes, and its time per operation.
struct TransferData {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  std::vector<std::vector<double>> samples;  // per case: busy time per operation of each sample
};

constexpr int kBootstrapReplicates = 200;

// Latencies go before bandwidths, and a negative bandwidth costs its scope's latency first (least_squares.hpp).
const std::vector<int> kTransferDropOrder{kAlphaIntra, kAlphaInter, kSecPerByteIntra, kSecPerByteInter};
const std::vector<int> kTransferDropFor{kAlphaIntra, kAlphaInter, kAlphaIntra, kAlphaInter};

// The fit on the medians of `samples` resampled with replacement (fixed seed: the same files give the same model).
std::vector<std::vector<double>> bootstrap(const TransferData& d, const std::vector<bool>& used) {
  std::mt19937_64 rng(20261126);
  std::vector<std::vector<double>> out;
  for (int b = 0; b < kBootstrapReplicates; ++b) {
    std::vector<double> y;
    for (const auto& s : d.samples) {
      std::uniform_int_distribution<std::size_t> pick(0, s.size() - 1);
      std::vector<double> r(s.size());
      for (auto& v : r) v = s[pick(rng)];
      y.push_back(median(r));
    }
    // The terms of the full fit only, none dropped: a replicate varies the values, not the model's form.
    const LsqFit f = relative_nonneg_lsq(d.x, y, used, kTransferDropOrder, kTransferDropFor);
    if (f.ok) out.push_back(f.coef);
  }
  return out;
}

void set_covariance(const std::vector<std::vector<double>>& reps, TransferFit& f) {
  if (reps.size() < 2) return;
  std::array<double, kTransferTerms> mean{};
  for (const auto& c : reps) {
    for (int j = 0; j < kTransferTerms; ++j) mean[j] += c[j] / static_cast<double>(reps.size());
  }
  for (int j = 0; j < kTransferTerms; ++j) {
    for (int k = 0; k < kTransferTerms; ++k) {
      double s = 0;
      for (const auto& c : reps) s += (c[j] - mean[j]) * (c[k] - mean[k]);
      f.cov[j][k] = s / static_cast<double>(reps.size() - 1);
    }
  }
}

TransferFit fit_transfer(const TransferKey& key, const std::vector<const Measured*>& list, Model& m) {
  TransferFit f{key.backend, key.comm, key.op, {}, {}, {}, 0, {}};
  TransferData d;
  std::vector<bool> usable(kTransferTerms, false);
  for (const Measured* x : list) {
    const TransferWork& t = x->work.sample.transfer_ops[0];
    std::vector<double> per_op;
    for (double b : x->busy) per_op.push_back(b / t.count);
    const auto row = transfer_row(t.op, t.group_size, t.group_nodes, t.op_bytes * t.bus_factor);
    d.x.emplace_back(row.begin(), row.end());
    d.y.push_back(median(per_op));
    d.samples.push_back(per_op);
    for (int j = 0; j < kTransferTerms; ++j) usable[j] = usable[j] || row[j] > 0;
    f.points.push_back({t.group_size, t.group_nodes, t.op_bytes, d.y.back(), x->from});
  }
  const LsqFit fit = relative_nonneg_lsq(d.x, d.y, usable, kTransferDropOrder, kTransferDropFor);
  for (int j = 0; j < kTransferTerms; ++j) {
    f.coef[j] = fit.ok ? fit.coef[j] : 0.0;
    f.fitted[j] = fit.ok && fit.used[j];
    if (usable[j] && !f.fitted[j]) {
      m.notes.push_back(key.op + " over " + comm_name(key.comm) + ": " + transfer_term_name(j) +
                        " could not be fitted (the "
                        "sizes and shapes measured cannot tell it apart, or it came out negative); taken as 0");
    }
  }
  f.rel_rms = fit.ok ? relative_rms(d.x, d.y, fit.coef) : 0.0;
  if (fit.ok) set_covariance(bootstrap(d, fit.used), f);
  return f;
}

void add_transfer_fits(const std::vector<Measured>& ms, Model& m) {
  std::map<TransferKey, std::vector<const Measured*>> by_op;
  bool alone = false;
  for (const auto& x : ms) {
    if (!only_transfer(x.work.sample)) continue;
    if (x.work.sample.transfer_ops[0].group_size < 2) {  // nothing crosses between ranks
      alone = true;
      continue;
    }
    if (!x.c->comm) continue;  // no data plane: nothing ran between ranks
    by_op[{x.run->backend, *x.c->comm, x.work.sample.transfer_ops[0].op}].push_back(&x);
  }
  for (const auto& [key, list] : by_op) m.transfers.push_back(fit_transfer(key, list, m));
  if (alone) m.notes.push_back("transfers in groups of one rank move nothing between ranks: not fitted");
}

// The host's time around a sample's device time (synchronizing, events), median over every rank and sample.
double sample_overhead(const std::vector<Measured>& ms) {
  std::vector<double> gaps;
  for (const auto& x : ms) {
    const CaseRecord& c = *x.c;
    for (std::size_t i = 0; i < c.device_time_s.size(); ++i) {
      gaps.push_back(std::max(0.0, c.wall_end_s[i] - c.wall_start_s[i] - c.device_time_s[i]));
    }
  }
  return gaps.empty() ? 0.0 : median(gaps);
}

ModelSource source_of(const std::string& path, const RunRecord& run) {
  const JobShape job = job_of(run);
  return {path, run.date, run.backend, run.comm, device_of(run), job.ranks, job.nodes, job.cores_per_node};
}

void add_case(const CaseRecord& c, const Params& params, Model& m) {
  const auto same = [&](const ModelCase& k) {
    return k.experiment == c.experiment && k.workload == c.workload && k.mode == c.mode && k.params == params;
  };
  if (std::none_of(m.cases.begin(), m.cases.end(), same)) m.cases.push_back({c.experiment, c.workload, c.mode, params});
}

// The cases of the files that ran, with the work each did on its file's job.
std::vector<Measured> measured_cases(const std::vector<std::pair<std::string, RunRecord>>& runs, Model& m) {
  std::vector<Measured> ms;
  for (const auto& [path, run] : runs) {
    m.sources.push_back(source_of(path, run));
    for (const auto& c : run.cases) {
      const Params params = typed_params(c.workload, c.params);  // booleans as the schema types them
      add_case(c, params, m);
      if (c.status != CaseStatus::ok || c.reps == 0) continue;
      Case k{c.index, c.experiment, c.workload, c.mode, params, {}};
      try {
        ms.push_back({&run, &c, path + " case " + std::to_string(c.index + 1), case_work(k, job_of(run)),
                      busy_per_sample(c)});
      } catch (const std::out_of_range&) {
        m.notes.push_back(path + " case " + std::to_string(c.index + 1) + ": workload '" + c.workload +
                          "' is not one this version knows");
      }
    }
  }
  return ms;
}

}  // namespace

Model fit_model(const std::vector<std::pair<std::string, RunRecord>>& runs) {
  Model m;
  const std::vector<Measured> ms = measured_cases(runs, m);
  add_gemm_points(ms, m);
  add_copy_fits(ms, m);
  add_transfer_fits(ms, m);
  m.sample_overhead_s = sample_overhead(ms);
  m.node_cores = 0;
  for (const auto& s : m.sources) m.node_cores = m.node_cores == 0 ? s.node_cores : std::min(m.node_cores, s.node_cores);
  if (m.gemm.empty() && m.copies.empty() && m.transfers.empty()) {
    throw InputError("nothing in the file(s) can be fitted: the model needs cases that ran (status ok) of one kind "
                     "of work each: gemm, copy, elementwise, collective or p2p");
  }
  return m;
}

}  // namespace gpuscale
