#include "workloads/collective.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/error.hpp"
#include "workloads/collective_report.hpp"
#include "workloads/node_pair_recheck.hpp"
#include "workloads/node_pair_table.hpp"
#include "workloads/node_pairs.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

CollectiveParams collective_params(const Params& p) {
  CollectiveParams c;
  c.op = parse_coll_op(p.get_string("op"));
  c.dtype = parse_dtype(p.get_string("dtype"));
  c.bytes = static_cast<std::size_t>(p.get_int("bytes"));
  c.inplace = p.get_bool("inplace");
  c.iters = p.get_int("iters");
  c.scope = parse_scope(p.get_string("scope"));
  if (p.has("reps")) c.reps = std::max<std::int64_t>(1, p.get_int("reps"));
  return c;
}

namespace {
// Op pairs outside the node-pair sweep: rank r of a group exchanges with rank r + n/2.
bool pairs_in_group(const CollectiveParams& c) { return c.op == CollOp::pairs && !c.sweep(); }
}  // namespace

int collective_turns_per_group(const CollectiveParams& c, int size) {
  return pairs_in_group(c) ? pairs_in_group_of(size) : 1;
}

int collective_turn(const CollectiveParams& c, int group, int rank, int size) {
  if (c.sweep()) return 0;  // one sweep of one group, the ranks that sit it out with it
  return group_turn(group, rank % collective_turns_per_group(c, size));
}

bool collective_single_turn(const CollectiveParams& c) { return single_group(c.scope) && !pairs_in_group(c); }

std::string collective_skip_reason(const CollectiveParams& c, int nodes, int group, int size) {
  if (std::string why = scope_skip_reason(c.scope, nodes); !why.empty()) return why;
  if (pairs_in_group(c)) {
    if (std::string why = odd_group_reason("op pairs", c.scope, group, size); !why.empty()) return why;
  }
  if (coll_shape(c.op, c.bytes, c.dtype, size).op_count == 0) {
    const bool parts = c.op == CollOp::allgather || c.op == CollOp::reduce_scatter || c.op == CollOp::alltoall;
    return "bytes = " + std::to_string(c.bytes) + " is less than one " + dtype_name(c.dtype) + " element" +
           (parts ? " per rank of a group of " + std::to_string(size) : std::string());
  }
  return "";
}

namespace {
// Every scope, and the node-pair sweep.
std::vector<std::string> collective_scopes() {
  std::vector<std::string> v = scope_names();
  v.push_back(scope_name(Scope::node_pairs));
  return v;
}

WorkloadSchema collective_schema() {
  WorkloadSchema s;
  s.name = "collective";
  s.rate = RateKind::transfer;
  s.description = "transfers between ranks (MPI or NCCL) in a scope: world | intra-node | inter-node; "
                  "algbw and busbw as nccl-tests defines them; op pairs in scope node-pairs: every pair of nodes, "
                  "to find a slow link";
  s.params = {
      {"op", ParamType::String, "allreduce | allgather | reduce_scatter | broadcast | reduce | alltoall | sendrecv | pairs",
       Value{std::string("allreduce")}, 0, coll_op_names()},
      {"dtype", ParamType::String, "fp32 | fp64 | fp16 | bf16", Value{std::string("fp32")}, 0,
       {"fp32", "fp64", "fp16", "bf16"}},
      {"bytes", ParamType::Int, "bytes of one operation (the total for allgather, reduce_scatter, alltoall), "
       "as nccl-tests' size; sweep with {from, to, factor}", Value{std::int64_t{1} << 20}, 1, {}, kMaxBufferBytes},
      {"inplace", ParamType::Bool, "in place (allreduce, allgather, reduce_scatter, broadcast, reduce)", Value{false}, 0,
       {}},
      {"iters", ParamType::Int, "operations per timed sample", Value{std::int64_t{1}}, 1, {}, kMaxCount},
      {"scope", ParamType::String, "world (all ranks) | intra-node (a group per node) | inter-node (a group per "
       "local rank, one rank per node) | node-pairs (op pairs: one rank per node, every pair of nodes in rounds of "
       "disjoint pairs)", Value{std::string("world")}, 0, collective_scopes()},
  };
  return s;
}

class CollectiveType final : public TypedWorkloadType<CollectiveParams> {
 public:
  CollectiveType() : TypedWorkloadType(collective_schema()) {}
  CollectiveParams parse(const Params& p) const override { return collective_params(p); }
  const RowAnalysis* analysis() const override { return &collective_analysis(); }
  std::vector<Params> examples() const override;
  // At most 32 MiB a message: the setup and check the estimate's calibration times (calibrate.hpp).
  Params small(const Params& p) const override {
    Params out = p;
    out.set("bytes", std::min<std::int64_t>(p.get_int("bytes"), std::int64_t{32} << 20));
    return out;
  }

