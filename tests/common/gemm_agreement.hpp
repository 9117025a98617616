// Every element of one gemm impl's C against the vendor library's from the
// same inputs (the run-time check reads 68 entries); bench/gemm_tiles holds
// each tile to it too. C starts as NaN, so an element no thread wrote
// disagrees, and so does one outside both results' rounding:
// |ours - vendor| <= 2 x tolerance x |row of A| |column of B|
// (Cauchy-Schwarz bounds the sum of |a b| the tolerance is relative to).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "workloads/gemm_operands.hpp"

namespace gpuscale::testing {

struct Agreement {
  std::int64_t wrong = 0;        // elements that disagree
  std::int64_t first_row = -1, first_column = -1;
};

// `count` elements of `dtype` from the device, as doubles.
inline std::vector<double> download(Device& dev, const DeviceBuffer& from, std::size_t count, DType dtype) {
  std::vector<unsigned char> bytes(count * dtype_size(dtype));
  dev.copy_to_host(bytes.data(), from, bytes.size());
  std::vector<double> out(count);
  decode(bytes.data(), count, dtype, out.data());
  return out;
}

inline std::vector<double> download_c(Device& dev, const GemmOperands& g) {
  return download(dev, g.c(), g.c_count(), g.problem().dtype);
}

// Every element of `c` against `expected`, both products of the A and B of `operands`.
inline Agreement agree(const GemmOperands& operands, const std::vector<double>& c,
                       const std::vector<double>& expected) {
  const GemmProblem& p = operands.problem();
  const int m = p.shape.m, n = p.shape.n, k = p.shape.k;
  const std::vector<double>&a = operands.a_values(), &b = operands.b_values();
  std::vector<double> row_norm(m, 0.0), col_norm(n, 0.0);  // squared
  for (std::size_t at = 0; at < a.size(); ++at) row_norm[at / k] += a[at] * a[at];
  for (std::size_t at = 0; at < b.size(); ++at) col_norm[at % n] += b[at] * b[at];
  const double tolerance = gemm_tolerance(p.dtype, k);
  Agreement r;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i) * n + j;
      if (!(std::fabs(c[at] - expected[at]) <= 2 * tolerance * std::sqrt(row_norm[i] * col_norm[j]))) {
        if (r.wrong++ == 0) r.first_row = i, r.first_column = j;
      }
    }
  }
  return r;
}

// `corrupt` (tests of this check): changes our C before it is compared.
template <class Corrupt>
Agreement agree_with_vendor(Device& dev, GemmProblem p, std::uint64_t seed, Corrupt&& corrupt) {
  const GemmImpl ours_impl = p.impl;
  p.impl = GemmImpl::vendor;
  GemmOperands vendor;
  vendor.setup(dev, p, seed);
  vendor.multiply(dev);
  const std::vector<double> expected = download_c(dev, vendor);
  p.impl = ours_impl;
  GemmOperands ours;
  ours.setup(dev, p, seed);  // the same seed: the same A and B
  ours.multiply(dev);
  std::vector<double> c = download_c(dev, ours);
  corrupt(c);
  return agree(vendor, c, expected);
}

inline Agreement agree_with_vendor(Device& dev, const GemmProblem& p, std::uint64_t seed) {
  return agree_with_vendor(dev, p, seed, [](std::vector<double>&) {});
}

}  // namespace gpuscale::testing
