#include "workloads/p2p.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "report/analysis.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {

constexpr DType kType = DType::fp32;  // messages are whole fp32 elements, checked value by value
constexpr std::size_t kAckBytes = 4;

P2pPattern parse_pattern(const std::string& s) {
  if (s == "latency") return P2pPattern::latency;
  if (s == "bw") return P2pPattern::bw;
  if (s == "bibw") return P2pPattern::bibw;
  throw std::invalid_argument("unknown pattern '" + s + "'");
}

const char* pattern_name(P2pPattern p) {
  switch (p) {
    case P2pPattern::latency: return "latency";
    case P2pPattern::bw: return "bw";
    case P2pPattern::bibw: return "bibw";
  }
  return "bibw";
}

// Bytes of one message: `bytes` rounded down to whole elements.
std::size_t message_bytes(std::size_t bytes) { return bytes / dtype_size(kType) * dtype_size(kType); }

// Why a case cannot run on this job, once for the run and the estimate: its scope, and pairs need an even group.
std::string p2p_skip_reason(const P2pParams& p, int nodes, int group, int size) {
  if (std::string why = scope_skip_reason(p.scope, nodes); !why.empty()) return why;
  return odd_group_reason("p2p", p.scope, group, size);
}

// What one operation carries: a round trip and an exchange carry the message twice.
double op_bytes_of(const P2pParams& p) {
  const double m = static_cast<double>(message_bytes(p.bytes));
  return p.pattern == P2pPattern::bw ? m : 2 * m;
}

WorkloadSchema p2p_schema() {
  WorkloadSchema s;
  s.name = "p2p";
  s.rate = RateKind::transfer;
  s.description = "point-to-point between rank pairs (OSU's latency, bw, bibw): each rank with the rank half its "
                  "group away, in a scope: world | intra-node | inter-node";
  s.params = {
      {"pattern", ParamType::String, "latency (ping-pong) | bw (one way, then an acknowledgement) | bibw (both ways "
       "at once)", Value{std::string("latency")}, 0, {"latency", "bw", "bibw"}},
      {"bytes", ParamType::Int, "bytes of one message (whole 4-byte elements); sweep with {from, to, factor}",
       Value{std::int64_t{8}}, 4, {}, kMaxBufferBytes},
      {"iters", ParamType::Int, "round trips (latency) or messages (bw, bibw) per timed sample",
       Value{std::int64_t{100}}, 1, {}, kMaxCount},
      {"scope", ParamType::String, "world (all ranks) | intra-node (pairs within a node) | inter-node (pairs across "
       "nodes: a group per local rank)", Value{std::string("world")}, 0, scope_names()},
  };
  return s;
}

// The report: the one-way latency of a ping-pong, half its round trip.
class P2pAnalysis final : public RowAnalysis {
 public:
  void row(const RunRecord&, const CaseRecord& c, const RowSettings&, ReportRow& r) const override {
    if (!c.params.has("pattern") || c.params.get_string("pattern") != "latency" || !r.op_time_s) return;
    r.figures.push_back({"latency_s", *r.op_time_s / 2, FigureKind::seconds, "latency", ""});
  }
};

class P2pType final : public TypedWorkloadType<P2pParams> {
 public:
  P2pType() : TypedWorkloadType(p2p_schema()) {}
  P2pParams parse(const Params& p) const override { return P2pParams::from(p); }
  const RowAnalysis* analysis() const override { return &analysis_; }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"pattern = [\"latency\", \"bw\", \"bibw\"]\nbytes = 4102\niters = 3",
                                     "pattern = \"bw\"\nbytes = 1048576\niters = 2\nscope = \"intra-node\""});
  }

 private:
  std::unique_ptr<Workload> make_for(const P2pParams& p) const override { return std::make_unique<P2pWorkload>(p); }
  MemoryNeed memory_for(const P2pParams& p, bool buffers_on_host) const override {
    const double b = static_cast<double>(message_bytes(p.bytes));
    const double poison = std::min(b, static_cast<double>(Device::kPoisonChunkBytes));
    MemoryNeed need{2 * b + kAckBytes, 2 * b + poison};  // device: send, receive; host: the data, its check
    if (!buffers_on_host) need.host_bytes += 2 * b;  // MPI on a GPU stages both through pinned host memory
    return need;
  }
  CaseWork work_for(const P2pParams& p, const JobShape& job) const override {
    const ScopeGroups g = scope_groups(p.scope, job);
    CaseWork cw;
    cw.skip_reason = p2p_skip_reason(p, job.nodes, 0, g.size);
    const double iters = static_cast<double>(p.iters);
    // Latency: a message and its echo per iteration, each of op_bytes.
    const double ops = p.pattern == P2pPattern::latency ? 2 * iters : iters;
    cw.sample.add_transfer({std::string("p2p-") + pattern_name(p.pattern), op_bytes_of(p) / (ops / iters), 1.0, 2,
                            g.across_nodes ? 2 : 1, 0}, ops);
    cw.sample.across_nodes = g.across_nodes;
    cw.turns = g.count * pairs_in_group_of(g.size);
    cw.busy_ranks_per_node = ranks_per_node(job);
    return cw;
  }
  std::optional<Scope> scope_for(const P2pParams& p) const override { return p.scope; }

  P2pAnalysis analysis_;
};

}  // namespace

