// distributed_gemm: one global C (m x n) = A (m x k) * B (k x n) split over a
// group of ranks, 1-D: rank r of g owns row block r of A and C (m/g rows) and
// starts with column block r of B (n/g columns). In g steps every B block
// travels once around the ring (sendrecv to r+1, from r-1) while the local
// block product with the block at hand runs:
//   overlap = true:  step s's transfer (on the comm lane) runs while step s's
//                    matmul (on the compute lane) does;
//   overlap = false: each transfer after its step's matmul.
// `group_size` runs the same problem on ranks 0..group_size-1 (the others sit
// it out), so one config and one file give strong scaling: report sets each
// case against the group_size = 1 case. Phases "compute" and "transfer".
// Verification: sampled entries of every rank's C block against a reference
// from the same generators (entries are multiples of 1/256, as for gemm).
#pragma once

#include "workloads/gemm_operands.hpp"

namespace gpuscale {

const WorkloadType& distributed_gemm_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct DistributedGemmParams {
  GemmProblem problem;  // the global problem
  bool overlap = true;
  int group_size = 0;  // 0: all ranks
};
DistributedGemmParams distributed_gemm_params(const Params& p);

class DistributedGemmWorkload final : public Workload {
 public:
  explicit DistributedGemmWorkload(const DistributedGemmParams& p) : p_(p) {}
  std::string skip_reason(const CaseContext& ctx) const override;
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override;  // this rank's share: 2 (m/g) n k
  double bytes_per_sample() const override { return 0.0; }
  Verification verify(CaseContext& ctx) override;
  std::string note(const CaseContext& ctx) const override { return cpu_lanes_note(ctx.dev, "compute and comm"); }
  int turn(const CaseContext&, int) const override { return 0; }  // one group: serial is parallel
  bool uses_lanes() const override { return true; }

 private:
  DistributedGemmParams p_;
  int g_ = 1, rank_ = 0;  // group size and this rank in it (rank_ < 0: sits it out)
  int rows_ = 0, cols_ = 0;  // m / g, n / g
  DeviceBuffer a_;                       // this rank's rows of A: rows_ x k
  DeviceBuffer own_;                     // this rank's B block, k x cols_, never overwritten
  DeviceBuffer b_[2];                    // blocks received from the ring, alternately
  std::vector<DeviceBuffer> c_;          // C block j: rows_ x cols_ (C's columns of B block j)
};

}  // namespace gpuscale
