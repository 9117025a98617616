// Point-to-point, as OSU's osu_latency, osu_bw and osu_bibw measure it,
// between the pairs of each group of a scope: rank r of a group with the rank
// half a group away (groups of an even size).
//   pattern = latency: ping-pong; the lower rank sends, the upper sends back,
//             `iters` round trips per sample; latency = sample time / (2 iters).
//   pattern = bw:      the lower rank sends `iters` messages, the upper answers
//             with one 4-byte acknowledgement; bandwidth = bytes x iters / time.
//             The messages go one after another, where osu_bw keeps a window
//             of 64 in flight: at small sizes this measures less than osu_bw.
//   pattern = bibw:    both send `iters` messages to each other at once
//             (sendrecv); bandwidth = 2 x bytes x iters / time.
// The report shows them as transfers: op time (a round trip, a message, an
// exchange), algbw = its bytes / op time, and for latency the one-way
// latency (op time / 2).
#pragma once

#include <cstdint>
#include <string>

#include "workloads/workload.hpp"

namespace gpuscale {

enum class P2pPattern { latency, bw, bibw };

// The case's parameters, parsed once.
struct P2pParams {
  P2pPattern pattern = P2pPattern::latency;
  std::size_t bytes = 8;
  std::int64_t iters = 100;
  Scope scope = Scope::world;
  static P2pParams from(const Params& p);
};

const WorkloadType& p2p_type();

class P2pWorkload final : public Workload {
 public:
  explicit P2pWorkload(const P2pParams& p) : p_(p) {}
  std::string skip_reason(const CaseContext& ctx) const override;
  void setup(CaseContext& ctx, std::uint64_t seed) override;
  void run_sample(CaseContext& ctx) override;
  double flops_per_sample() const override { return 0.0; }
  double bytes_per_sample() const override;
  Verification verify(CaseContext& ctx) override;
  int turn(const CaseContext& ctx, int world_rank) const override;
  double op_bytes() const override;
  double bus_factor(const CaseContext&) const override { return 1.0; }

 private:
  void one_op(CaseContext& ctx);  // a round trip, a message or an exchange
  void fill(CaseContext& ctx);

  P2pParams p_;
  int rank_ = 0, size_ = 2, peer_ = 1;
  bool lower_ = true;  // the pair's first rank: sends first
  std::size_t count_ = 0;
  DeviceBuffer send_, recv_, ack_;
};

}  // namespace gpuscale
