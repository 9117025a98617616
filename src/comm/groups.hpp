// The groups of ranks a transfer runs in, by scope:
//   world:      one group of all ranks;
//   intra-node: one group per node (the ranks of that node);
//   inter-node: one group per local rank (that local rank of every node);
//   node-pairs: one group of one rank per node (local rank 0 of each), for
//               the node-pair sweep; the other ranks are outside it.
// Each group has its MPI communicator (control: barriers) and its data-plane
// communicator, made once per run on first use and kept (NCCL set-up is slow):
// the world's from its MPI communicator, the others split from the world's
// where the data plane splits (NCCL >= 2.18), else made the same way.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/data_comm.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/scope.hpp"
#include "device/device.hpp"

namespace gpuscale {

struct Group {
  Scope scope = Scope::world;
  int index = 0;  // this rank's group; -1: this rank is not in any (Groups::first, node-pairs)
  int count = 1;  // groups in the scope
  int rank = 0;   // this rank within its group (-1 outside)
  int size = 1;   // ranks in this rank's group (0 outside)
  CommHandle control;               // MPI communicator of the group (ranks ordered as in the world)
  std::unique_ptr<DataComm> data;   // the group's data plane; null outside
  bool member() const { return index >= 0; }
};

// Makes the data-plane communicator of a group (collective over `group`).
using DataCommFactory = std::function<std::unique_ptr<DataComm>(MPI_Comm group, Device& dev)>;

class Groups {
 public:
  Groups(const MpiCommunicator& world, Device& dev, DataCommFactory make);
  // While an exception unwinds (this rank failed, its peers may still be inside a transfer), the data-plane
  // communicators are aborted, not destroyed: an NCCL communicator's destroy waits for every rank.
  ~Groups();
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;
  // Collective over the world the first time a scope is asked for.
  Group& get(Scope s);
  // One group of world ranks 0..n-1 (n <= world size); the other ranks get a
  // Group that says they are outside it. Collective the first time n is asked for.
  Group& first(int n);
  // Aborts every data-plane communicator made so far (hang safety); callable
  // from another thread.
  void abort_all() noexcept;
  Device& device() const { return dev_; }

 private:
  // A sub-group's data plane: split from the world's where it splits, else made from `group` (members only).
  std::unique_ptr<DataComm> data_of(MPI_Comm group, int color);

  const MpiCommunicator& world_;
  Device& dev_;
  DataCommFactory make_;
  int unwinding_;  // exceptions in flight when made
  std::mutex mu_;  // guards groups_ against abort_all from the watchdog
  std::map<Scope, Group> groups_;
  std::map<int, Group> firsts_;
};

}  // namespace gpuscale
