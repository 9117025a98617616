#include "workloads/copy.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include "core/error.hpp"
#include "workloads/typed_workload.hpp"

namespace gpuscale {

namespace {

WorkloadSchema copy_schema() {
  WorkloadSchema s;
  s.name = "copy";
  s.rate = RateKind::bytes;
  s.description = "memory copies h2d | d2h | d2d, pinned or pageable host memory; bandwidth in GB/s";
  s.params = {
      {"bytes", ParamType::Int, "bytes per copy; sweep with a list or {from, to, factor}",
       Value{std::int64_t{1} << 20}, 1, {}, kMaxBufferBytes},
      {"direction", ParamType::String, "h2d | d2h | d2d", Value{std::string("h2d")}, 0, {"h2d", "d2h", "d2d"}},
      {"host", ParamType::String, "host memory: pinned | pageable", Value{std::string("pinned")}, 0,
       {"pinned", "pageable"}},
      {"ops", ParamType::Int, "copies per timed sample", Value{std::int64_t{1}}, 1, {}, kMaxCount},
  };
  return s;
}

CopyKind parse_kind(const std::string& s) {
  if (s == "h2d") return CopyKind::h2d;
  if (s == "d2h") return CopyKind::d2h;
  return CopyKind::d2d;
}

class CopyType final : public TypedWorkloadType<CopyParams> {
 public:
  CopyType() : TypedWorkloadType(copy_schema()) {}
  CopyParams parse(const Params& p) const override { return CopyParams::from(p); }
  std::vector<Params> examples() const override {
    return example_params(schema(), {"bytes = 1000000\ndirection = [\"h2d\", \"d2d\"]",
                                     "bytes = 1000000\ndirection = \"d2h\"\nhost = \"pageable\"\nops = 2"});
  }
  // Past the caches: setup at scale is bound by memory.
  Params small(const Params& p) const override {
    Params out = p;
    out.set("bytes", std::int64_t{32} << 20);
    return out;
  }

 private:
  std::unique_ptr<Workload> make_for(const CopyParams& c) const override { return std::make_unique<CopyWorkload>(c); }
  // On the host besides the host end: the pattern, with the destination's
  // poison (setup) or the download (verify).
  MemoryNeed memory_for(const CopyParams& c, bool) const override {
    const double b = static_cast<double>(c.bytes);
    if (c.kind == CopyKind::d2d) return {2 * b, 2 * b};
    return {b, 3 * b};
  }
  CaseWork work_for(const CopyParams& c, const JobShape& job) const override {
    SampleWork w;
    const double ops = static_cast<double>(c.ops);
    w.add_copy(c.kind, c.pinned, static_cast<double>(c.bytes) * ops, ops);
    return local_case_work(w, job);
  }
};

}  // namespace

CopyParams CopyParams::from(const Params& p) {
  return {static_cast<std::size_t>(p.get_int("bytes")), parse_kind(p.get_string("direction")),
          p.get_string("host") == "pinned", p.get_int("ops")};
}

const WorkloadType& copy_type() {
  static const CopyType type;
  return type;
}

CopyWorkload::CopyWorkload(const CopyParams& p) : bytes_(p.bytes), ops_(p.ops), kind_(p.kind), pinned_(p.pinned) {}

void CopyWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  pattern_.resize(bytes_);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < bytes_; i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(pattern_.data() + i, &r, std::min<std::size_t>(8, bytes_ - i));
  }
  // The destination starts as the pattern's complement, so a copy that never
  // ran fails on every byte, whatever the allocator hands back.
  std::vector<unsigned char> poison(bytes_);
  for (std::size_t i = 0; i < bytes_; ++i) poison[i] = static_cast<unsigned char>(~pattern_[i]);
  switch (kind_) {
    case CopyKind::h2d:
      src_ = dev.alloc_host(bytes_, pinned_);
      std::memcpy(src_.data(), pattern_.data(), bytes_);
      dst_ = dev.alloc(bytes_);
      dev.copy_to_device(dst_, poison.data(), bytes_);
      break;
    case CopyKind::d2h:
      src_ = dev.alloc(bytes_);
      dev.copy_to_device(src_, pattern_.data(), bytes_);
      dst_ = dev.alloc_host(bytes_, pinned_);
      std::memcpy(dst_.data(), poison.data(), bytes_);
      break;
    case CopyKind::d2d:
      src_ = dev.alloc(bytes_);
      dev.copy_to_device(src_, pattern_.data(), bytes_);
      dst_ = dev.alloc(bytes_);
      dev.copy_to_device(dst_, poison.data(), bytes_);
      break;
  }
}

void CopyWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) ctx.dev.copy_async(dst_.data(), src_.data(), bytes_, kind_);
}

Verification CopyWorkload::verify(CaseContext& ctx) {
  Device& dev = ctx.dev;
  std::vector<unsigned char> got(bytes_);
  if (kind_ == CopyKind::d2h) {
    dev.synchronize();
    std::memcpy(got.data(), dst_.data(), bytes_);
  } else {
    dev.copy_to_host(got.data(), dst_, bytes_);
  }
  Verification v;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes_; ++i) wrong += got[i] != pattern_[i];
  v.max_error = static_cast<double>(wrong);
  v.tolerance = 0.0;
  v.ok = wrong == 0;
  return v;
}

std::string CopyWorkload::note(const CaseContext& ctx) const {
  if (ctx.dev.info().kind == Backend::cpu) {
    return "CPU backend: device memory is host memory, so this measures memcpy; pinned is the same as pageable";
  }
  return "";
}

}  // namespace gpuscale
