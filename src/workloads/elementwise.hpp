// elementwise: r += a * b over `elements` values, `ops` passes per sample;
// memory bound (each pass reads a, b, r and writes r), so it reports GB/s.
// Inputs are exact: a and b are nonzero multiples of 1/4 in [-1, 1], r starts
// as a multiple of 1/16 in [-1, 1), so every a*b is exact and a pass missed
// changes r by at least 1/16. Every element of r is compared with
// r0 + n*a*b, n the passes enqueued so far (warm-up samples included). The
// error is |r - expected| / max(1, |r0| + n*|a*b|), relative to the largest
// magnitude r could reach; the tolerance is 0 while every value is exact,
// i.e. (1 + n) * 16 < 2^24 (fp32) or 2^53 (fp64), and n * eps of the dtype
// beyond (one rounding per pass; eps = 2^-23, 2^-52).
#pragma once

#include "workloads/workload.hpp"

namespace gpuscale {

const WorkloadType& elementwise_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct ElementwiseParams {
  std::int64_t elements = 0;
  DType dtype = DType::fp32;
  std::int64_t ops = 1;
  static ElementwiseParams from(const Params& p);
};

// Element i's inputs for a seed: a, b and r's starting value.
struct ElementwiseInputs {
  double a, b, r0;
};
ElementwiseInputs elementwise_inputs(std::uint64_t seed, std::size_t i);
// 0 while n passes keep every value exact in the dtype, else n * eps.
double elementwise_tolerance(DType t, std::int64_t passes);

class ElementwiseWorkload final : public Workload {
 public:
  explicit ElementwiseWorkload(const ElementwiseParams& p);
  explicit ElementwiseWorkload(const Params& p) : ElementwiseWorkload(ElementwiseParams::from(p)) {}
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }  // 2 per element and pass, but the rate is GB/s
  double bytes_per_sample() const override;
  Verification verify(CaseContext& ctx) override;
  // r as it is on the device (tests corrupt it to see verification fail).
  const DeviceBuffer& result() const { return r_; }

 private:
  std::size_t elements_;
  DType dtype_;
  std::int64_t ops_;
  std::uint64_t seed_ = 0;
  std::int64_t passes_ = 0;  // enqueued since setup
  DeviceBuffer a_, b_, r_;
};

}  // namespace gpuscale
