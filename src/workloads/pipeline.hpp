// pipeline: compute and communication at once on one device (the lesson's
// own experiment). A sample is `ops` matmuls C_i = A * B on the compute lane,
// each C_i copied to a host buffer of its own on the copy lane:
//   overlap = true:  copy i starts as soon as matmul i is done, while matmul
//                    i+1 runs (the sample takes about max(compute, copy));
//   overlap = false: every matmul, then every copy (about their sum).
// Phases "compute" (each matmul) and "transfer" (each copy) record what ran
// when; the report turns them into exposed transfer time and the overlap
// fraction. Verification: every C_i as it arrived in host memory.
#pragma once

#include "workloads/gemm_operands.hpp"

namespace gpuscale {

const WorkloadType& pipeline_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct PipelineParams {
  GemmProblem problem;
  std::int64_t ops = 1;
  bool overlap = true;
  bool pinned = true;  // key host
  static PipelineParams from(const Params& p);
};

class PipelineWorkload final : public Workload {
 public:
  explicit PipelineWorkload(const PipelineParams& p);
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override;
  double bytes_per_sample() const override;  // bytes copied to the host
  Verification verify(CaseContext& ctx) override;
  std::string note(const CaseContext& ctx) const override;
  bool uses_lanes() const override { return true; }

 private:
  std::size_t c_bytes() const;
  GemmProblem problem_;
  std::int64_t ops_;
  bool overlap_;
  bool pinned_;
  GemmOperands operands_;
  std::vector<DeviceBuffer> c_;  // one result per matmul, so no copy waits for the next matmul
  std::vector<HostBuffer> host_;
};

}  // namespace gpuscale