 private:
  std::unique_ptr<Workload> make_for(const CollectiveParams& c) const override {
    return std::make_unique<CollectiveWorkload>(c);
  }
  // Check-time refusals: in-place for an op without one, a dtype the transport cannot add.
  std::string unsupported_for(const CollectiveParams& c, const RunTarget& target) const override;
  // Send and receive buffers and their host copies, for any group size (no buffer holds more than `bytes`).
  MemoryNeed memory_for(const CollectiveParams& c, bool buffers_on_host) const override;
  CaseWork work_for(const CollectiveParams& c, const JobShape& job) const override;
  std::optional<Scope> scope_for(const CollectiveParams& c) const override { return c.scope; }
  bool single_turn_for(const CollectiveParams& c) const override { return collective_single_turn(c); }
};

// Every op, in place too where it has that form, and scope intra-node: a MiB or so each.
std::vector<Params> CollectiveType::examples() const {
  return example_params(schema(), {
      "op = [\"allreduce\", \"allgather\", \"reduce_scatter\", \"broadcast\", \"reduce\", \"alltoall\", "
      "\"sendrecv\", \"pairs\"]\nbytes = 1048576",
      "op = [\"allgather\", \"reduce_scatter\", \"reduce\"]\nbytes = 1048576\ninplace = true",
      "op = \"allreduce\"\nbytes = 3000000\ndtype = \"fp64\"\ninplace = true\niters = 2",
      "op = \"broadcast\"\nbytes = 1048576\ninplace = true\nscope = \"intra-node\"",
  });
}

std::string CollectiveType::unsupported_for(const CollectiveParams& c, const RunTarget& target) const {
  if (c.sweep() && c.op != CollOp::pairs) {
    // Not the transport's doing: valid keys that do not go together.
    throw InputError(std::string("scope node-pairs runs op pairs only (every node exchanges with every other "
                                 "node, a pair at a time); got op '") + coll_op_name(c.op) + "'");
  }
  if (c.inplace && !coll_op_has_inplace(c.op)) {
    return std::string("op '") + coll_op_name(c.op) + "' has no in-place form (inplace applies to allreduce, "
           "allgather, reduce_scatter, broadcast, reduce)";
  }
  return data_comm_unsupported(target.comm, coll_op_name(c.op), c.dtype);
}

MemoryNeed CollectiveType::memory_for(const CollectiveParams& c, bool buffers_on_host) const {
  const double b = static_cast<double>(c.bytes);
  const double poison = std::min(b, static_cast<double>(Device::kPoisonChunkBytes));
  // On the host: the send data with the poison; the node-pair sweep keeps its download while it makes them afresh.
  MemoryNeed need{c.inplace ? b : 2 * b, (c.sweep() ? 2 * b : b) + poison};
  // MPI on a GPU stages both buffers through pinned host memory; NCCL does not, so the bound is loose there.
  if (!buffers_on_host) need.host_bytes += 2 * b;
  return need;
}

CaseWork CollectiveType::work_for(const CollectiveParams& c, const JobShape& job) const {
  CaseWork cw;
  const ScopeGroups g = scope_groups(c.scope, job);
  cw.skip_reason = collective_skip_reason(c, job.nodes, 0, g.size);
  const double iters = static_cast<double>(c.iters);
  const double rounds = c.sweep() ? node_pair_rounds(g.size) : 1;
  const CollShape shape = coll_shape(c.op, c.bytes, c.dtype, g.size);
  if (c.sweep()) {  // a round's pairs: two ranks on two nodes
    cw.sample.add_transfer({coll_op_name(c.op), shape.op_bytes, bus_factor(c.op, 2), 2, 2, 0}, iters * rounds);
  } else {
    cw.sample.add_transfer({coll_op_name(c.op), shape.op_bytes, bus_factor(c.op, g.size), g.size, g.nodes, 0}, iters);
  }
  cw.sample.across_nodes = g.across_nodes;
  cw.turns = g.count * collective_turns_per_group(c, g.size);
  cw.busy_ranks_per_node = ranks_per_node(job);
  return cw;
}

}  // namespace

const WorkloadType& collective_type() {
  static const CollectiveType type;
  return type;
}

