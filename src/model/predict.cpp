#include "model/predict.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/device.hpp"
#include "model/fit.hpp"
#include "model/least_squares.hpp"
#include "workloads/estimate.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

PredictJob predict_job(const Model& m, int ranks, int nodes) {
  PredictJob job;
  job.shape.ranks = ranks;
  job.shape.nodes = nodes;
  job.shape.cores_per_node = std::max(1, m.node_cores);
  if (!m.sources.empty()) {
    job.backend = m.sources[0].backend;
    job.comm = m.sources[0].comm;
    job.mpi_library = m.sources[0].mpi_library;
    job.mpi_settings = m.sources[0].mpi_settings;
  }
  for (const auto& t : m.transfers) job.spans.push_back(transfer_span(t));
  return job;
}

TransferSpan transfer_span(const TransferFit& f) {
  TransferSpan s{f.points.size(), 0, 0, INFINITY, 0, {}, {}};
  for (const auto& p : f.points) {
    const std::pair<int, int> shape{p.ranks, p.nodes};
    if (std::find(s.shapes.begin(), s.shapes.end(), shape) == s.shapes.end()) s.shapes.push_back(shape);
    s.ranks = std::max(s.ranks, p.ranks);
    s.nodes = std::max(s.nodes, p.nodes);
    s.lo_bytes = std::min(s.lo_bytes, p.bytes);
    s.hi_bytes = std::max(s.hi_bytes, p.bytes);
    const auto row = transfer_row(f.op, p.ranks, p.nodes, p.bytes, 1.0, p.algorithm);
    for (int j = 0; j < kTransferTerms; ++j) s.measured[j] = s.measured[j] || row[j] > 0;
  }
  return s;
}

