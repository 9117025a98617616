// Puts every rank's timestamps on rank 0's clock. Clocks of different nodes
// are not one clock, so each rank's offset to rank 0 is estimated by
// ping-pong, keeping the round trip with the least delay (its half is the
// uncertainty of the estimate).
#pragma once

#include <vector>

#include "comm/mpi_communicator.hpp"

namespace gpuscale {

struct ClockOffset {
  double offset_s = 0.0;       // this rank's clock minus rank 0's clock
  double uncertainty_s = 0.0;  // half the best round trip
  bool shared = false;         // on rank 0's node: the same clock, offset 0 by construction
  int rounds = 0;              // round trips measured (0 where shared)
};

// How hard to try for a small round trip: ping-pong at least `min_rounds`
// times per rank, and on until the least round trip is at most `target_rtt_s`
// or the rank's share of `budget_s` is spent (at least 10 ms, at most 1 s
// per rank). A loaded node delays some round trips, never shortens one: the
// least is the one to keep.
struct ClockSyncOptions {
  int min_rounds = 20;
  double target_rtt_s = 40e-6;
  double budget_s = 4.0;          // for all ranks together
  bool share_node_clock = true;   // false: estimate on rank 0's node too (a test of the estimate)
};

// Collective. Each rank gets its own offset: 0 (exactly, shared) on rank 0's
// node, estimated by ping-pong on other nodes.
ClockOffset estimate_clock_offset(const MpiCommunicator& comm, const ClockSyncOptions& opt = {});

// Maps this rank's clock_now() readings to seconds since a run-wide epoch on
// rank 0's clock.
class CommonClock {
 public:
  CommonClock() = default;
  // Collective: estimates the offset and agrees on the epoch (rank 0's now).
  explicit CommonClock(const MpiCommunicator& comm);
  double to_common(double local_t) const { return local_t - offset_.offset_s - epoch_; }
  double now() const;
  const ClockOffset& offset() const { return offset_; }

 private:
  ClockOffset offset_;
  double epoch_ = 0.0;  // on rank 0's clock
};

}  // namespace gpuscale
