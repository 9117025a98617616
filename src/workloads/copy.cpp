#include "workloads/copy.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/hash.hpp"
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
  // On the host besides the host end: the staging buffer that fills and
  // checks device memory a part at a time.
  MemoryNeed memory_for(const CopyParams& c, bool) const override {
    const double b = static_cast<double>(c.bytes);
    const double stage = std::min(b, static_cast<double>(kCopyStageBytes));
    if (c.kind == CopyKind::d2d) return {2 * b, stage};
    return {b, b + stage};
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

namespace {

// Word i (8 bytes) of the source: splitmix64 of the seed and i, so any part of it can be made again to check, and
// no copy of it is kept.
std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t i) { return splitmix64(seed * kGoldenGamma + i); }

// The pattern's bytes [offset, offset + n) (offset a multiple of 8), or their complement.
void make_pattern(unsigned char* out, std::size_t offset, std::size_t n, std::uint64_t seed, bool complement) {
  const std::uint64_t flip = complement ? ~std::uint64_t{0} : 0;
  const std::uint64_t first = offset / 8;
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t w = pattern_word(seed, first + i / 8) ^ flip;
    std::memcpy(out + i, &w, std::min<std::size_t>(8, n - i));
  }
}

// How many of the n bytes at `got` differ from the pattern's bytes [offset, offset + n).
std::size_t wrong_bytes(const unsigned char* got, std::size_t offset, std::size_t n, std::uint64_t seed) {
  std::size_t wrong = 0;
  const std::uint64_t first = offset / 8;
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t want = pattern_word(seed, first + i / 8);
    const std::size_t k = std::min<std::size_t>(8, n - i);
    std::uint64_t have = 0;
    std::memcpy(&have, got + i, k);
    std::uint64_t diff = have ^ want;
    if (k < 8) diff &= (std::uint64_t{1} << (8 * k)) - 1;
    for (; diff != 0; diff >>= 8) wrong += (diff & 0xFF) != 0;
  }
  return wrong;
}

}  // namespace

// Host memory that is the case's own (the host end) is written in place; device memory a staging buffer of at
// most kCopyStageBytes at a time, so a case of 1 GiB touches little more than its two ends.
void CopyWorkload::fill(Device& dev, Buffer& b, bool on_host, bool complement) {
  if (on_host) return make_pattern(static_cast<unsigned char*>(b.data()), 0, bytes_, seed_, complement);
  stage_.resize(std::min(bytes_, kCopyStageBytes));
  for (std::size_t off = 0; off < bytes_; off += stage_.size()) {
    const std::size_t n = std::min(stage_.size(), bytes_ - off);
    make_pattern(stage_.data(), off, n, seed_, complement);
    dev.copy_async(static_cast<unsigned char*>(b.data()) + off, stage_.data(), n, CopyKind::h2d);
    dev.synchronize();  // the stage is written again next
  }
}

void CopyWorkload::setup(CaseContext& ctx, std::uint64_t seed) {
  Device& dev = ctx.dev;
  seed_ = seed;
  const bool host_src = kind_ == CopyKind::h2d, host_dst = kind_ == CopyKind::d2h;
  src_ = host_src ? dev.alloc_host(bytes_, pinned_) : dev.alloc(bytes_);
  dst_ = host_dst ? dev.alloc_host(bytes_, pinned_) : dev.alloc(bytes_);
  fill(dev, src_, host_src, false);
  // The destination starts as the pattern's complement, so a copy that never ran fails on every byte, whatever
  // the allocator hands back.
  fill(dev, dst_, host_dst, true);
}

void CopyWorkload::run_sample(CaseContext& ctx) {
  for (std::int64_t i = 0; i < ops_; ++i) ctx.dev.copy_async(dst_.data(), src_.data(), bytes_, kind_);
}

Verification CopyWorkload::verify(CaseContext& ctx) {
  Device& dev = ctx.dev;
  dev.synchronize();
  std::size_t wrong = 0;
  if (kind_ == CopyKind::d2h) {
    wrong = wrong_bytes(static_cast<const unsigned char*>(dst_.data()), 0, bytes_, seed_);
  } else {
    stage_.resize(std::min(bytes_, kCopyStageBytes));
    for (std::size_t off = 0; off < bytes_; off += stage_.size()) {
      const std::size_t n = std::min(stage_.size(), bytes_ - off);
      dev.copy_async(stage_.data(), static_cast<const unsigned char*>(dst_.data()) + off, n, CopyKind::d2h);
      dev.synchronize();
      wrong += wrong_bytes(stage_.data(), off, n, seed_);
    }
  }
  Verification v;
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
