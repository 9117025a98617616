#include "workloads/gemm_operands.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/metrics.hpp"
#include "device/capabilities.hpp"

namespace gpuscale {

std::vector<ParamSpec> gemm_problem_specs(std::int64_t default_size, const std::string& default_dtype) {
  constexpr auto kDim = static_cast<double>(kMaxGemmDim);
  return {
      {"size", ParamType::Int, "m = n = k unless m, n or k is given", Value{default_size}, 1, {}, kDim},
      {"m", ParamType::Int, "rows of A and C (default: size)", std::nullopt, 1, {}, kDim},
      {"n", ParamType::Int, "columns of B and C (default: size)", std::nullopt, 1, {}, kDim},
      {"k", ParamType::Int, "columns of A, rows of B (default: size)", std::nullopt, 1, {}, kDim},
      {"dtype", ParamType::String, "element type", Value{default_dtype}, 0, dtype_names()},
      {"impl", ParamType::String, "vendor (cuBLAS/OpenBLAS) or one of our kernels", Value{std::string("vendor")}, 0,
       gemm_impl_names()},
  };
}

namespace {

int dim(const Params& p, const char* key) {
  const std::string given = p.has(key) ? key : "size";
  const std::int64_t v = p.get_int(given);
  if (v > kMaxGemmDim) {  // the config refuses it; parameters made in code are held to it too
    throw InputError("key '" + given + "' = " + std::to_string(v) + " is too large (at most " +
                     std::to_string(kMaxGemmDim) + ")");
  }
  return static_cast<int>(v);
}

std::vector<double> random_matrix(std::size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-256, 255);
  std::vector<double> v(count);
  for (auto& x : v) x = d(rng) / 256.0;
  return v;
}

}  // namespace

DeviceBuffer upload_values(Device& dev, const std::vector<double>& v, DType t) {
  std::vector<unsigned char> bytes(v.size() * dtype_size(t));
  encode(v.data(), v.size(), t, bytes.data());
  DeviceBuffer b = dev.alloc(bytes.size());
  dev.copy_to_device(b, bytes.data(), bytes.size());
  return b;
}

std::vector<std::pair<std::size_t, std::size_t>> sampled_entries(std::size_t rows, std::size_t cols, int corners,
                                                                 int count, std::mt19937_64& rng) {
  std::vector<std::pair<std::size_t, std::size_t>> at{{0, 0}, {rows - 1, cols - 1}, {0, cols - 1}, {rows - 1, 0}};
  at.resize(static_cast<std::size_t>(corners));
  for (int q = 0; q < count; ++q) {
    const std::size_t j = rng() % cols;
    at.emplace_back(rng() % rows, j);
  }
  return at;
}

double GemmProblem::flops() const { return gemm_flops(shape.m, shape.n, shape.k); }

GemmProblem gemm_problem(const Params& p) {
  GemmProblem g;
  g.impl = parse_gemm_impl(p.get_string("impl"));
  g.dtype = parse_dtype(p.get_string("dtype"));
  g.shape = {dim(p, "m"), dim(p, "n"), dim(p, "k")};
  return g;
}

std::string gemm_problem_unsupported(const GemmProblem& g, Backend backend) {
  return gemm_unsupported(backend, g.impl, g.dtype);
}

double gemm_tolerance(DType t, int k) {
  const double accumulate = 2.0 * k * (t == DType::fp64 ? 0x1p-53 : 0x1p-24);
  switch (t) {
    case DType::fp64:
    case DType::fp32: return accumulate;
    case DType::tf32: return accumulate + 0x1p-11;  // inputs are exact in tf32; margin for the math mode
    case DType::fp16:
    case DType::bf16: return accumulate + dtype_unit_roundoff(t);  // C is rounded to its storage type
  }
  return accumulate;
}

MemoryNeed gemm_operands_memory(const GemmProblem& p) {
  const double m = p.shape.m, n = p.shape.n, k = p.shape.k, e = static_cast<double>(dtype_size(p.dtype));
  return {e * (m * k + k * n + m * n), 8 * (m * k + k * n) + std::max({e * m * k, e * k * n, (8 + e) * m * n})};
}

void GemmOperands::setup(Device& dev, const GemmProblem& p, std::uint64_t seed) {
  p_ = p;
  std::mt19937_64 rng(seed);
  const auto m = static_cast<std::size_t>(p.shape.m), n = static_cast<std::size_t>(p.shape.n),
             k = static_cast<std::size_t>(p.shape.k);
  a_host_ = random_matrix(m * k, rng);
  b_host_ = random_matrix(k * n, rng);
  a_ = upload_values(dev, a_host_, p.dtype);
  b_ = upload_values(dev, b_host_, p.dtype);
  c_ = dev.alloc(m * n * dtype_size(p.dtype));
  // C starts as NaN, so a multiplication that never ran cannot verify on
  // memory that still holds an earlier case's result.
  dev.poison(c_.data(), c_.bytes());
}

std::vector<double> GemmOperands::download_c(Device& dev) const {
  std::vector<unsigned char> bytes(c_.bytes());
  dev.copy_to_host(bytes.data(), c_, bytes.size());
  std::vector<double> c(c_count());
  decode(bytes.data(), c.size(), p_.dtype, c.data());
  return c;
}

Verification GemmOperands::verify(Device& dev, long double* c_sum_squares) const {
  const std::vector<double> c = download_c(dev);
  if (c_sum_squares) {
    *c_sum_squares = 0.0L;
    for (double x : c) *c_sum_squares += static_cast<long double>(x) * x;
  }
  return verify_values(c);
}

Verification GemmOperands::verify_host(const void* c_stored) const {
  std::vector<double> c(c_count());
  decode(c_stored, c.size(), p_.dtype, c.data());
  return verify_values(c);
}

Verification GemmOperands::verify_values(const std::vector<double>& c) const {
  const auto m = static_cast<std::size_t>(p_.shape.m), n = static_cast<std::size_t>(p_.shape.n),
             k = static_cast<std::size_t>(p_.shape.k);
  std::mt19937_64 rng(12345);  // the same sample of entries every time
  Verification v;
  v.tolerance = gemm_tolerance(p_.dtype, p_.shape.k);
  check_entries(
      sampled_entries(m, n, 4, 64, rng), k, [&](std::size_t i, std::size_t j) { return c[i * n + j]; },
      [&](std::size_t i, std::size_t q) { return a_host_[i * k + q]; },
      [&](std::size_t q, std::size_t j) { return b_host_[q * n + j]; }, v);
  v.ok = v.max_error <= v.tolerance;  // from the largest error: no wrong elements are counted here
  return v;
}

}  // namespace gpuscale
