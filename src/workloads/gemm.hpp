// gemm: C = A * B with seeded random inputs, `ops` multiplications per sample.
// Verification recomputes sampled entries of C in long double and compares
// |c - ref| / sum_k |a_ik * b_kj|, whose rounding bound grows with k.
#pragma once

#include "workloads/workload.hpp"

namespace gpuscale {

WorkloadSchema gemm_schema();

class GemmWorkload final : public Workload {
 public:
  explicit GemmWorkload(const Params& p);
  void setup(Device& dev, std::uint64_t seed) override;
  void run_sample(Device& dev) override;
  double flops_per_sample() const override;
  double bytes_per_sample() const override;
  Verification verify(Device& dev) override;

  GemmShape shape() const { return shape_; }

 private:
  DType dtype_;
  GemmShape shape_;
  std::int64_t ops_;
  std::vector<double> a_host_, b_host_;  // inputs as generated (exact in either dtype)
  DeviceBuffer a_, b_, c_;
};

}  // namespace gpuscale
