#include "comm/clock_sync.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "comm/mpi_check.hpp"
#include "core/clock.hpp"

namespace gpuscale {

ClockOffset estimate_clock_offset(const MpiCommunicator& comm, const ClockSyncOptions& opt) {
  constexpr int kTag = 7301;
  ClockOffset mine;
  const MPI_Comm c = comm.comm();
  // Ranks on rank 0's node read the same clock (one kernel's monotonic
  // clock): offset 0 by construction, nothing to estimate.
  std::vector<int> node(static_cast<std::size_t>(comm.size()));
  const int my_node = comm.node_index();
  GPUSCALE_MPI(MPI_Allgather(&my_node, 1, MPI_INT, node.data(), 1, MPI_INT, c));
  auto shares = [&](int r) { return r == 0 || (opt.share_node_clock && node[static_cast<std::size_t>(r)] == node[0]); };
  mine.shared = shares(comm.rank());
  int peers = 0;
  for (int r = 1; r < comm.size(); ++r) peers += shares(r) ? 0 : 1;
  const double budget = std::clamp(opt.budget_s / std::max(peers, 1), 0.01, 1.0);
  // Rank 0 measures against each other-node rank in turn; that rank answers
  // each ping with its clock, until rank 0 sends the result instead (tag + 1).
  for (int peer = 1; peer < comm.size(); ++peer) {
    if (shares(peer)) continue;
    if (comm.rank() == 0) {
      double best_rtt = std::numeric_limits<double>::infinity();
      ClockOffset best;
      const double start = clock_now();
      int i = 0;
      for (; i < opt.min_rounds || (best_rtt > opt.target_rtt_s && clock_now() - start < budget); ++i) {
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
      const double msg[3] = {best.offset_s, best.uncertainty_s, static_cast<double>(i)};
      GPUSCALE_MPI(MPI_Send(msg, 3, MPI_DOUBLE, peer, kTag + 1, c));
    } else if (comm.rank() == peer) {
      for (bool first = true;; first = false) {
        double msg[3] = {0, 0, 0};
        MPI_Status st;
        if (first) {
          // Until rank 0 gets to this rank: sleep, leaving the cores to the pair that measures.
          MPI_Request req = MPI_REQUEST_NULL;
          GPUSCALE_MPI(MPI_Irecv(msg, 3, MPI_DOUBLE, 0, MPI_ANY_TAG, c, &req));
          for (int done = 0; !done;) {
            GPUSCALE_MPI(MPI_Test(&req, &done, &st));
            if (!done) std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        } else {
          GPUSCALE_MPI(MPI_Recv(msg, 3, MPI_DOUBLE, 0, MPI_ANY_TAG, c, &st));
        }
        if (st.MPI_TAG == kTag + 1) {
          mine.offset_s = msg[0];
          mine.uncertainty_s = msg[1];
          mine.rounds = static_cast<int>(msg[2]);
          break;
        }
        const double now = clock_now();
        GPUSCALE_MPI(MPI_Send(&now, 1, MPI_DOUBLE, 0, kTag, c));
      }
    }
  }
  // Ranks done (or never asked) wait without spinning for the last pair.
  comm.idle_barrier();
  return mine;
}

CommonClock::CommonClock(const MpiCommunicator& comm) : offset_(estimate_clock_offset(comm)) {
  epoch_ = comm.broadcast(clock_now());
}

double CommonClock::now() const { return to_common(clock_now()); }

}  // namespace gpuscale
