#include "workloads/gemv.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/hash.hpp"
#include "workloads/gemm_operands.hpp"
#include "workloads/gemv_op.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {

constexpr const char* kGemvKind = "gemv";
// Elements of A made and staged at a time.
constexpr std::size_t kChunk = std::size_t{1} << 22;
// A dimension is an int (BLAS's), and 2^20 x 2^20 elements stay far inside a 64-bit byte count.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;

WorkloadSchema gemv_schema() {
  WorkloadSchema s;
  s.name = "gemv";
  s.rate = RateKind::bytes;
  s.description = "y = A x, A of m x n, `ops` products per timed sample (cuBLAS/OpenBLAS gemv); memory bound, "
                  "bandwidth in GB/s of A, x and y";
  s.params = {
      {"m", ParamType::Int, "rows of A, elements of y", Value{std::int64_t{8192}}, 1, {}, static_cast<double>(kMaxDim)},
      {"n", ParamType::Int, "columns of A, elements of x", Value{std::int64_t{8192}}, 1, {},
       static_cast<double>(kMaxDim)},
      {"dtype", ParamType::String, "fp32 | fp64 | bf16 (CUDA backend)", Value{std::string("fp32")}, 0,
       {"fp32", "fp64", "bf16"}},
      {"ops", ParamType::Int, "products y = A x per timed sample", Value{std::int64_t{10}}, 1, {}, kMaxCount},
  };
  return s;
}

double in_256ths(std::uint64_t h) { return static_cast<double>(static_cast<int>(h & 511) - 256) / 256.0; }

double stream_bytes(double m, double n, DType t) { return (m * n + n + m) * static_cast<double>(dtype_size(t)); }

// Writes `count` values made by `value(k)` for k from `begin` into `dst` (device memory) in dtype t.
template <class F>
void upload(Device& dev, DeviceBuffer& dst, DType t, std::size_t count, F value) {
  const std::size_t e = dtype_size(t);
  std::vector<double> v(std::min(count, kChunk));
  std::vector<unsigned char> staged(dev.buffers_on_host() ? 0 : v.size() * e);
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const std::size_t len = std::min(kChunk, count - begin);
    for (std::size_t k = 0; k < len; ++k) v[k] = value(begin + k);
    unsigned char* at = static_cast<unsigned char*>(dst.data()) + begin * e;
    if (dev.buffers_on_host()) {  // written in place: every page is touched before anything is timed
      encode(v.data(), len, t, at);
      continue;
    }
    encode(v.data(), len, t, staged.data());
    dev.copy_async(at, staged.data(), len * e, CopyKind::h2d);
    dev.synchronize();  // before the chunk is refilled
  }
}

class GemvType final : public TypedWorkloadType<GemvParams> {
 public:
  GemvType() : TypedWorkloadType(gemv_schema()) {}
  GemvParams parse(const Params& p) const override { return GemvParams::from(p); }
  std::vector<StreamKind> stream_kinds() const override {
    return {{kGemvKind, kPass, "matrix-vector products: the matrix, x and y, each streamed once a product"}};
  }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"m = 256\nn = 256", "m = 300\nn = 200\ndtype = \"fp64\"\nops = 2"});
  }
  Params small(const Params& p) const override {  // 16 MiB of fp32
    Params out = p;
    out.set("m", std::int64_t{2048});
    out.set("n", std::int64_t{2048});
    return out;
  }

 private:
  std::unique_ptr<Workload> make_for(const GemvParams& g) const override { return std::make_unique<GemvWorkload>(g); }
  std::string unsupported_for(const GemvParams& g, const RunTarget& target) const override {
    return gemv_unsupported(target.backend, g.dtype);
  }
  // A, x and y; on the host a chunk of A as doubles (staged in the dtype too where the device's memory is not the
  // host's), and for the check y as stored, and x and y as doubles.
  MemoryNeed memory_for(const GemvParams& g, bool buffers_on_host) const override {
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n);
    const double e = static_cast<double>(dtype_size(g.dtype));
    const double chunk = std::min(m * n, static_cast<double>(kChunk));
    return {(m * n + n + m) * e, 8 * (n + m + chunk) + e * m + (buffers_on_host ? 0.0 : e * chunk)};
  }
  CaseWork work_for(const GemvParams& g, const JobShape& job) const override {
    SampleWork w;
    const double ops = static_cast<double>(g.ops);
    w.add_stream(kGemvKind, ops * stream_bytes(static_cast<double>(g.m), static_cast<double>(g.n), g.dtype), ops);
    return local_case_work(w, job);
  }
};

}  // namespace

