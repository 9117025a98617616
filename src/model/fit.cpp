#include "model/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/error.hpp"
#include "core/intervals.hpp"
#include "core/metrics.hpp"
#include "core/plan.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "model/least_squares.hpp"
#include "report/analysis.hpp"
#include "report/host_noise.hpp"
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
  std::string file;  // its path
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

// One case of a fit: what it measured and what the fit gives it.
struct CaseFit {
  const Measured* x = nullptr;
  double measured = 0, fitted = 0;
};

double log_ratio(const CaseFit& c) { return std::log(c.measured / c.fitted); }

// The geometric mean of measured / fitted of the cases, grouped by what `by` names them, in first-seen order.
template <typename By>
std::vector<std::pair<std::string, double>> group_ratios(const std::vector<CaseFit>& cases, By by) {
  std::vector<std::pair<std::string, std::vector<double>>> groups;
  for (const auto& c : cases) {
    const std::string name = by(*c.x);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (it == groups.end()) it = groups.insert(groups.end(), {name, {}});
    it->second.push_back(log_ratio(c));
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, logs] : groups) out.emplace_back(name, std::exp(mean(logs)));
  return out;
}

// "" unless the groups lie on both sides of the fit, the highest and lowest kPoorFitRms or more apart; else the two.
std::string split_text(const std::vector<std::pair<std::string, double>>& groups, const std::string& what) {
  if (groups.size() < 2) return "";
  const auto [lo, hi] = std::minmax_element(groups.begin(), groups.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
  if (!(lo->second < 1 && hi->second > 1 && hi->second / lo->second > 1 + kPoorFitRms)) return "";
  return what + ": the cases of " + hi->first + " measured " + format_sig3(hi->second) +
         "x the fit (geometric mean), those of " + lo->first + " " + format_sig3(lo->second) + "x";
}

double rms_of(const std::vector<CaseFit>& cases, const CaseFit* without) {
  double s = 0;
  int n = 0;
  for (const auto& c : cases) {
    if (&c == without) continue;
    s += std::pow((c.fitted - c.measured) / c.measured, 2);
    ++n;
  }
  return n == 0 ? 0.0 : std::sqrt(s / n);
}

// Why a fit's error is above kPoorFitRms, as far as its cases show it.
std::string why_poor(const std::vector<CaseFit>& cases, int terms) {
  std::vector<std::string> why;
  const auto worst = std::max_element(cases.begin(), cases.end(), [](const CaseFit& a, const CaseFit& b) {
    return std::fabs(log_ratio(a)) < std::fabs(log_ratio(b));
  });
  const double rest = rms_of(cases, &*worst);
  if (cases.size() > 2 && rest <= kPoorFitRms) {
    why.push_back("one case far off: " + worst->x->from + " measured " + format_sig3(worst->measured / worst->fitted) +
                  "x the fit; the others lie within " + format_number("%.1f%%", 100 * rest) + " rms");
  }
  const std::string files = split_text(group_ratios(cases, [](const Measured& x) { return x.file; }), "the files "
                                       "disagree (the machine or its load changed between the runs)");
  if (!files.empty()) why.push_back(files);
  const std::string modes = split_text(group_ratios(cases, [](const Measured& x) { return mode_name(x.c->mode); }),
                                       "serial and parallel cases disagree (ranks that run at once slow each other: "
                                       "shared memory bandwidth or a busy host, which the model does not describe)");
  if (!modes.empty()) why.push_back(modes);
  if (static_cast<int>(cases.size()) - terms <= 2) {
    why.push_back(std::to_string(cases.size()) + " case(s) for " + std::to_string(terms) + " term(s): too few to "
                  "tell a stray case from the model's shape; measure more sizes or shapes");
  }
  if (why.empty()) {
    why.push_back("the cases stray on both sides, none alone (the worst: " + worst->x->from + ", " +
                  format_sig3(worst->measured / worst->fitted) + "x): noisy measurements, or a shape the model does "
                  "not describe");
  }
  return join(why, "; ");
}

FitError error_of(std::vector<CaseFit> cases, int terms) {
  FitError e;
  e.cases = static_cast<int>(cases.size());
  e.terms = terms;
  std::set<std::string> files;
  for (const auto& c : cases) files.insert(c.x->file);
  e.files = static_cast<int>(files.size());
  e.rel_rms = rms_of(cases, nullptr);
  double logs = 0;
  for (const auto& c : cases) logs += std::pow(log_ratio(c), 2);
  e.log_se = e.freedom() > 0 ? std::sqrt(logs / e.freedom()) : 0.0;
  if (e.rel_rms > kPoorFitRms) e.poor = why_poor(cases, terms);
  std::stable_sort(cases.begin(), cases.end(), [](const CaseFit& a, const CaseFit& b) {
    return std::fabs(log_ratio(a)) > std::fabs(log_ratio(b));
  });
  for (std::size_t i = 0; i < cases.size() && i < kWorstKept; ++i) {
    e.worst.push_back({cases[i].x->from, cases[i].measured / cases[i].fitted});
  }
  return e;
}

// One gemm case: its rate per core and the relative half-width of its median's interval.
struct GemmRate {
  const Measured* x = nullptr;
  double rate = 0, rel_ci = 0;
};

GemmCurve gemm_curve(const GemmKey& key, const std::map<double, std::vector<GemmRate>>& sizes) {
  GemmCurve curve{key.backend, key.device, key.dtype, key.impl, {}, {}};
  std::vector<CaseFit> cases;
  for (const auto& [flops, rates] : sizes) {
    std::vector<double> r, ci;
    for (const auto& g : rates) r.push_back(g.rate), ci.push_back(g.rel_ci);
    curve.points.push_back({flops, median(r), maximum(ci), static_cast<int>(rates.size())});
    // A case's time goes as 1 / its rate: measured over fitted is the point's rate over the case's.
    for (const auto& g : rates) cases.push_back({g.x, curve.points.back().core_flops_s, g.rate});
  }
  curve.error = error_of(cases, static_cast<int>(curve.points.size()));
  return curve;
}

void add_gemm_points(const std::vector<Measured>& ms, Model& m) {
  std::map<GemmKey, std::map<double, std::vector<GemmRate>>> by_kind;  // key -> flops per call -> its cases
  for (const auto& x : ms) {
    if (!only_gemm(x.work.sample)) continue;
    const GemmWork& g = x.work.sample.gemms[0];
    const double busy = median(x.busy);
    const double cores = cores_used(x.run->backend, x.c->params, x.work, job_of(*x.run));
    const auto ci = median_interval(x.busy);
    by_kind[{x.run->backend, device_of(*x.run), dtype_name(g.dtype), gemm_impl_name(g.impl)}][g.flops_per_call]
        .push_back({&x, g.flops_per_call * g.calls / busy / cores, ci ? (ci->hi - ci->lo) / 2 / busy : 0.0});
  }
  for (const auto& [key, sizes] : by_kind) m.gemm.push_back(gemm_curve(key, sizes));
}

// The cases of a linear fit against what the fit gives them.
std::vector<CaseFit> linear_cases(const std::vector<const Measured*>& list, const std::vector<std::vector<double>>& x,
                                  const std::vector<double>& y, const std::vector<double>& coef) {
  std::vector<CaseFit> out;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double fitted = 0;
    for (std::size_t j = 0; j < coef.size(); ++j) fitted += x[i][j] * coef[j];
    // A case the fit gives no time (every term of its row dropped) counts as a billion times off, not as ln(0).
    out.push_back({list[i], y[i], std::max(fitted, y[i] * 1e-9)});
  }
  return out;
}

