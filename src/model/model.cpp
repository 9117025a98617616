#include "model/model.hpp"

#include <algorithm>
#include <cmath>

#include "core/text.hpp"

namespace gpuscale {

const char* transfer_term_name(int term) {
  switch (term) {
    case kAlphaIntra: return "latency per step inside a node";
    case kAlphaInter: return "latency per step between nodes";
    case kSecPerByteIntra: return "bandwidth inside a node";
    default: return "bandwidth between nodes";
  }
}

std::string fit_name(const GemmCurve& g) {
  return "gemm " + g.dtype + " (" + g.impl + ", " + backend_name(g.backend) + ")";
}
std::string fit_name(const CopyFit& c) { return "copies " + c.kind + " (" + backend_name(c.backend) + ")"; }
std::string fit_name(const TransferFit& t) {
  return t.op + " over " + comm_name(t.comm) + " (" + backend_name(t.backend) + ")";
}

std::string fit_error_text(const FitError& e) {
  std::string out = "fit error " + format_number("%.1f%%", 100 * e.rel_rms) + " rms over " +
                    std::to_string(e.cases) + " case(s)";
  std::vector<std::string> worst;
  for (const auto& r : e.worst) {
    if (std::fabs(r.ratio - 1) >= 0.005) worst.push_back(r.from + " (measured " + format_sig3(r.ratio) + "x the fit)");
  }
  return worst.empty() ? out : out + ", worst: " + join(worst, ", ");
}

double ring_steps(const std::string& op, int n) {
  const double k = std::max(0, n - 1);
  if (op == "allreduce") return 2 * k;
  if (op == "allgather" || op == "reduce_scatter" || op == "alltoall" || op == "broadcast" || op == "reduce") return k;
  return n > 1 ? 1.0 : 0.0;  // point to point: sendrecv, pairs, p2p-*
}

double inter_steps(const std::string& op, int nodes) { return nodes > 1 ? ring_steps(op, nodes) : 0.0; }

std::array<double, kTransferTerms> transfer_row(const std::string& op, int ranks, int nodes, double wire_bytes) {
  std::array<double, kTransferTerms> row{};
  const double inter = inter_steps(op, nodes);
  row[kAlphaIntra] = std::max(0.0, ring_steps(op, ranks) - inter);
  row[kAlphaInter] = inter;
  row[nodes > 1 ? kSecPerByteInter : kSecPerByteIntra] = wire_bytes;
  return row;
}

const GemmCurve* Model::find_gemm(Backend backend, const std::string& dtype, const std::string& impl) const {
  const auto it = std::find_if(gemm.begin(), gemm.end(), [&](const GemmCurve& g) {
    return g.backend == backend && g.dtype == dtype && g.impl == impl;
  });
  return it == gemm.end() ? nullptr : &*it;
}

const CopyFit* Model::find_copy(Backend backend, const std::string& kind) const {
  const auto it = std::find_if(copies.begin(), copies.end(),
                               [&](const CopyFit& c) { return c.backend == backend && c.kind == kind; });
  return it == copies.end() ? nullptr : &*it;
}

const TransferFit* Model::find_transfer(Backend backend, CommKind comm, const std::string& op) const {
  const auto it = std::find_if(transfers.begin(), transfers.end(), [&](const TransferFit& t) {
    return t.backend == backend && t.comm == comm && t.op == op;
  });
  return it == transfers.end() ? nullptr : &*it;
}

}  // namespace gpuscale