GemvParams GemvParams::from(const Params& p) {
  return {p.get_int("m"), p.get_int("n"), parse_dtype(p.get_string("dtype")), p.get_int("ops")};
}

const WorkloadType& gemv_type() {
  static const GemvType type;
  return type;
}

double gemv_a(std::uint64_t seed, std::size_t i, std::size_t j, std::size_t n) {
  return in_256ths(splitmix64(seed * 0xD1B54A32D192ED03ULL + i * n + j));
}

double gemv_x(std::uint64_t seed, std::size_t j) { return in_256ths(splitmix64(~seed * 0x9E3779B97F4A7C15ULL + j)); }

GemvWorkload::GemvWorkload(const GemvParams& p)
    : m_(static_cast<int>(p.m)), n_(static_cast<int>(p.n)), dtype_(p.dtype), ops_(p.ops) {}

void GemvWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  seed_ = seed;
  const auto m = static_cast<std::size_t>(m_), n = static_cast<std::size_t>(n_);
  const std::size_t e = dtype_size(dtype_);
  a_ = dev.alloc(m * n * e);
  x_ = dev.alloc(n * e);
  y_ = dev.alloc(m * e);
  upload(dev, a_, dtype_, m * n, [&](std::size_t k) { return gemv_a(seed, k / n, k % n, n); });
  upload(dev, x_, dtype_, n, [&](std::size_t j) { return gemv_x(seed, j); });
  // y starts as NaN, so a product that never ran cannot verify on memory that holds an earlier case's result.
  dev.poison(y_.data(), y_.bytes());
}

void GemvWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) gemv(ctx.dev, dtype_, m_, n_, a_, x_, y_);
}

double GemvWorkload::bytes_per_sample() const {
  return static_cast<double>(ops_) * stream_bytes(m_, n_, dtype_);
}

Verification GemvWorkload::verify(CaseContext& ctx) {
  const auto m = static_cast<std::size_t>(m_), n = static_cast<std::size_t>(n_);
  std::vector<unsigned char> stored(y_.bytes());
  ctx.dev.copy_to_host(stored.data(), y_, stored.size());
  std::vector<double> y(m), x(n);
  decode(stored.data(), m, dtype_, y.data());
  for (std::size_t j = 0; j < n; ++j) x[j] = gemv_x(seed_, j);
  Verification v;
  v.tolerance = gemm_tolerance(dtype_, n_);
  for (std::size_t i = 0; i < m; ++i) {
    long double ref = 0.0L, mag = 0.0L;
    for (std::size_t j = 0; j < n; ++j) {
      const long double t = static_cast<long double>(gemv_a(seed_, i, j, n)) * x[j];
      ref += t;
      mag += std::fabs(t);
    }
    const long double diff = std::fabs(y[i] - ref);
    double err = static_cast<double>(mag > 0 ? diff / mag : diff);
    if (!(err <= v.tolerance)) {
      ++v.wrong_elements;
      if (std::isnan(err)) err = std::numeric_limits<double>::infinity();
    }
    v.max_error = std::max(v.max_error, err);
  }
  v.ok = v.wrong_elements == 0;
  return v;
}

}  // namespace gpuscale