int terms_used(const std::vector<bool>& used) { return static_cast<int>(std::count(used.begin(), used.end(), true)); }

template <std::size_t N>
void set_unscaled(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                  const std::vector<bool>& used, Unscaled<N>& out) {
  const auto c = relative_unscaled_cov(x, y, used);
  for (std::size_t j = 0; j < N; ++j) {
    for (std::size_t k = 0; k < N; ++k) out[j][k] = c ? (*c)[j][k] : 0.0;
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
    CopyFit f{key.backend, key.kind, 0, 0, INFINITY, 0, {}, {}};
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
    f.error = error_of(linear_cases(list, rows, y, fit.coef), terms_used(fit.used));
    set_unscaled(rows, y, fit.used, f.cov_unscaled);
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
  TransferFit f{key.backend, key.comm, key.op, {}, {}, {}, {}, {}, {}};
  TransferData d;
  std::vector<bool> usable(kTransferTerms, false);
  for (const Measured* x : list) {
    const TransferWork& t = x->work.sample.transfer_ops[0];
    std::vector<double> per_op;
    for (double b : x->busy) per_op.push_back(b / t.count);
    const std::string alg = mpi_algorithm(x->run->mpi_library, x->run->mpi_settings, t.op, t.group_size, t.op_bytes);
    const auto row = transfer_row(t.op, t.group_size, t.group_nodes, t.op_bytes, t.bus_factor, alg);
    d.x.emplace_back(row.begin(), row.end());
    d.y.push_back(median(per_op));
    d.samples.push_back(per_op);
    for (int j = 0; j < kTransferTerms; ++j) usable[j] = usable[j] || row[j] > 0;
    const std::string protocol =
        mpi_protocol(x->run->mpi_settings, t.op, alg, t.group_size, t.group_nodes, t.op_bytes);
    f.points.push_back({t.group_size, t.group_nodes, t.op_bytes, d.y.back(), x->from, alg, protocol});
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
  if (!fit.ok) return f;
  f.error = error_of(linear_cases(list, d.x, d.y, fit.coef), terms_used(fit.used));
  set_unscaled(d.x, d.y, fit.used, f.cov_unscaled);
  set_covariance(bootstrap(d, fit.used), f);
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
  return {path,      run.date,  run.backend,          run.comm,         device_of(run),
          job.ranks, job.nodes, job.cores_per_node, run.mpi_library, run.mpi_settings};
}

void add_case(const CaseRecord& c, const Params& params, Model& m) {
  const auto same = [&](const ModelCase& k) {
    return k.experiment == c.experiment && k.workload == c.workload && k.mode == c.mode && k.params == params;
  };
  if (std::none_of(m.cases.begin(), m.cases.end(), same)) m.cases.push_back({c.experiment, c.workload, c.mode, params});
}

// Case numbers from 1, runs of them joined: "case 3", "cases 1-4, 7".
std::string case_list(const std::vector<int>& numbers) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    parts.push_back(std::to_string(numbers[i]) + (j > i ? "-" + std::to_string(numbers[j]) : ""));
    i = j + 1;
  }
  return (numbers.size() == 1 ? "case " : "cases ") + join(parts, ", ");
}

