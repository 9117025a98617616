// Point-to-point, as OSU's osu_latency, osu_bw and osu_bibw measure it,
// between the pairs of each group of a scope: rank r of a group with the rank
// half a group away (groups of an even size). One operation is one of OSU's
// iterations:
//   pattern = latency: a round trip (ping-pong); the lower rank sends, the
//             upper sends back; latency = op time / 2, in us (osu_latency).
//   pattern = bw:      a window: the lower rank sends `window` messages, the
//             upper receives them and answers with one 4-byte
//             acknowledgement (osu_bw); bandwidth = bytes x window / op time.
//   pattern = bibw:    a window each way: both send `window` messages to each
//             other (osu_bibw); bandwidth = 2 x bytes x window / op time.
// Each message is enqueued on the data plane, which returns at once: a
// window's messages are in flight together, and the acknowledgement (bw) or
// the last exchange (bibw) ends it. On MPI the rank's stream runs them in
// order as MPI_Send and MPI_Recv (bibw: MPI_Sendrecv), where OSU posts the
// window as MPI_Isend and MPI_Irecv and waits for all (docs/config.md says
// what that costs). The report gives OSU's numbers: latency in us, bandwidth
// in MB/s (10^6 B/s), and no bus bandwidth.
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
  std::int64_t window = 64;  // messages per iteration of bw and bibw (osu_bw's window_size); latency: 1
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
  void one_op(CaseContext& ctx);  // a round trip, a window and its acknowledgement, or a window each way
  void fill(CaseContext& ctx);

  P2pParams p_;
  int rank_ = 0, size_ = 2, peer_ = 1;
  bool lower_ = true;  // the pair's first rank: sends first
  std::size_t count_ = 0;
  DeviceBuffer send_, recv_, ack_;
};

}  // namespace gpuscale
