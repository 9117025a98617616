#include "workloads/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/hash.hpp"
#include "device/ops/multiply_add.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {
// 4 TiB of fp32 per buffer: beyond any memory, and far from overflowing a byte count.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

WorkloadSchema elementwise_schema() {
  WorkloadSchema s;
  s.name = "elementwise";
  s.rate = RateKind::bytes;
  s.description = "r += a*b over `elements` values, `ops` passes per timed sample; memory bound, bandwidth in GB/s";
  s.params = {
      {"elements", ParamType::Int, "elements of each of a, b, r", Value{std::int64_t{1} << 24}, 1, {},
       static_cast<double>(kMaxElements)},
      {"dtype", ParamType::String, "fp32 | fp64", Value{std::string("fp32")}, 0, {"fp32", "fp64"}},
      {"ops", ParamType::Int, "passes of r += a*b per timed sample", Value{std::int64_t{10}}, 1, {}, kMaxCount},
  };
  return s;
}

// Nonzero quarters: -1, -3/4, ..., -1/4, 1/4, ..., 1.
double quarter(std::uint64_t bits) {
  const int k = static_cast<int>(bits & 7);
  return (k < 4 ? k - 4 : k - 3) / 4.0;
}

// Elements staged through host memory at a time where the device's memory is not the host's.
constexpr std::size_t kChunk = std::size_t{1} << 22;

// Writes the inputs of elements [begin, begin + n) to a, b, r.
template <class T>
void fill(std::uint64_t seed, std::size_t begin, std::size_t n, T* a, T* b, T* r) {
  for (std::size_t i = 0; i < n; ++i) {
    const ElementwiseInputs in = elementwise_inputs(seed, begin + i);
    a[i] = static_cast<T>(in.a);
    b[i] = static_cast<T>(in.b);
    r[i] = static_cast<T>(in.r0);
  }
}

template <class T>
void upload(Device& dev, DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& r, std::uint64_t seed, std::size_t count) {
  auto at = [](DeviceBuffer& buf, std::size_t i) { return static_cast<T*>(buf.data()) + i; };
  if (dev.buffers_on_host()) {  // written in place: every page is touched before anything is timed
    fill(seed, 0, count, at(a, 0), at(b, 0), at(r, 0));
    return;
  }
  const std::size_t chunk = std::min(count, kChunk);
  std::vector<T> ha(chunk), hb(chunk), hr(chunk);
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const std::size_t n = std::min(kChunk, count - begin);
    fill(seed, begin, n, ha.data(), hb.data(), hr.data());
    dev.copy_async(at(a, begin), ha.data(), n * sizeof(T), CopyKind::h2d);
    dev.copy_async(at(b, begin), hb.data(), n * sizeof(T), CopyKind::h2d);
    dev.copy_async(at(r, begin), hr.data(), n * sizeof(T), CopyKind::h2d);
    dev.synchronize();  // before the chunks are refilled
  }
}

template <class T>
Verification check(Device& dev, const DeviceBuffer& r, std::uint64_t seed, std::size_t count, std::int64_t passes,
                   double tolerance) {
  dev.synchronize();
  std::vector<T> host;
  if (!dev.buffers_on_host()) host.resize(std::min(count, kChunk));
  const double n = static_cast<double>(passes);
  Verification v;
  v.tolerance = tolerance;
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const std::size_t len = std::min(kChunk, count - begin);
    const T* got = static_cast<const T*>(r.data()) + begin;
    if (!host.empty()) {
      dev.copy_async(host.data(), got, len * sizeof(T), CopyKind::d2h);
      dev.synchronize();
      got = host.data();
    }
    for (std::size_t i = 0; i < len; ++i) {
      const ElementwiseInputs in = elementwise_inputs(seed, begin + i);
      const double expected = in.r0 + n * (in.a * in.b);  // exact in double while the dtype's values are exact
      const double scale = std::max(1.0, std::abs(in.r0) + n * std::abs(in.a * in.b));
      double err = std::abs(static_cast<double>(got[i]) - expected) / scale;
      if (!(err <= tolerance)) {
        ++v.wrong_elements;
        if (std::isnan(err)) err = std::numeric_limits<double>::infinity();
      }
      v.max_error = std::max(v.max_error, err);
    }
  }
  v.ok = v.wrong_elements == 0;
  return v;
}

