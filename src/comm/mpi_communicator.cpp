#include "comm/mpi_communicator.hpp"

#include <chrono>
#include <thread>

#include "comm/mpi_check.hpp"

namespace gpuscale {

CommHandle& CommHandle::operator=(CommHandle&& o) noexcept {
  if (this != &o) {
    if (c_ != MPI_COMM_NULL) MPI_Comm_free(&c_);
    c_ = o.c_;
    o.c_ = MPI_COMM_NULL;
  }
  return *this;
}

CommHandle::~CommHandle() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&c_);
}

MpiCommunicator::MpiCommunicator(MPI_Comm parent) {
  MPI_Comm dup = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_dup(parent, &dup));
  world_ = CommHandle(dup);
  GPUSCALE_MPI(MPI_Comm_rank(dup, &rank_));
  GPUSCALE_MPI(MPI_Comm_size(dup, &size_));

  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  GPUSCALE_MPI(MPI_Get_processor_name(name, &len));
  hostname_.assign(name, len);

  // Ranks sharing memory are one node; the node's lowest rank leads it.
  MPI_Comm node = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  CommHandle node_h(node);
  GPUSCALE_MPI(MPI_Comm_rank(node, &local_rank_));
  GPUSCALE_MPI(MPI_Comm_size(node, &local_size_));

  MPI_Comm leaders = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_split(dup, local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_, &leaders));
  CommHandle leaders_h(leaders);
  if (local_rank_ == 0) {
    GPUSCALE_MPI(MPI_Comm_rank(leaders, &node_index_));
    GPUSCALE_MPI(MPI_Comm_size(leaders, &node_count_));
  }
  GPUSCALE_MPI(MPI_Bcast(&node_index_, 1, MPI_INT, 0, node));
  GPUSCALE_MPI(MPI_Bcast(&node_count_, 1, MPI_INT, 0, dup));
}

void MpiCommunicator::barrier() const { GPUSCALE_MPI(MPI_Barrier(comm())); }

namespace {
// Completes a nonblocking collective: spinning, or sleeping between tests.
void wait_for(MPI_Request& req, bool idle) {
  if (!idle) {
    GPUSCALE_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    return;
  }
  int done = 0;
  while (true) {
    GPUSCALE_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}
}  // namespace

void MpiCommunicator::idle_barrier() const {
  MPI_Request req = MPI_REQUEST_NULL;
  GPUSCALE_MPI(MPI_Ibarrier(comm(), &req));
  wait_for(req, true);
}

double MpiCommunicator::max(double mine, bool idle) const {
  double out = 0.0;
  MPI_Request req = MPI_REQUEST_NULL;
  GPUSCALE_MPI(MPI_Iallreduce(&mine, &out, 1, MPI_DOUBLE, MPI_MAX, comm(), &req));
  wait_for(req, idle);
  return out;
}

namespace {
// Offsets of each rank's part in a gathered buffer (empty counts: not root).
std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d;
  int total = 0;
  for (int c : counts) {
    d.push_back(total);
    total += c;
  }
  return d;
}
}  // namespace

std::vector<double> MpiCommunicator::gather(const std::vector<double>& mine) const {
  const int n = static_cast<int>(mine.size());
  const std::vector<int> counts = gather(n);
  const std::vector<int> displs = displacements(counts);
  std::vector<double> out(counts.empty() ? 0 : displs.back() + counts.back());
  GPUSCALE_MPI(MPI_Gatherv(mine.data(), n, MPI_DOUBLE, out.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm()));
  return out;
}

std::vector<int> MpiCommunicator::gather(int mine) const {
  std::vector<int> out(rank_ == 0 ? size_ : 0);
  GPUSCALE_MPI(MPI_Gather(&mine, 1, MPI_INT, out.data(), 1, MPI_INT, 0, comm()));
  return out;
}

std::vector<std::string> MpiCommunicator::gather(const std::string& mine) const {
  const int n = static_cast<int>(mine.size());
  const std::vector<int> counts = gather(n);
  const std::vector<int> displs = displacements(counts);
  std::string all(counts.empty() ? 0 : displs.back() + counts.back(), '\0');
  GPUSCALE_MPI(MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm()));
  std::vector<std::string> out;
  for (std::size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(displs[r], counts[r]));
  return out;
}

std::string MpiCommunicator::broadcast(const std::string& from_root) const {
  int n = broadcast(static_cast<int>(from_root.size()));
  std::string s = rank_ == 0 ? from_root : std::string(n, '\0');
  GPUSCALE_MPI(MPI_Bcast(s.data(), n, MPI_CHAR, 0, comm()));
  return s;
}

double MpiCommunicator::broadcast(double v) const {
  GPUSCALE_MPI(MPI_Bcast(&v, 1, MPI_DOUBLE, 0, comm()));
  return v;
}

int MpiCommunicator::broadcast(int v) const {
  GPUSCALE_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, comm()));
  return v;
}

bool MpiCommunicator::any(bool mine) const { return max(mine ? 1.0 : 0.0, false) != 0.0; }

}  // namespace gpuscale