// "44%" or "23-76%": the shares, least to most.
std::string share_range(const std::vector<double>& shares) {
  const std::string lo = format_number("%.0f", 100 * minimum(shares));
  const std::string hi = format_number("%.0f", 100 * maximum(shares));
  return (lo == hi ? lo : lo + "-" + hi) + "%";
}

using NoisyCase = std::pair<int, HostNoise>;  // its number from 1, and why it is noisy

// Why the cases of one group (the same flags, the same crowding) are noisy: a case's own words, or the range of
// their shares.
std::string group_why(const std::vector<const NoisyCase*>& cases) {
  const HostNoise& first = cases[0]->second;
  if (cases.size() == 1) return first.why();
  std::vector<double> others, waits;
  for (const NoisyCase* c : cases) {
    others.push_back(c->second.others_share);
    waits.push_back(c->second.wait_share);
  }
  std::vector<std::string> parts;
  if (!first.busy.empty()) parts.push_back("host busy: others used " + share_range(others) + " of a node's CPUs");
  if (!first.descheduled.empty()) {
    parts.push_back("descheduled: a rank waited for a CPU " + share_range(waits) + " of the time it was ready to run");
  }
  if (!first.oversubscribed.empty()) parts.push_back("oversubscribed: " + first.oversubscribed);
  return join(parts, "; ");
}

// A file's noisy cases, those with the same flags (and crowding) together: "cases 5-8 (descheduled: ...)".
std::vector<std::string> noisy_groups(const std::vector<NoisyCase>& cases) {
  std::vector<std::pair<std::string, std::vector<const NoisyCase*>>> groups;  // by flags, in order of first case
  for (const auto& c : cases) {
    const HostNoise& h = c.second;
    const std::string flags = std::string{h.busy.empty() ? '-' : 'b', h.descheduled.empty() ? '-' : 'd'} +
                              h.oversubscribed;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == flags; });
    if (it == groups.end()) it = groups.insert(groups.end(), {flags, {}});
    it->second.push_back(&c);
  }
  std::vector<std::string> out;
  for (const auto& [flags, list] : groups) {
    std::vector<int> numbers;
    for (const NoisyCase* c : list) numbers.push_back(c->first);
    out.push_back(case_list(numbers) + " (" + group_why(list) + ")");
  }
  return out;
}

// The noisy cases of one file, in its note and (left out) in Model::noisy.
void note_noisy(const std::string& path, const std::vector<NoisyCase>& cases, bool fitted, Model& m) {
  if (cases.empty()) return;
  const std::vector<std::string> groups = noisy_groups(cases);
  m.notes.push_back(path + ": " + std::to_string(cases.size()) +
                    (fitted ? " noisy case(s) fitted anyway (--include-noisy): "
                            : " case(s) left out as noisy (--include-noisy fits them anyway): ") +
                    join(groups, "; "));
  for (const auto& g : groups) m.noisy.push_back(path + " " + g);
  m.noisy_fitted = fitted;
}

