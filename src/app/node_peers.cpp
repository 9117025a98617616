#include "app/node_peers.hpp"

#include <mpi.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "comm/mpi_communicator.hpp"
#include "core/text.hpp"

namespace gpuscale {

char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const std::size_t close = stat.rfind(')');  // the name, in parentheses, may hold anything
  if (close == std::string::npos || close + 2 >= stat.size()) return '?';
  const char state = stat[close + 2];
  return state == 'Z' || state == 'X' ? 0 : state;
}

namespace {

std::string process_name(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

enum class Peer { gone, finished, running, stopped };

// Where `p` stands: gone, finished (past MPI_Finalize, not stopped), running, or stopped.
Peer peer_state(const NodePeer& p) {
  const char state = process_state(p.pid);
  if (state == 0 || state == 'Z' || state == 'X') return Peer::gone;  // exited (a zombie until the launcher reaps it)
  if (state == 'T' || state == 't') return Peer::stopped;
  return process_name(p.pid) == kEndedName ? Peer::finished : Peer::running;
}

}  // namespace

std::vector<NodePeer> node_peers(const MpiCommunicator& comm) {
  const int mine[2] = {static_cast<int>(getpid()), comm.node_index()};
  std::vector<int> all(2 * static_cast<std::size_t>(comm.size()));
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm.comm());
  std::vector<NodePeer> peers;
  for (int r = 0; r < comm.size(); ++r) {
    if (r != comm.rank() && all[2 * r + 1] == comm.node_index()) peers.push_back({r, all[2 * r]});
  }
  return peers;
}

std::string wait_for_node_peers(const std::vector<NodePeer>& peers, double seconds) {
  prctl(PR_SET_NAME, kEndedName, 0, 0, 0);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const NodePeer* stopped = nullptr;
    bool running = false;
    for (const auto& p : peers) {
      const Peer state = peer_state(p);
      if (state == Peer::stopped && !stopped) stopped = &p;
      running = running || state == Peer::running;
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A peer still running is waited for too, within the same bound (it is bounded by its own watchdog, and ends
    // this wait as soon as it finishes): a stop on its way out, however late a busy host lets it land, shows then.
    if (!stopped && (!running || waited >= seconds)) return "";
    if (stopped && waited >= seconds) {
      // A stopped process takes no SIGTERM, and a launcher may wait for it for ever: ended here, if it is still
      // one of ours (its pid not taken since by another program).
      const bool ours = process_name(stopped->pid).rfind("gpuscale", 0) == 0;
      if (ours) kill(stopped->pid, SIGKILL);
      return "rank " + std::to_string(stopped->rank) + " (pid " + std::to_string(stopped->pid) + ") on this node is "
             "stopped (SIGSTOP?) and has not exited " + format_number("%g", seconds) + " s after the end of the run" +
             (ours ? ": sent it SIGKILL" : "");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace gpuscale
