// The control plane of a run over MPI: who is where (rank, node, local rank),
// barriers, and gathering results to rank 0. Owns its duplicated communicators.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace gpuscale {

// Owns an MPI_Comm and frees it.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm c) : c_(c) {}
  CommHandle(CommHandle&& o) noexcept : c_(o.c_) { o.c_ = MPI_COMM_NULL; }
  CommHandle& operator=(CommHandle&& o) noexcept;
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  ~CommHandle();
  MPI_Comm get() const { return c_; }

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

class MpiCommunicator {
 public:
  // Collective over `parent` (usually MPI_COMM_WORLD), which it duplicates.
  explicit MpiCommunicator(MPI_Comm parent);

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the ranks of this node
  int local_size() const { return local_size_; }
  int node_index() const { return node_index_; }  // 0..node_count-1, in order of first rank
  int node_count() const { return node_count_; }
  const std::string& hostname() const { return hostname_; }
  MPI_Comm comm() const { return world_.get(); }

  void barrier() const;
  // A barrier whose waiters sleep instead of spinning, so a rank waiting its
  // turn in serial mode leaves the core to the rank that is working.
  void idle_barrier() const;

  // Rank 0 receives every rank's values in rank order; others get {}.
  std::vector<double> gather(const std::vector<double>& mine) const;
  std::vector<int> gather(int mine) const;
  std::vector<std::string> gather(const std::string& mine) const;

  // Rank 0's value everywhere.
  std::string broadcast(const std::string& from_root) const;
  double broadcast(double from_root) const;
  int broadcast(int from_root) const;
  // Logical or of a flag over all ranks.
  bool any(bool mine) const;
  // The largest of every rank's value, everywhere; with `idle` this rank
  // waits for the others by sleeping, as in idle_barrier.
  double max(double mine, bool idle) const;

 private:
  CommHandle world_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_index_ = 0, node_count_ = 1;
  std::string hostname_;
};

}  // namespace gpuscale
