// copy: `ops` copies of `bytes` per sample, host to device (h2d), device to
// host (d2h) or device to device (d2d), from pinned or pageable host memory.
// Verification compares every byte of the destination with the seeded
// pattern of the source; the error is the number of differing bytes.
#pragma once

#include "workloads/workload.hpp"

namespace gpuscale {

const WorkloadType& copy_type();

// The most host memory a case stages device memory through when it fills or checks it.
constexpr std::size_t kCopyStageBytes = std::size_t{64} << 20;

// A case's keys, parsed once for the workload and for its type's hooks.
struct CopyParams {
  std::size_t bytes = 0;
  CopyKind kind = CopyKind::h2d;  // key direction
  bool pinned = true;             // key host
  std::int64_t ops = 1;
  static CopyParams from(const Params& p);
};

class CopyWorkload final : public Workload {
 public:
  explicit CopyWorkload(const CopyParams& p);
  explicit CopyWorkload(const Params& p) : CopyWorkload(CopyParams::from(p)) {}
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }
  double bytes_per_sample() const override { return static_cast<double>(bytes_) * static_cast<double>(ops_); }
  Verification verify(CaseContext& ctx) override;
  std::string note(const CaseContext& ctx) const override;

 private:
  void fill(Device& dev, Buffer& b, bool on_host, bool complement);

  std::size_t bytes_;
  std::int64_t ops_;
  CopyKind kind_;
  bool pinned_;
  std::uint64_t seed_ = 0;
  std::vector<unsigned char> stage_;
  Buffer src_, dst_;
};

}  // namespace gpuscale
