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

std::array<double, kTransferTerms> transfer_row(const std::string& op, int ranks, int nodes, double op_bytes,
                                                double bus_factor, const std::string& algorithm) {
  std::array<double, kTransferTerms> row{};
  const auto own = algorithm_schedule(op, algorithm, ranks);
  const double steps = own ? own->steps : ring_steps(op, ranks);
  const auto own_inter = nodes > 1 ? algorithm_schedule(op, algorithm, nodes) : std::nullopt;
  const double inter = own_inter ? own_inter->steps : inter_steps(op, nodes);
  row[kAlphaIntra] = std::max(0.0, steps - inter);
  row[kAlphaInter] = inter;
  row[nodes > 1 ? kSecPerByteInter : kSecPerByteIntra] = op_bytes * (own ? own->wire_per_byte : bus_factor);
  return row;
}

std::string algorithms_measured(const TransferFit& f) {
  std::vector<std::pair<std::string, std::vector<int>>> seen;
  for (const auto& p : f.points) {
    const std::string regime = regime_text(p.algorithm, p.protocol);
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == regime; });
    if (it == seen.end()) it = seen.insert(seen.end(), {regime, {}});
    if (std::find(it->second.begin(), it->second.end(), p.ranks) == it->second.end()) it->second.push_back(p.ranks);
  }
  std::vector<std::string> parts;
  for (auto& [alg, ranks] : seen) {
    std::sort(ranks.begin(), ranks.end());
    std::vector<std::string> r;
    for (int n : ranks) r.push_back(std::to_string(n));
    parts.push_back(alg + " (" + join(r, ", ") + " ranks)");
  }
  return join(parts, ", ");
}

std::string regime_text(const std::string& algorithm, const std::string& protocol) {
  if (algorithm.empty() && protocol.empty()) return "not known";
  return algorithm.empty() || protocol.empty() ? algorithm + protocol : algorithm + ", " + protocol;
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
