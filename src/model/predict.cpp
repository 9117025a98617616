#include "model/predict.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/plan.hpp"
#include "core/text.hpp"
#include "device/device.hpp"
#include "model/fit.hpp"
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
  }
  for (const auto& t : m.transfers) job.spans.push_back(transfer_span(t));
  return job;
}

TransferSpan transfer_span(const TransferFit& f) {
  TransferSpan s{f.points.size(), 0, 0, INFINITY, 0};
  for (const auto& p : f.points) {
    s.ranks = std::max(s.ranks, p.ranks);
    s.nodes = std::max(s.nodes, p.nodes);
    s.lo_bytes = std::min(s.lo_bytes, p.bytes);
    s.hi_bytes = std::max(s.hi_bytes, p.bytes);
  }
  return s;
}

namespace {

// A part of a sample's time and the half-width of its 95% interval.
struct Part {
  double s = 0, half = 0;
  Part& operator+=(const Part& o) {
    s += o.s;
    half += o.half;  // added, not in quadrature: the errors of one model's terms are not independent
    return *this;
  }
};

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
  const double w = a.flops == b.flops ? 0.0 : std::log(g.flops_per_call / b.flops) / std::log(a.flops / b.flops);
  const double rate = b.core_flops_s + w * (a.core_flops_s - b.core_flops_s);
  const double rel = std::max(a.rel_ci, b.rel_ci) + std::fabs(a.core_flops_s - b.core_flops_s) / 2 / rate;
  const double s = g.calls * g.flops_per_call / rate / cores;
  return {s, rel * s};
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
  const double s = calls * f->latency_s + bytes / f->bytes_s;
  return {s, f->rel_rms * s};
}

Part copies_part(const Ctx& x, const SampleWork& w) {
  Part p;
  for (const auto& s : w.streams) p += copy_part(x, s.kind, s.bytes, std::max(1.0, s.calls));
  return p;
}

void flag_transfer_range(const Ctx& x, const TransferFit& f, const TransferWork& t) {
  const auto i = static_cast<std::size_t>(&f - x.m.transfers.data());
  const TransferSpan s = i < x.job.spans.size() && x.job.spans[i].points == f.points.size() ? x.job.spans[i]
                                                                                            : transfer_span(f);
  if (t.group_size > s.ranks) x.beyond(t.op + " on " + std::to_string(t.group_size) + " ranks, beyond the " +
                                       std::to_string(s.ranks) + " measured");
  if (t.group_nodes > s.nodes) x.beyond(t.op + " on " + std::to_string(t.group_nodes) + " nodes, beyond the " +
                                        std::to_string(s.nodes) + " measured");
  if (t.op_bytes < s.lo_bytes || t.op_bytes > s.hi_bytes) {
    x.beyond(t.op + " of " + format_bytes(t.op_bytes) + ", beyond the " + format_bytes(s.lo_bytes) + "-" +
             format_bytes(s.hi_bytes) + " measured");
  }
}

// One operation's time and half-width: the fit's row times its terms, the bootstrap's spread and the fit's residuals.
Part op_part(const Ctx& x, const TransferWork& t) {
  const TransferFit* f = x.job.comm ? x.m.find_transfer(x.job.backend, *x.job.comm, t.op) : nullptr;
  if (!f) {
    x.why("no fit for " + t.op + " over " + comm_name(x.job.comm) + " on the " +
          backend_name(x.job.backend) + " backend in the model's files");
    return {};
  }
  const auto row = transfer_row(t.op, t.group_size, t.group_nodes, t.op_bytes * t.bus_factor);
  for (int j = 0; j < kTransferTerms; ++j) {
    if (row[j] <= 0 || f->fitted[j]) continue;
    if (j == kSecPerByteIntra || j == kSecPerByteInter) {
      x.why(t.op + ": the files measured no " + transfer_term_name(j) + " (" + (j == kSecPerByteInter ?
            "no group across nodes" : "no group inside one node") + ")");
      return {};
    }
    x.beyond(t.op + ": " + transfer_term_name(j) + " not fitted, taken as 0");
  }
  flag_transfer_range(x, *f, t);
  double s = 0, var = 0;
  for (int j = 0; j < kTransferTerms; ++j) {
    s += row[j] * f->coef[j];
    for (int k = 0; k < kTransferTerms; ++k) var += row[j] * f->cov[j][k] * row[k];
  }
  return {s, 1.96 * std::sqrt(std::max(0.0, var)) + f->rel_rms * s};
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
    wire += {op.s * t.count, op.half * t.count};
    if (w.sample.transfer_ops.size() == 1 && c.params.has("iters") && op.s > 0) {
      const double per_iter = t.count / static_cast<double>(c.params.get_int("iters"));
      x.out.op_time_s = op.s * per_iter;
      x.out.op_lo_s = (op.s - op.half) * per_iter;
      x.out.op_hi_s = (op.s + op.half) * per_iter;
      x.out.busbw_gbps = t.op_bytes * t.bus_factor / op.s / 1e9;
    }
  }
  Breakdown& b = x.out.parts;
  const double busy = w.sample.overlapped ? std::max(gemm.s, copies.s + wire.s) : gemm.s + copies.s + wire.s;
  b.compute_s = w.sample.overlapped ? gemm.s : gemm.s + copies.s;
  b.exposed_s = std::max(0.0, busy - b.compute_s);
  b.wire_s = wire.s;
  b.overhead_s = x.m.sample_overhead_s;
  const double half = gemm.half + copies.half + wire.half;
  const double turns = static_cast<double>(x.out.turns);
  for (double* v : {&b.compute_s, &b.exposed_s, &b.wire_s, &b.overhead_s}) *v *= turns;
  b.total_s = b.sum();
  x.out.median_s = b.total_s;
  x.out.lo_s = std::max(0.0, b.total_s - half * turns);
  x.out.hi_s = b.total_s + half * turns;
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