class ElementwiseType final : public TypedWorkloadType<ElementwiseParams> {
 public:
  ElementwiseType() : TypedWorkloadType(elementwise_schema()) {}
  ElementwiseParams parse(const Params& p) const override { return ElementwiseParams::from(p); }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"elements = 300000", "elements = 100000\ndtype = \"fp64\"\nops = 1"});
  }
  Params small(const Params& p) const override {
    Params out = p;
    out.set("elements", std::int64_t{4} << 20);
    return out;
  }

 private:
  std::unique_ptr<Workload> make_for(const ElementwiseParams& e) const override {
    return std::make_unique<ElementwiseWorkload>(e);
  }
  // An `elements` past any memory (2^40) is refused before anything is allocated.
  std::string unsupported_for(const ElementwiseParams& e, const RunTarget&) const override {
    if (e.elements > kMaxElements) {
      return "key 'elements' = " + std::to_string(e.elements) + " is too large (at most " +
             std::to_string(kMaxElements) + ")";
    }
    return "";
  }
  // a, b and r; where the device's memory is not the host's, their chunks staged in host memory.
  MemoryNeed memory_for(const ElementwiseParams& e, bool buffers_on_host) const override {
    const double n = static_cast<double>(e.elements), size = static_cast<double>(dtype_size(e.dtype));
    return {3 * n * size, buffers_on_host ? 0.0 : 3 * std::min(n, static_cast<double>(kChunk)) * size};
  }
  CaseWork work_for(const ElementwiseParams& e, const JobShape& job) const override {
    SampleWork w;
    const double ops = static_cast<double>(e.ops);
    w.add_stream(kPass, ops * static_cast<double>(e.elements) * 4.0 * static_cast<double>(dtype_size(e.dtype)), ops);
    return local_case_work(w, job);
  }
};

}  // namespace

ElementwiseParams ElementwiseParams::from(const Params& p) {
  return {p.get_int("elements"), parse_dtype(p.get_string("dtype")), p.get_int("ops")};
}

const WorkloadType& elementwise_type() {
  static const ElementwiseType type;
  return type;
}

ElementwiseInputs elementwise_inputs(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = splitmix64(seed * 0xD1B54A32D192ED03ULL + i);
  const double r0 = static_cast<double>(static_cast<int>((h >> 6) & 31) - 16) / 16.0;  // [-1, 15/16]
  return {quarter(h), quarter(h >> 3), r0};
}

double elementwise_tolerance(DType t, std::int64_t passes) {
  // |r| <= 1 + n and every value is a multiple of 1/16: exact below 2^digits / 16.
  const int digits = t == DType::fp64 ? 53 : 24;
  const double n = static_cast<double>(passes);
  if ((1.0 + n) * 16.0 < std::ldexp(1.0, digits)) return 0.0;
  return n * std::ldexp(1.0, 1 - digits);
}

ElementwiseWorkload::ElementwiseWorkload(const ElementwiseParams& p)
    : elements_(static_cast<std::size_t>(p.elements)), dtype_(p.dtype), ops_(p.ops) {}

void ElementwiseWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  seed_ = seed;
  passes_ = 0;
  const std::size_t bytes = elements_ * dtype_size(dtype_);
  a_ = dev.alloc(bytes);
  b_ = dev.alloc(bytes);
  r_ = dev.alloc(bytes);
  if (dtype_ == DType::fp64) {
    upload<double>(dev, a_, b_, r_, seed, elements_);
  } else {
    upload<float>(dev, a_, b_, r_, seed, elements_);
  }
}

void ElementwiseWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) multiply_add(ctx.dev, dtype_, a_, b_, r_, elements_);
  passes_ += ops_;
}

double ElementwiseWorkload::bytes_per_sample() const {
  // Each pass reads a, b and r and writes r.
  return static_cast<double>(ops_) * static_cast<double>(elements_) * 4.0 * static_cast<double>(dtype_size(dtype_));
}

Verification ElementwiseWorkload::verify(CaseContext& ctx) {
  const double tol = elementwise_tolerance(dtype_, passes_);
  if (dtype_ == DType::fp64) return check<double>(ctx.dev, r_, seed_, elements_, passes_, tol);
  return check<float>(ctx.dev, r_, seed_, elements_, passes_, tol);
}

}  // namespace gpuscale
