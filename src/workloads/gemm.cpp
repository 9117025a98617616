#include "workloads/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/metrics.hpp"

namespace gpuscale {

WorkloadSchema gemm_schema() {
  WorkloadSchema s;
  s.name = "gemm";
  s.description = "C = A*B of one size, `ops` matmuls per timed sample";
  s.params = {
      {"size", ParamType::Int, "m = n = k unless m, n or k is given", Value{std::int64_t{512}}, 1, {}},
      {"m", ParamType::Int, "rows of A and C (default: size)", std::nullopt, 1, {}},
      {"n", ParamType::Int, "columns of B and C (default: size)", std::nullopt, 1, {}},
      {"k", ParamType::Int, "columns of A, rows of B (default: size)", std::nullopt, 1, {}},
      {"dtype", ParamType::String, "element type", Value{std::string("fp64")}, 0, cpu_dtype_names()},
      {"ops", ParamType::Int, "matmuls per timed sample", Value{std::int64_t{1}}, 1, {}},
  };
  return s;
}

namespace {
constexpr std::int64_t kMaxDim = 1 << 20;

int dim(const Params& p, const char* key) {
  const std::int64_t v = p.has(key) ? p.get_int(key) : p.get_int("size");
  if (v > kMaxDim) throw InputError(std::string("gemm: ") + key + " = " + std::to_string(v) + " is too large");
  return static_cast<int>(v);
}

// Values k/2^8 in [-1, 1): exact in fp32 and fp64 and never all zero, so the
// reference sees the same inputs as the device.
std::vector<double> random_matrix(std::size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-256, 255);
  std::vector<double> v(count);
  for (auto& x : v) x = d(rng) / 256.0;
  return v;
}

DeviceBuffer upload(Device& dev, const std::vector<double>& v, DType t) {
  DeviceBuffer b = dev.alloc(v.size() * dtype_size(t));
  if (t == DType::fp64) {
    dev.copy_to_device(b, v.data(), b.bytes());
  } else {
    std::vector<float> f(v.begin(), v.end());
    dev.copy_to_device(b, f.data(), b.bytes());
  }
  return b;
}
}  // namespace

GemmWorkload::GemmWorkload(const Params& p)
    : dtype_(parse_dtype(p.get_string("dtype"))),
      shape_{dim(p, "m"), dim(p, "n"), dim(p, "k")},
      ops_(p.get_int("ops")) {}

void GemmWorkload::setup(Device& dev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto m = static_cast<std::size_t>(shape_.m), n = static_cast<std::size_t>(shape_.n),
             k = static_cast<std::size_t>(shape_.k);
  a_host_ = random_matrix(m * k, rng);
  b_host_ = random_matrix(k * n, rng);
  a_ = upload(dev, a_host_, dtype_);
  b_ = upload(dev, b_host_, dtype_);
  c_ = dev.alloc(m * n * dtype_size(dtype_));
}

void GemmWorkload::run_sample(Device& dev) {
  for (std::int64_t i = 0; i < ops_; ++i) dev.gemm(dtype_, shape_, a_, b_, c_);
}

double GemmWorkload::flops_per_sample() const {
  return static_cast<double>(ops_) * gemm_flops(shape_.m, shape_.n, shape_.k);
}

double GemmWorkload::bytes_per_sample() const {
  const double e = static_cast<double>(dtype_size(dtype_));
  return static_cast<double>(ops_) * e *
         (double(shape_.m) * shape_.k + double(shape_.k) * shape_.n + double(shape_.m) * shape_.n);
}

Verification GemmWorkload::verify(Device& dev) {
  const auto m = static_cast<std::size_t>(shape_.m), n = static_cast<std::size_t>(shape_.n),
             k = static_cast<std::size_t>(shape_.k);
  std::vector<double> c(m * n);
  if (dtype_ == DType::fp64) {
    dev.copy_to_host(c.data(), c_, c_.bytes());
  } else {
    std::vector<float> f(m * n);
    dev.copy_to_host(f.data(), c_, c_.bytes());
    std::copy(f.begin(), f.end(), c.begin());
  }
  // Corners plus a fixed pseudo-random sample of entries.
  std::vector<std::pair<std::size_t, std::size_t>> at{{0, 0}, {m - 1, n - 1}, {0, n - 1}, {m - 1, 0}};
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 64; ++i) at.emplace_back(rng() % m, rng() % n);

  Verification v;
  // Each product is exact; the sum of k terms rounds at most k times.
  v.tolerance = 2.0 * static_cast<double>(k) * dtype_epsilon(dtype_);
  for (auto [i, j] : at) {
    long double ref = 0.0L, mag = 0.0L;
    for (std::size_t p = 0; p < k; ++p) {
      const long double t = static_cast<long double>(a_host_[i * k + p]) * b_host_[p * n + j];
      ref += t;
      mag += std::fabs(t);
    }
    const double err = mag > 0 ? static_cast<double>(std::fabs(c[i * n + j] - ref) / mag)
                               : static_cast<double>(std::fabs(c[i * n + j] - ref));
    v.max_error = std::max(v.max_error, std::isnan(err) ? INFINITY : err);
  }
  v.ok = v.max_error <= v.tolerance;
  return v;
}

}  // namespace gpuscale