P2pParams P2pParams::from(const Params& p) {
  P2pParams out;
  out.pattern = parse_pattern(p.get_string("pattern"));
  out.bytes = static_cast<std::size_t>(p.get_int("bytes"));
  out.iters = p.get_int("iters");
  out.scope = parse_scope(p.get_string("scope"));
  return out;
}

const WorkloadType& p2p_type() {
  static const P2pType t;
  return t;
}

std::string P2pWorkload::skip_reason(const CaseContext& ctx) const {
  return p2p_skip_reason(p_, ctx.nodes, ctx.group->index, ctx.size());
}

void P2pWorkload::setup(CaseContext& ctx, std::uint64_t) {
  rank_ = ctx.rank();
  size_ = ctx.size();
  peer_ = pair_partner(rank_, size_);
  lower_ = rank_ < peer_;
  count_ = message_bytes(p_.bytes) / dtype_size(kType);
  send_ = ctx.dev.alloc(count_ * dtype_size(kType));
  recv_ = ctx.dev.alloc(count_ * dtype_size(kType));
  ack_ = ctx.dev.alloc(kAckBytes);
  fill(ctx);
}

// This rank's pattern in its send buffer; the receive buffer NaNs, which the check counts wrong where nothing came.
void P2pWorkload::fill(CaseContext& ctx) {
  const CollShape shape = coll_shape(CollOp::pairs, message_bytes(p_.bytes), kType, size_);
  const auto data = coll_send_data(CollOp::pairs, kType, rank_, size_, shape);
  ctx.dev.copy_to_device(send_, data.data(), data.size());
  ctx.dev.poison(recv_.data(), recv_.bytes());
  ctx.dev.poison(ack_.data(), ack_.bytes());
}

void P2pWorkload::one_op(CaseContext& ctx) {
  DataComm& d = ctx.data();
  switch (p_.pattern) {
    case P2pPattern::latency:
      if (lower_) {
        d.send(send_.data(), peer_, count_, kType);
        d.recv(recv_.data(), peer_, count_, kType);
      } else {
        d.recv(recv_.data(), peer_, count_, kType);
        d.send(send_.data(), peer_, count_, kType);
      }
      return;
    case P2pPattern::bw:
      if (lower_) {
        d.send(send_.data(), peer_, count_, kType);
      } else {
        d.recv(recv_.data(), peer_, count_, kType);
      }
      return;
    case P2pPattern::bibw: d.sendrecv(send_.data(), peer_, recv_.data(), peer_, count_, kType); return;
  }
}

void P2pWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < p_.iters; ++i) one_op(ctx);
  if (p_.pattern != P2pPattern::bw) return;
  // The sender's sample ends when the receiver has everything: its acknowledgement (the first element it sends).
  if (lower_) {
    ctx.data().recv(ack_.data(), peer_, 1, kType);
  } else {
    ctx.data().send(send_.data(), peer_, 1, kType);
  }
}

double P2pWorkload::bytes_per_sample() const { return op_bytes() * static_cast<double>(p_.iters); }

double P2pWorkload::op_bytes() const { return op_bytes_of(p_); }

// One sample's pattern again on fresh buffers; each received message checked against the peer's data.
Verification P2pWorkload::verify(CaseContext& ctx) {
  fill(ctx);
  const std::int64_t iters = std::exchange(p_.iters, 1);
  run_sample(ctx);
  p_.iters = iters;
  ctx.synchronize();
  const bool got_message = p_.pattern != P2pPattern::bw || !lower_;
  const std::size_t elements = got_message ? count_ : 1;
  std::vector<unsigned char> got(elements * dtype_size(kType));
  ctx.dev.copy_async(got.data(), got_message ? recv_.data() : ack_.data(), got.size(), CopyKind::d2h);
  ctx.dev.synchronize();
  Verification v;
  v.wrong_elements = wrong_elements_from(kType, peer_, size_, coll_shape(CollOp::pairs, got.size(), kType, size_),
                                         got.data());
  v.max_error = static_cast<double>(v.wrong_elements);
  v.ok = v.wrong_elements == 0;
  return v;
}

int P2pWorkload::turn(const CaseContext& ctx, int) const {
  return group_turn(ctx.group->index, ctx.rank() % pairs_in_group_of(ctx.size()));  // each pair of each group alone
}

}  // namespace gpuscale
