// collective: `iters` back-to-back transfers of one kind per sample, in the
// group of the case's scope, through the run's data plane (MPI or NCCL):
// allreduce, allgather, reduce_scatter, broadcast and reduce (root: the
// group's rank 0), alltoall, sendrecv (a ring: to rank+1, from rank-1) and
// pairs (each rank exchanges with the rank half a group away). `bytes` is
// nccl-tests' size: the total of allgather, reduce_scatter and alltoall.
// Verification runs one more operation on fresh data and counts the result
// elements that differ from the known pattern (collective_pattern.hpp).
#pragma once

#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

WorkloadSchema collective_schema();
// Check-time refusals: in-place for an op without one, a dtype the transport cannot add.
std::string collective_unsupported(const Params& p, const RunTarget& target);

class CollectiveWorkload final : public Workload {
 public:
  explicit CollectiveWorkload(const Params& p);
  std::string skip_reason(const CaseContext& ctx) const override;
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }
  double bytes_per_sample() const override { return shape_.op_bytes * static_cast<double>(iters_); }
  Verification verify(CaseContext& ctx) override;
  int turn(const CaseContext& ctx, int world_rank) const override;
  double op_bytes() const override { return shape_.op_bytes; }
  double bus_factor(const CaseContext& ctx) const override;

 private:
  void fill(CaseContext& ctx);  // the pattern into the send buffer
  void enqueue_one(CaseContext& ctx);
  void* send_ptr() const;
  void* recv_ptr() const;

  CollOp op_;
  DType dtype_;
  std::size_t bytes_;
  bool inplace_;
  std::int64_t iters_;
  Scope scope_;
  CollShape shape_;
  int rank_ = 0, size_ = 1;
  DeviceBuffer send_, recv_;  // in place: only the larger of the two is allocated
};

}  // namespace gpuscale