std::string CollectiveWorkload::skip_reason(const CaseContext& ctx) const {
  return collective_skip_reason(p_, ctx.nodes, ctx.group->index, ctx.size());
}

void CollectiveWorkload::setup(CaseContext& ctx, std::uint64_t) {
  member_ = ctx.group->member();
  if (!member_) return;
  rank_ = ctx.rank();
  size_ = ctx.size();
  shape_ = coll_shape(p_.op, p_.bytes, p_.dtype, size_);
  const std::size_t e = dtype_size(p_.dtype);
  const std::size_t send_bytes = shape_.send_count * e, recv_bytes = shape_.recv_count * e;
  if (p_.inplace) {
    // One buffer, the larger; the smaller part lies inside it (see DataComm).
    (send_bytes >= recv_bytes ? send_ : recv_) = ctx.dev.alloc(std::max(send_bytes, recv_bytes));
  } else {
    send_ = ctx.dev.alloc(send_bytes);
    recv_ = ctx.dev.alloc(recv_bytes);
  }
  if (p_.sweep()) {
    const float zero = 0;
    token_in_ = ctx.dev.alloc(sizeof zero);
    token_out_ = ctx.dev.alloc(sizeof zero);
    ctx.dev.copy_to_device(token_in_, &zero, sizeof zero);
  }
  fill(ctx);
}

double CollectiveWorkload::bytes_per_sample() const {
  if (!member_) return 0.0;
  const double rounds = p_.sweep() ? size_ - 1 : 1;  // odd n: n rounds, one of them resting
  return shape_.op_bytes * static_cast<double>(p_.iters) * rounds;
}

void* CollectiveWorkload::send_ptr() const {
  if (!p_.inplace || send_.data()) return send_.data();
  // In place inside the receive buffer: allgather's part of this rank; the others share it whole.
  const std::size_t offset = p_.op == CollOp::allgather ? rank_ * shape_.send_count * dtype_size(p_.dtype) : 0;
  return static_cast<char*>(recv_.data()) + offset;
}

void* CollectiveWorkload::recv_ptr() const {
  if (!p_.inplace || recv_.data()) return recv_.data();
  const std::size_t offset = p_.op == CollOp::reduce_scatter ? rank_ * shape_.recv_count * dtype_size(p_.dtype) : 0;
  return static_cast<char*>(send_.data()) + offset;
}

void CollectiveWorkload::fill(CaseContext& ctx) {
  const auto data = coll_send_data(p_.op, p_.dtype, rank_, size_, shape_);
  const std::size_t e = dtype_size(p_.dtype);
  if (!p_.inplace || send_.data()) {
    ctx.dev.copy_to_device(send_, data.data(), data.size());
  } else {
    ctx.dev.copy_async(send_ptr(), data.data(), data.size(), CopyKind::h2d);
    ctx.dev.synchronize();
  }
  if (!recv_.data() || p_.inplace) return;
  if (p_.op == CollOp::broadcast && rank_ == kCollRoot) {
    // The root's recv is ours to fill (DataComm::broadcast): here, untimed, not by a copy in every operation.
    ctx.dev.copy_to_device(recv_, data.data(), data.size());
    return;
  }
  // A receive buffer that does not hold the input starts as NaNs, which the
  // check counts as wrong wherever the operation wrote nothing.
  ctx.dev.poison(recv_.data(), shape_.recv_count * e);
}

void CollectiveWorkload::enqueue_one(CaseContext& ctx) {
  DataComm& d = ctx.data();
  const std::size_t c = shape_.op_count;
  switch (p_.op) {
    case CollOp::allreduce: return d.allreduce(send_ptr(), recv_ptr(), c, p_.dtype);
    case CollOp::allgather: return d.allgather(send_ptr(), recv_ptr(), c, p_.dtype);
    case CollOp::reduce_scatter: return d.reduce_scatter(send_ptr(), recv_ptr(), c, p_.dtype);
    case CollOp::broadcast: return d.broadcast(send_ptr(), recv_ptr(), c, p_.dtype, kCollRoot);
    case CollOp::reduce: return d.reduce(send_ptr(), recv_ptr(), c, p_.dtype, kCollRoot);
    case CollOp::alltoall: return d.alltoall(send_ptr(), recv_ptr(), c, p_.dtype);
    case CollOp::sendrecv:
      return d.sendrecv(send_ptr(), (rank_ + 1) % size_, recv_ptr(), (rank_ - 1 + size_) % size_, c, p_.dtype);
    case CollOp::pairs: {
      const int partner = pair_partner(rank_, size_);
      return d.sendrecv(send_ptr(), partner, recv_ptr(), partner, c, p_.dtype);
    }
  }
}

