// gemm: C = A * B, `ops` multiplications of the same matrices per sample.
#pragma once

#include "workloads/gemm_operands.hpp"

namespace gpuscale {

const WorkloadType& gemm_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct GemmParams {
  GemmProblem problem;
  std::int64_t ops = 1;
  static GemmParams from(const Params& p);
};

// A gemm-based case shrunk for the calibration (WorkloadType::small): m, n, k and size 768, ops at most 4.
Params gemm_small(const Params& p);

class GemmWorkload final : public Workload {
 public:
  explicit GemmWorkload(const GemmParams& p) : problem_(p.problem), ops_(p.ops) {}
  explicit GemmWorkload(const Params& p) : GemmWorkload(GemmParams::from(p)) {}
  void setup(CaseContext& ctx, std::uint64_t seed) override { operands_.setup(ctx.dev, problem_, seed); }
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override;
  double bytes_per_sample() const override;
  Verification verify(CaseContext& ctx) override { return operands_.verify(ctx.dev); }

 private:
  GemmProblem problem_;
  std::int64_t ops_;
  GemmOperands operands_;
};

}  // namespace gpuscale