// Where noisy cases left a file's job shape with nothing fitted, the shapes the fit rests on, and the file left out:
// "fitted on 2 rank(s) on 1 node(s) only: b.h5 (3 rank(s) on 1 node(s)) left out, every case noisy".
void note_shapes(const std::vector<Measured>& ms, Model& m) {
  std::vector<std::string> kept, lost;
  for (const auto& s : m.sources) {
    const std::string shape = shape_text(s.ranks, s.nodes);
    const bool fitted = std::any_of(ms.begin(), ms.end(), [&](const Measured& x) { return x.file == s.path; });
    if (fitted && std::find(kept.begin(), kept.end(), shape) == kept.end()) kept.push_back(shape);
    if (!fitted) lost.push_back(s.path + " (" + shape + ")");
  }
  if (lost.empty() || kept.empty()) return;
  m.notes.push_back("fitted on " + join(kept, ", ") + " only: " + join(lost, ", ") + " left out, every case "
                    "noisy (above); terms that need another shape are extrapolated, without an interval");
}

// The cases of the files that ran, with the work each did on its file's job; those whose numbers the host makes
// doubtful only with `opt.include_noisy`.
std::vector<Measured> measured_cases(const std::vector<std::pair<std::string, RunRecord>>& runs,
                                     const FitOptions& opt, Model& m) {
  std::vector<Measured> ms;
  for (const auto& [path, run] : runs) {
    m.sources.push_back(source_of(path, run));
    std::vector<NoisyCase> noisy;
    for (const auto& c : run.cases) {
      const Params params = typed_params(c.workload, c.params);  // booleans as the schema types them
      add_case(c, params, m);
      if (c.status != CaseStatus::ok || c.reps == 0) continue;
      const std::string from = path + " case " + std::to_string(c.index + 1);
      if (const HostNoise noise = host_noise(run, c); noise.doubtful()) {
        noisy.emplace_back(static_cast<int>(c.index + 1), noise);
        if (!opt.include_noisy) continue;
      }
      Case k{c.index, c.experiment, c.workload, c.mode, params, {}};
      try {
        ms.push_back({&run, &c, path, from, case_work(k, job_of(run)), busy_per_sample(c)});
      } catch (const std::out_of_range&) {
        m.notes.push_back(from + ": workload '" + c.workload + "' is not one this version knows");
      }
    }
    note_noisy(path, noisy, opt.include_noisy, m);
  }
  note_shapes(ms, m);
  return ms;
}

Model fit_cases(const std::vector<std::pair<std::string, RunRecord>>& runs, const FitOptions& opt) {
  Model m;
  const std::vector<Measured> ms = measured_cases(runs, opt, m);
  add_gemm_points(ms, m);
  add_copy_fits(ms, m);
  add_transfer_fits(ms, m);
  m.sample_overhead_s = sample_overhead(ms);
  m.node_cores = 0;
  for (const auto& s : m.sources) {
    m.node_cores = m.node_cores == 0 ? s.node_cores : std::min(m.node_cores, s.node_cores);
  }
  return m;
}

bool fits_nothing(const Model& m) { return m.gemm.empty() && m.copies.empty() && m.transfers.empty(); }

}  // namespace

std::string nothing_left_text(const std::vector<std::string>& noisy) {
  constexpr std::size_t kNamed = 4;
  std::vector<std::string> named(noisy.begin(), noisy.begin() + static_cast<long>(std::min(kNamed, noisy.size())));
  if (noisy.size() > kNamed) named.push_back("and " + std::to_string(noisy.size() - kNamed) + " more");
  return "nothing left to fit: the cases that could be fitted were all left out as noisy, their numbers not to be "
         "trusted: " + join(named, "; ") + "; run them again on a quiet machine, or give --include-noisy to fit "
         "them anyway";
}

Model fit_model(const std::vector<std::pair<std::string, RunRecord>>& runs, const FitOptions& opt) {
  Model m = fit_cases(runs, opt);
  if (!fits_nothing(m)) return m;
  if (!m.noisy.empty() && !m.noisy_fitted && !fits_nothing(fit_cases(runs, {true}))) {
    throw RuntimeError(nothing_left_text(m.noisy));
  }
  throw InputError("nothing in the file(s) can be fitted: the model needs cases that ran (status ok) of one kind "
                   "of work each: gemm, copy, elementwise, collective or p2p");
}

}  // namespace gpuscale