void CollectiveWorkload::sweep_round(CaseContext& ctx, int round, std::int64_t iters) {
  DataComm& d = ctx.data();
  // Every pair of the round starts together, and none before the last round is over everywhere.
  d.allreduce(token_in_.data(), token_out_.data(), 1, DType::fp32);
  const int partner = node_pair_partner(rank_, round, size_);
  if (partner < 0) return;  // this node rests this round (odd n)
  PhaseLog* log = ctx.phases;
  const int interval = log ? log->begin("round " + std::to_string(round + 1)) : -1;
  for (std::int64_t i = 0; i < iters; ++i) {
    d.sendrecv(send_ptr(), partner, recv_ptr(), partner, shape_.op_count, p_.dtype);
  }
  if (log) log->end(interval);
}

void CollectiveWorkload::run_sample(CaseContext& ctx) {
  if (!member_) return;  // sits this case out
  if (p_.sweep()) {
    for (int round = 0; round < node_pair_rounds(size_); ++round) sweep_round(ctx, round, p_.iters);
    return;
  }
  for (std::int64_t i = 0; i < p_.iters; ++i) enqueue_one(ctx);
}

// Every round once more on fresh data, each partner's data checked as it arrives.
Verification CollectiveWorkload::verify_sweep(CaseContext& ctx) {
  PhaseLog* phases = std::exchange(ctx.phases, nullptr);  // neither is a timed sample
  const PairExchange x{[&] { ctx.data().allreduce(token_in_.data(), token_out_.data(), 1, DType::fp32); },
                       [&](int partner, std::int64_t iters) {
                         for (std::int64_t i = 0; i < iters; ++i) {
                           ctx.data().sendrecv(send_ptr(), partner, recv_ptr(), partner, shape_.op_count, p_.dtype);
                         }
                       }};
  rechecks_ = recheck_slow_pairs(ctx, x, p_.iters, p_.reps);
  Verification v;
  std::vector<unsigned char> got(shape_.recv_count * dtype_size(p_.dtype));
  for (int round = 0; round < node_pair_rounds(size_); ++round) {
    fill(ctx);
    sweep_round(ctx, round, 1);
    ctx.synchronize();
    const int partner = node_pair_partner(rank_, round, size_);
    if (partner < 0) continue;
    ctx.dev.copy_async(got.data(), recv_ptr(), got.size(), CopyKind::d2h);
    ctx.dev.synchronize();
    v.wrong_elements += wrong_elements_from(p_.dtype, partner, size_, shape_, got.data());
  }
  ctx.phases = phases;
  v.max_error = static_cast<double>(v.wrong_elements);
  v.ok = v.wrong_elements == 0;
  return v;
}

Verification CollectiveWorkload::verify(CaseContext& ctx) {
  if (!member_) {
    Verification v;
    v.ok = true;
    return v;
  }
  if (p_.sweep()) return verify_sweep(ctx);
  // The timed samples may have changed the input (in place); start afresh.
  fill(ctx);
  enqueue_one(ctx);
  ctx.synchronize();
  std::vector<unsigned char> got(shape_.recv_count * dtype_size(p_.dtype));
  ctx.dev.copy_async(got.data(), recv_ptr(), got.size(), CopyKind::d2h);
  ctx.dev.synchronize();
  Verification v;
  v.wrong_elements = coll_wrong_elements(p_.op, p_.dtype, rank_, size_, shape_, got.data());
  v.max_error = static_cast<double>(v.wrong_elements);
  v.tolerance = 0.0;
  v.ok = v.wrong_elements == 0;
  return v;
}

int CollectiveWorkload::turn(const CaseContext& ctx, int) const {
  return collective_turn(p_, ctx.group->index, ctx.rank(), ctx.size());
}

double CollectiveWorkload::bus_factor(const CaseContext& ctx) const { return gpuscale::bus_factor(p_.op, ctx.size()); }

std::vector<CaseTable> CollectiveWorkload::tables(const CaseContext& ctx) const {
  if (!p_.sweep()) return {};
  std::vector<CaseTable> t = node_pair_rank_rows(ctx);
  if (rechecks_.rows() > 0) t.push_back(rechecks_);
  return t;
}

void CollectiveWorkload::finish_tables(std::vector<CaseTable>& tables) const {
  if (p_.sweep()) node_pair_schedule(tables);
}

}  // namespace gpuscale
