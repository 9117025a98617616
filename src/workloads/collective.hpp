// collective: `iters` back-to-back transfers of one kind per sample, in the
// group of the case's scope, through the run's data plane (MPI or NCCL):
// allreduce, allgather, reduce_scatter, broadcast and reduce (root: the
// group's rank 0), alltoall, sendrecv (a ring: to rank+1, from rank-1) and
// pairs (each rank exchanges with the rank half a group away). `bytes` is
// nccl-tests' size: the total of allgather, reduce_scatter and alltoall.
// Scope node-pairs (op pairs only) is the node-pair sweep: one rank per node,
// every two nodes exchange `bytes` both ways `iters` times, in the rounds of
// node_pair_partner (disjoint pairs at once); phase "round k" of each sample
// times round k, so the report can name a slow node's link.
// Verification runs one more operation on fresh data and counts the result
// elements that differ from the known pattern (collective_pattern.hpp).
// Buffers are filled outside the samples: out-of-place broadcast's root fills
// its recv with its own data there (DataComm::broadcast), every other recv
// starts as NaNs.
#pragma once

#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

const WorkloadType& collective_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct CollectiveParams {
  CollOp op = CollOp::allreduce;
  DType dtype = DType::fp32;
  std::size_t bytes = 0;
  bool inplace = false;
  std::int64_t iters = 1;
  Scope scope = Scope::world;
  std::int64_t reps = 1;  // node-pairs: how many times a slow pair runs again alone
  bool sweep() const { return scope == Scope::node_pairs; }  // the node-pair sweep
};
CollectiveParams collective_params(const Params& p);

// The rules of turns and skips, which the workload (on the runner's groups),
// single_turn (the plan) and work (the estimate's groups) all follow.
// Serial mode's turns in a group of `size`: one, or one per pair in op pairs.
int collective_turns_per_group(const CollectiveParams& c, int size);
// Rank `rank` of group `group`: groups take turns, and within a group as above.
int collective_turn(const CollectiveParams& c, int group, int rank, int size);
// One turn on any job: one group, whose ranks all run at once.
bool collective_single_turn(const CollectiveParams& c);
// "" when group `group` of `size` ranks, on a job of `nodes` nodes, can run the case, else why not.
std::string collective_skip_reason(const CollectiveParams& c, int nodes, int group, int size);

class CollectiveWorkload final : public Workload {
 public:
  explicit CollectiveWorkload(const CollectiveParams& p) : p_(p) {}
  explicit CollectiveWorkload(const Params& p) : CollectiveWorkload(collective_params(p)) {}
  std::string skip_reason(const CaseContext& ctx) const override;
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }
  // node-pairs: what a node sends over the sweep (it exchanges in n - 1 rounds).
  double bytes_per_sample() const override;
  Verification verify(CaseContext& ctx) override;
  int turn(const CaseContext& ctx, int world_rank) const override;
  double op_bytes() const override { return member_ ? shape_.op_bytes : 0.0; }
  double bus_factor(const CaseContext& ctx) const override;
  // node-pairs: the sweep's schedule with the nodes, ranks and hosts that ran it (workloads/node_pair_table.hpp).
  std::vector<CaseTable> tables(const CaseContext& ctx) const override;
  void finish_tables(std::vector<CaseTable>& tables) const override;

 private:
  // The pattern into the send buffer; recv to NaNs, or out-of-place broadcast's root's to its own data.
  void fill(CaseContext& ctx);
  void enqueue_one(CaseContext& ctx);
  void sweep_round(CaseContext& ctx, int round, std::int64_t iters);  // node-pairs: a barrier, then the exchanges
  Verification verify_sweep(CaseContext& ctx);
  void* send_ptr() const;
  void* recv_ptr() const;

  CollectiveParams p_;
  CollShape shape_;
  int rank_ = 0, size_ = 1;
  bool member_ = true;  // false: this rank sits the case out (node-pairs: not its node's local rank 0)
  DeviceBuffer send_, recv_;  // in place: only the larger of the two is allocated
  DeviceBuffer token_in_, token_out_;  // node-pairs: one element, allreduced as a barrier between rounds
  CaseTable rechecks_;                 // node-pairs: the slow pairs run again (workloads/node_pair_recheck.hpp)
};

}  // namespace gpuscale
