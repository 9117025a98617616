#include "comm/clock_sync.hpp"

#include <limits>
#include <vector>

#include "comm/mpi_check.hpp"
#include "core/clock.hpp"

namespace gpuscale {

ClockOffset estimate_clock_offset(const MpiCommunicator& comm, int rounds, bool share_node_clock) {
  constexpr int kTag = 7301;
  ClockOffset mine;
  const MPI_Comm c = comm.comm();
  // Ranks on rank 0's node read the same clock (one kernel's monotonic
  // clock): offset 0 by construction, nothing to estimate.
  std::vector<int> node(static_cast<std::size_t>(comm.size()));
  const int my_node = comm.node_index();
  GPUSCALE_MPI(MPI_Allgather(&my_node, 1, MPI_INT, node.data(), 1, MPI_INT, c));
  auto shares = [&](int r) { return r == 0 || (share_node_clock && node[static_cast<std::size_t>(r)] == node[0]); };
  mine.shared = shares(comm.rank());
  // Rank 0 measures against each other-node rank in turn; that rank answers once a round.
  for (int peer = 1; peer < comm.size(); ++peer) {
    if (shares(peer)) continue;
    if (comm.rank() == 0) {
      double best_rtt = std::numeric_limits<double>::infinity();
      ClockOffset best;
      for (int i = 0; i < rounds; ++i) {
        double remote = 0.0;
        const double t0 = clock_now();
        GPUSCALE_MPI(MPI_Send(&t0, 1, MPI_DOUBLE, peer, kTag, c));
        GPUSCALE_MPI(MPI_Recv(&remote, 1, MPI_DOUBLE, peer, kTag, c, MPI_STATUS_IGNORE));
        const double t1 = clock_now();
        if (t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          best.offset_s = remote - 0.5 * (t0 + t1);
          best.uncertainty_s = 0.5 * best_rtt;
        }
      }
      const double msg[2] = {best.offset_s, best.uncertainty_s};
      GPUSCALE_MPI(MPI_Send(msg, 2, MPI_DOUBLE, peer, kTag, c));
    } else if (comm.rank() == peer) {
      for (int i = 0; i < rounds; ++i) {
        double t0 = 0.0;
        GPUSCALE_MPI(MPI_Recv(&t0, 1, MPI_DOUBLE, 0, kTag, c, MPI_STATUS_IGNORE));
        const double now = clock_now();
        GPUSCALE_MPI(MPI_Send(&now, 1, MPI_DOUBLE, 0, kTag, c));
      }
      double msg[2];
      GPUSCALE_MPI(MPI_Recv(msg, 2, MPI_DOUBLE, 0, kTag, c, MPI_STATUS_IGNORE));
      mine.offset_s = msg[0];
      mine.uncertainty_s = msg[1];
    }
  }
  return mine;
}

CommonClock::CommonClock(const MpiCommunicator& comm) : offset_(estimate_clock_offset(comm)) {
  epoch_ = comm.broadcast(clock_now());
}

double CommonClock::now() const { return to_common(clock_now()); }

}  // namespace gpuscale
