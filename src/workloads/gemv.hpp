// gemv: y = A x, A of m x n, `ops` products per timed sample: what a decoder
// does per token, memory bound (A is read once a product), so it reports GB/s
// of A, x and y moved (A is nearly all of it). fp32 and fp64; bf16 on CUDA.
// Inputs are multiples of 1/256 in [-1, 1), exact in every dtype and made
// from a hash of their index (any element is made again for the check). Every
// element of y is checked against a long double reference: the error is
// |y - ref| / sum_j |a_ij x_j|, bounded by gemm_tolerance(dtype, n).
#pragma once

#include "workloads/workload.hpp"

namespace gpuscale {

const WorkloadType& gemv_type();

// A case's keys, parsed once for the workload and for its type's hooks.
struct GemvParams {
  std::int64_t m = 0, n = 0;
  DType dtype = DType::fp32;
  std::int64_t ops = 1;
  static GemvParams from(const Params& p);
};

// A's element (i, j) and x's element j for a seed.
double gemv_a(std::uint64_t seed, std::size_t i, std::size_t j, std::size_t n);
double gemv_x(std::uint64_t seed, std::size_t j);

class GemvWorkload final : public Workload {
 public:
  explicit GemvWorkload(const GemvParams& p);
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }  // 2mn per product, but the rate is GB/s
  double bytes_per_sample() const override;
  Verification verify(CaseContext& ctx) override;
  // y as it is on the device (tests corrupt it to see verification fail).
  const DeviceBuffer& result() const { return y_; }

 private:
  int m_, n_;
  DType dtype_;
  std::int64_t ops_;
  std::uint64_t seed_ = 0;
  DeviceBuffer a_, x_, y_;
};

}  // namespace gpuscale