namespace {

// A part of a sample's time and how far its 95% interval reaches above and below it.
struct Part {
  double s = 0, up = 0, down = 0;
  Part& operator+=(const Part& o) {
    s += o.s;
    up += o.up;  // added, not in quadrature: the errors of one model's terms are not independent
    down += o.down;
    return *this;
  }
};

// `s` with the interval [s e^-w, s e^w]: the fit's residuals are ratios, so its interval is one of factors.
Part with_log_half(double s, double w) { return {s, s * std::expm1(w), -s * std::expm1(-w)}; }

// The half-width, in log, of the 95% interval of a prediction from a fit with error `e` at leverage `h`, with the
// sampling spread of the measured medians (relative standard deviation) on top.
double log_half_width(const FitError& e, double h, double sampling_sd) {
  const double t = e.freedom() >= 1 ? t_quantile_975(e.freedom()) : 0.0;  // 0: Ctx::judge says there is none
  return std::sqrt(std::pow(t * e.log_se, 2) * (1 + h) + std::pow(1.96 * sampling_sd, 2));
}

// Leverage of a row predicted as `s`: (row / s)^T C (row / s).
template <std::size_t N>
double leverage(const std::array<double, N>& row, double s, const Unscaled<N>& c) {
  double h = 0;
  for (std::size_t j = 0; j < N; ++j) {
    for (std::size_t k = 0; k < N; ++k) h += row[j] / s * c[j][k] * row[k] / s;
  }
  return std::max(0.0, h);
}

struct Ctx {
  const Model& m;
  const PredictJob& job;
  Prediction& out;
  void why(const std::string& reason) const {
    if (out.unpredictable.empty()) out.unpredictable = reason;
  }
  void beyond(const std::string& what) const {
    if (std::find(out.extrapolated.begin(), out.extrapolated.end(), what) == out.extrapolated.end()) {
      out.extrapolated.push_back(what);
    }
  }
  void no_interval(const std::string& reason) const {
    if (out.no_interval.empty()) out.no_interval = reason;
  }
  // The fit's error, where a prediction from it needs saying or stops an interval.
  void judge(const std::string& name, const FitError& e) const {
    if (!e.poor.empty()) {
      const std::string text = name + ": " + fit_error_text(e) + "; " + e.poor;
      if (std::find(out.poor_fits.begin(), out.poor_fits.end(), text) == out.poor_fits.end()) {
        out.poor_fits.push_back(text);
      }
    }
    if (e.freedom() < 1) {
      no_interval(name + ": " + std::to_string(e.cases) + " case(s) for " + std::to_string(e.terms) + " term(s) "
                  "leave no degree of freedom: nothing shows how far a case strays from the fit");
    }
    if (e.files < 2) {
      no_interval(name + ": fitted from one run: its cases show no spread between runs, and another run strays "
                  "by that too (fit two runs or more for an interval)");
    }
  }
  // No interval where `v` lies more than kFarBeyond beyond [lo, hi].
  void far(const std::string& what, double v, double lo, double hi, const std::string& range) const {
    if (v > kFarBeyond * hi || v * kFarBeyond < lo) {
      no_interval(what + " more than " + format_number("%g", kFarBeyond) + "x beyond the " + range + " measured");
    }
  }
};

// The rate per core at `flops` per call: interpolated in log size between the measured sizes, the nearest beyond
// them; the half-width adds how much the rate moves between the two sizes around it.
Part gemm_part(const Ctx& x, const GemmWork& g, double cores) {
  const GemmCurve* curve = x.m.find_gemm(x.job.backend, dtype_name(g.dtype), gemm_impl_name(g.impl));
  if (!curve || curve->points.empty()) {
    x.why(std::string("no GEMM rate for ") + dtype_name(g.dtype) + " (" + gemm_impl_name(g.impl) + ") on the " +
          backend_name(x.job.backend) + " backend in the model's files");
    return {};
  }
  const auto& pts = curve->points;
  const auto hi = std::lower_bound(pts.begin(), pts.end(), g.flops_per_call,
                                   [](const GemmPoint& p, double f) { return p.flops < f; });
  GemmPoint a = hi == pts.end() ? pts.back() : *hi, b = a;
  if (hi != pts.begin() && hi != pts.end() && hi->flops != g.flops_per_call) b = *(hi - 1);
  if (g.flops_per_call < pts.front().flops || g.flops_per_call > pts.back().flops) {
    x.beyond(std::string("gemm ") + dtype_name(g.dtype) + " size (" + format_sig3(g.flops_per_call) +
             " flops per call) beyond the measured " + format_sig3(pts.front().flops) + "-" +
             format_sig3(pts.back().flops));
  }
  x.far(std::string("gemm ") + dtype_name(g.dtype) + " of " + format_sig3(g.flops_per_call) + " flops per call",
        g.flops_per_call, pts.front().flops, pts.back().flops, format_sig3(pts.front().flops) + "-" +
        format_sig3(pts.back().flops));
  x.judge(fit_name(*curve), curve->error);
  const double w = a.flops == b.flops ? 0.0 : std::log(g.flops_per_call / b.flops) / std::log(a.flops / b.flops);
  const double rate = b.core_flops_s + w * (a.core_flops_s - b.core_flops_s);
  // The rate is the median of each size's cases (about their mean: leverage 1 / cases), weighed as interpolated;
  // how much it moves between the two sizes around it is added, as the curve between them is not known.
  const double h = w * w / a.cases + (1 - w) * (1 - w) / b.cases;
  const double between = std::fabs(a.core_flops_s - b.core_flops_s) / 2 / rate;
  const double s = g.calls * g.flops_per_call / rate / cores;
  return with_log_half(s, log_half_width(curve->error, h, std::max(a.rel_ci, b.rel_ci) / 1.96) + between);
}

Part copy_part(const Ctx& x, const std::string& kind, double bytes, double calls) {
  if (bytes <= 0) return {};
  const CopyFit* f = x.m.find_copy(x.job.backend, kind);
  if (!f) {
    x.why(std::string("no rate for copies ") + kind + " on the " + backend_name(x.job.backend) +
          " backend in the model's files");
    return {};
  }
  if (bytes / calls < f->min_bytes || bytes / calls > f->max_bytes) {
    x.beyond(std::string("copies ") + kind + " of " + format_bytes(bytes / calls) + " beyond the measured " +
             format_bytes(f->min_bytes) + "-" + format_bytes(f->max_bytes));
  }
  x.far("copies " + kind + " of " + format_bytes(bytes / calls), bytes / calls, f->min_bytes, f->max_bytes,
        format_bytes(f->min_bytes) + "-" + format_bytes(f->max_bytes));
  x.judge(fit_name(*f), f->error);
  const double s = calls * f->latency_s + bytes / f->bytes_s;
  return with_log_half(s, log_half_width(f->error, leverage<2>({calls, bytes}, s, f->cov_unscaled), 0.0));
}

Part copies_part(const Ctx& x, const SampleWork& w) {
  Part p;
  for (const auto& s : w.streams) p += copy_part(x, s.kind, s.bytes, std::max(1.0, s.calls));
  return p;
}

const TransferSpan& span_of(const Ctx& x, const TransferFit& f, TransferSpan& own) {
  const auto i = static_cast<std::size_t>(&f - x.m.transfers.data());
  if (i < x.job.spans.size() && x.job.spans[i].points == f.points.size()) return x.job.spans[i];
  own = transfer_span(f);
  return own;
}

void flag_transfer_range(const Ctx& x, const TransferSpan& s, const TransferWork& t) {
  x.far(t.op + " on " + std::to_string(t.group_size) + " ranks", t.group_size, 1, s.ranks,
        std::to_string(s.ranks) + " ranks");
  x.far(t.op + " on " + std::to_string(t.group_nodes) + " nodes", t.group_nodes, 1, s.nodes,
        std::to_string(s.nodes) + " node(s)");
  x.far(t.op + " of " + format_bytes(t.op_bytes), t.op_bytes, s.lo_bytes, s.hi_bytes,
        format_bytes(s.lo_bytes) + "-" + format_bytes(s.hi_bytes));
  if (t.group_size > s.ranks) x.beyond(t.op + " on " + std::to_string(t.group_size) + " ranks, beyond the " +
                                       std::to_string(s.ranks) + " measured");
  if (t.group_nodes > s.nodes) x.beyond(t.op + " on " + std::to_string(t.group_nodes) + " nodes, beyond the " +
                                        std::to_string(s.nodes) + " measured");
  // One shape measured: how the time grows with the steps of more ranks or nodes is the model's assumption alone.
  const std::pair<int, int> shape{t.group_size, t.group_nodes};
  if (s.shapes.size() == 1 && s.shapes[0] != shape) {
    const std::string one =
        t.op + " fitted on one group shape only (" + shape_text(s.shapes[0].first, s.shapes[0].second) + ")";
    x.beyond(one + ", predicted on " + shape_text(t.group_size, t.group_nodes));
    x.no_interval(one + ": how its time grows with the ranks and nodes was not measured (fit two shapes or more)");
  }
  if (t.op_bytes < s.lo_bytes || t.op_bytes > s.hi_bytes) {
    x.beyond(t.op + " of " + format_bytes(t.op_bytes) + ", beyond the " + format_bytes(s.lo_bytes) + "-" +
             format_bytes(s.hi_bytes) + " measured");
  }
}

// A regime the files did not measure: the library runs another algorithm, or sends another way, for the target
// than for any case fitted.
void flag_unmeasured_regime(const Ctx& x, const TransferFit& f, const TransferWork& t, const std::string& alg,
                            const std::string& protocol) {
  if ((alg.empty() && protocol.empty()) || f.points.empty()) return;
  const bool measured = std::any_of(f.points.begin(), f.points.end(), [&](const TransferPoint& p) {
    return p.algorithm == alg && p.protocol == protocol;
  });
  if (measured) return;
  std::vector<std::string> from;
  if (!alg.empty()) from.push_back(mpi_algorithm_source(x.job.mpi_settings, t.op));
  if (!protocol.empty()) from.push_back("btl_tcp_eager_limit=" + mpi_setting(x.job.mpi_settings, "btl_tcp_eager_limit"));
  const std::string what = t.op + " of " + format_bytes(t.op_bytes) + " on " + std::to_string(t.group_size) +
                           " ranks runs " + regime_text(alg, protocol) + " (" + join(from, "; ") + ")";
  x.beyond(what + ", which the files never ran");
  x.no_interval(what + "; the files measured " + algorithms_measured(f) + ": that regime was not measured");
}

// One operation's time and half-width: the fit's row times its terms, the bootstrap's spread and the fit's residuals.
Part op_part(const Ctx& x, const TransferWork& t) {
  const TransferFit* f = x.job.comm ? x.m.find_transfer(x.job.backend, *x.job.comm, t.op) : nullptr;
  if (!f) {
    x.why("no fit for " + t.op + " over " + comm_name(x.job.comm) + " on the " +
          backend_name(x.job.backend) + " backend in the model's files");
    return {};
  }
  const std::string alg = x.job.comm == CommKind::mpi ? mpi_algorithm(x.job.mpi_library, x.job.mpi_settings, t.op,
                                                                      t.group_size, t.op_bytes)
                                                        : "";
  const std::string protocol =
      x.job.comm == CommKind::mpi
          ? mpi_protocol(x.job.mpi_settings, t.op, alg, t.group_size, t.group_nodes, t.op_bytes)
          : "";
  flag_unmeasured_regime(x, *f, t, alg, protocol);
  const auto row = transfer_row(t.op, t.group_size, t.group_nodes, t.op_bytes, t.bus_factor, alg);
  for (int j = 0; j < kTransferTerms; ++j) {
    if (row[j] <= 0 || f->fitted[j]) continue;
    if (j == kSecPerByteIntra || j == kSecPerByteInter) {
      x.why(t.op + ": the files measured no " + transfer_term_name(j) + " (" + (j == kSecPerByteInter ?
            "no group across nodes" : "no group inside one node") + ")");
      return {};
    }
    x.beyond(t.op + ": " + transfer_term_name(j) + " not fitted, taken as 0");
  }
  TransferSpan own;
  const TransferSpan& span = span_of(x, *f, own);
  flag_transfer_range(x, span, t);
  for (int j = 0; j < kTransferTerms; ++j) {
    if (row[j] > 0 && !span.measured[j]) x.no_interval(t.op + ": the files measured no " + transfer_term_name(j));
  }
  x.judge(fit_name(*f), f->error);
  double s = 0, var = 0;
  for (int j = 0; j < kTransferTerms; ++j) {
    s += row[j] * f->coef[j];
    for (int k = 0; k < kTransferTerms; ++k) var += row[j] * f->cov[j][k] * row[k];
  }
  if (!(s > 0)) return {};
  const double bootstrap_sd = std::sqrt(std::max(0.0, var)) / s;  // the terms' spread over the samples drawn again
  return with_log_half(s, log_half_width(f->error, leverage(row, s, f->cov_unscaled), bootstrap_sd));
}

// One sample of one rank: its parts, and op time and busbw where it moves one kind of operation.
void predict_sample(const Ctx& x, const ModelCase& c, const CaseWork& w) {
  const JobShape& shape = x.job.shape;
  const double cores = cores_used(x.job.backend, c.params, w, shape);
  Part gemm, wire;
  for (const auto& g : w.sample.gemms) gemm += gemm_part(x, g, cores);
  const Part copies = copies_part(x, w.sample);
  for (const auto& t : w.sample.transfer_ops) {
    const Part op = op_part(x, t);
    wire += {op.s * t.count, op.up * t.count, op.down * t.count};
    if (w.sample.transfer_ops.size() == 1 && c.params.has("iters") && op.s > 0) {
      const double per_iter = t.count / static_cast<double>(c.params.get_int("iters"));
      x.out.op_time_s = op.s * per_iter;
      x.out.op_lo_s = (op.s - op.down) * per_iter;
      x.out.op_hi_s = (op.s + op.up) * per_iter;
      x.out.busbw_gbps = t.op_bytes * t.bus_factor / op.s / 1e9;
    }
  }
  Breakdown& b = x.out.parts;
  const double busy = w.sample.overlapped ? std::max(gemm.s, copies.s + wire.s) : gemm.s + copies.s + wire.s;
  b.compute_s = w.sample.overlapped ? gemm.s : gemm.s + copies.s;
  b.exposed_s = std::max(0.0, busy - b.compute_s);
  b.wire_s = wire.s;
  b.overhead_s = x.m.sample_overhead_s;
  const double turns = static_cast<double>(x.out.turns);
  for (double* v : {&b.compute_s, &b.exposed_s, &b.wire_s, &b.overhead_s}) *v *= turns;
  b.total_s = b.sum();
  x.out.median_s = b.total_s;
  x.out.lo_s = std::max(0.0, b.total_s - (gemm.down + copies.down + wire.down) * turns);
  x.out.hi_s = b.total_s + (gemm.up + copies.up + wire.up) * turns;
}

}  // namespace

Prediction predict_case(const Model& m, const ModelCase& c, const PredictJob& job) {
  Prediction out;
  CaseWork w;
  try {
    w = case_work(Case{0, c.experiment, c.workload, c.mode, c.params, {}}, job.shape);
  } catch (const std::out_of_range&) {
    out.unpredictable = "workload '" + c.workload + "' is not one this version knows";
    return out;
  }
  out.skip_reason = w.skip_reason;
  if (w.skipped()) return out;
  out.turns = w.turns;
  const Ctx x{m, job, out};
  predict_sample(x, c, w);
  if (!out.unpredictable.empty()) {
    const std::string why = out.unpredictable;
    out = Prediction{};
    out.unpredictable = why;
  }
  return out;
}

}  // namespace gpuscale
