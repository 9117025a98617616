// The end of a run on one node: once MPI_Finalize returned, a rank frozen
// (SIGSTOP) before it exits would keep the launcher waiting for ever, and its
// own watchdog cannot fire. So every rank watches the other ranks of its node
// by their PIDs until each has exited or finished likewise; one still stopped
// after the run's edge bound is killed (SIGKILL) and ends this rank with exit
// code 3, and the launcher then ends the job. A node whose only rank freezes
// there is not covered.
#pragma once

#include <string>
#include <vector>

namespace gpuscale {

class MpiCommunicator;

struct NodePeer {
  int rank = 0;
  int pid = 0;
};

// The other ranks of this rank's node. Collective (an allgather over every rank).
std::vector<NodePeer> node_peers(const MpiCommunicator& comm);

// After MPI_Finalize: marks this process as finished (its name, /proc/PID/comm, becomes kEndedName), then waits,
// up to `seconds`, while a peer is stopped or still running (each bounded by its own watchdog; a stop on their way
// out shows then). "" once no peer holds up the end; else, after `seconds`, the line naming a peer still stopped
// ("rank 1 (pid 4242) on this node is stopped (SIGSTOP?) and has not exited 30 s after ...: sent it SIGKILL"): a
// stopped process takes no SIGTERM, so the launcher could wait for it for ever; it is killed here, where it is still
// a gpuscale process.
std::string wait_for_node_peers(const std::vector<NodePeer>& peers, double seconds);

// A process's state letter from /proc/PID/stat ('R', 'S', 'T' stopped, ...; '?' where the line is not as
// expected); 0 once it is gone (no entry, or a zombie).
char process_state(int pid);

constexpr const char* kEndedName = "gpuscale:ended";

}  // namespace gpuscale
