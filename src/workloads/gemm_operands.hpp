// The matrices of a gemm-based workload: seeded inputs that are exact in
// every dtype (multiples of 1/256 in [-1, 1), never all zero), their device
// copies, and the check of C. Verification recomputes sampled entries of C in
// long double and compares |c - ref| / sum_k |a_ik * b_kj|, which rounding
// bounds by the tolerance of the dtype (see gemm_tolerance).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/param_spec.hpp"
#include "core/value.hpp"
#include "device/device.hpp"
#include "workloads/workload.hpp"

namespace gpuscale {

struct GemmProblem {
  GemmImpl impl = GemmImpl::vendor;
  DType dtype = DType::fp64;
  GemmShape shape;
  double flops() const;  // of one multiplication: 2mnk
};

// The shape and type keys every gemm-based workload has: size, m, n, k, dtype, impl.
// The largest m, n or k (and size): a dimension is an int, and 2^20 keeps
// every product of two (elements of a matrix) and its bytes far inside 64 bits.
constexpr std::int64_t kMaxGemmDim = std::int64_t{1} << 20;

std::vector<ParamSpec> gemm_problem_specs(std::int64_t default_size, const std::string& default_dtype);
GemmProblem gemm_problem(const Params& p);
std::string gemm_problem_unsupported(const GemmProblem& g, Backend backend);

// `v` stored in dtype `t` in a new device buffer (values exact in every dtype, as gemm's inputs).
DeviceBuffer upload_values(Device& dev, const std::vector<double>& v, DType t);

// Rounding bound of |c - ref| / sum|a*b| for k terms: accumulation in the
// compute precision plus rounding C to its storage type.
double gemm_tolerance(DType t, int k);

// Entries (row, column) of a rows x cols C to check: the first `corners` of its corners (0, 0), (rows-1, cols-1),
// (0, cols-1), (rows-1, 0), then `count` pseudo-random ones from `rng` (of each, the column is drawn first).
std::vector<std::pair<std::size_t, std::size_t>> sampled_entries(std::size_t rows, std::size_t cols, int corners,
                                                                 int count, std::mt19937_64& rng);

// Checks C = A * B at `entries` against sums of k terms in long double: c(i, j) is C's entry as stored, a(i, q)
// and b(q, j) the inputs as generated. Raises v.max_error to each entry's |c - ref| / sum_q |a b| (a NaN as
// infinity) and returns how many entries are above v.tolerance or NaN.
template <class C, class A, class B>
std::int64_t check_entries(const std::vector<std::pair<std::size_t, std::size_t>>& entries, std::size_t k, C c, A a,
                           B b, Verification& v) {
  std::int64_t wrong = 0;
  for (auto [i, j] : entries) {
    long double ref = 0.0L, mag = 0.0L;
    for (std::size_t q = 0; q < k; ++q) {
      const long double t = static_cast<long double>(a(i, q)) * b(q, j);
      ref += t;
      mag += std::fabs(t);
    }
    const long double diff = std::fabs(c(i, j) - ref);
    const double err = static_cast<double>(mag > 0 ? diff / mag : diff);
    if (!(err <= v.tolerance)) ++wrong;
    v.max_error = std::max(v.max_error, std::isnan(err) ? INFINITY : err);
  }
  return wrong;
}

// What GemmOperands takes: A, B and C on the device; on the host A and B as
// doubles (kept for the check), with the larger of an upload staged in the
// dtype and C downloaded (in the dtype, and decoded to doubles).
MemoryNeed gemm_operands_memory(const GemmProblem& p);

class GemmOperands {
 public:
  void setup(Device& dev, const GemmProblem& p, std::uint64_t seed);
  void multiply(Device& dev) { dev.gemm(p_.impl, p_.dtype, p_.shape, a_, b_, c_); }
  // C = A * B into another buffer of C's size.
  void multiply_into(Device& dev, DeviceBuffer& c) const { dev.gemm(p_.impl, p_.dtype, p_.shape, a_, b_, c); }
  // Checks C; with `c_sum_squares`, also returns the sum of c^2 over C as
  // stored on the device, in long double, from the same download.
  Verification verify(Device& dev, long double* c_sum_squares = nullptr) const;
  // Checks a C that is in host memory, stored in the problem's dtype.
  Verification verify_host(const void* c_stored) const;
  const GemmProblem& problem() const { return p_; }
  // A and B as generated, before rounding to the dtype (the check's reference uses them).
  const std::vector<double>& a_values() const { return a_host_; }
  const std::vector<double>& b_values() const { return b_host_; }
  const DeviceBuffer& a() const { return a_; }
  const DeviceBuffer& b() const { return b_; }
  const DeviceBuffer& c() const { return c_; }
  std::size_t c_count() const { return static_cast<std::size_t>(p_.shape.m) * p_.shape.n; }

 private:
  std::vector<double> download_c(Device& dev) const;
  Verification verify_values(const std::vector<double>& c) const;
  GemmProblem p_;
  std::vector<double> a_host_, b_host_;
  DeviceBuffer a_, b_, c_;
};

}  // namespace gpuscale
