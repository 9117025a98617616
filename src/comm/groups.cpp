#include "comm/groups.hpp"

#include <exception>
#include <stdexcept>
#include <string>

#include "comm/mpi_check.hpp"

namespace gpuscale {

Groups::Groups(const MpiCommunicator& world, Device& dev, DataCommFactory make)
    : world_(world), dev_(dev), make_(std::move(make)), unwinding_(std::uncaught_exceptions()) {}

Groups::~Groups() {
  if (std::uncaught_exceptions() > unwinding_) abort_all();
}

Group& Groups::get(Scope s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = groups_.find(s); it != groups_.end()) return it->second;
  }
  Group g;
  g.scope = s;
  g.index = scope_group_index(s, world_.node_index(), world_.local_rank());
  GPUSCALE_MPI(MPI_Allreduce(&g.index, &g.count, 1, MPI_INT, MPI_MAX, world_.comm()));
  g.count += 1;
  MPI_Comm c = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_split(world_.comm(), g.member() ? g.index : MPI_UNDEFINED, world_.rank(), &c));
  if (g.member()) g.control = CommHandle(c);
  g.data = s == Scope::world ? make_(c, dev_) : data_of(c, g.member() ? g.index : -1);
  if (g.member()) {
    GPUSCALE_MPI(MPI_Comm_rank(c, &g.rank));
    GPUSCALE_MPI(MPI_Comm_size(c, &g.size));
  } else {
    g.rank = -1;
    g.size = 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return groups_.emplace(s, std::move(g)).first->second;
}

Group& Groups::first(int n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = firsts_.find(n); it != firsts_.end()) return it->second;
  }
  if (n < 1 || n > world_.size()) {
    throw std::invalid_argument("a group of the first " + std::to_string(n) + " ranks of " +
                                std::to_string(world_.size()));
  }
  Group g;
  g.scope = Scope::world;
  const bool in = world_.rank() < n;
  MPI_Comm c = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_split(world_.comm(), in ? 0 : MPI_UNDEFINED, world_.rank(), &c));
  if (in) g.control = CommHandle(c);
  g.data = data_of(c, in ? 0 : -1);
  if (in) {
    g.rank = world_.rank();
    g.size = n;
  } else {
    g.index = -1;
    g.rank = -1;
    g.size = 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return firsts_.emplace(n, std::move(g)).first->second;
}

// Collective over the world: every rank calls it, members with their group's MPI communicator and color.
std::unique_ptr<DataComm> Groups::data_of(MPI_Comm group, int color) {
  DataComm* world = get(Scope::world).data.get();
  if (world != nullptr && world->splits()) return world->split(color, world_.rank());
  return color < 0 ? nullptr : make_(group, dev_);
}

void Groups::abort_all() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [scope, g] : groups_) {
    if (g.data) g.data->abort();
  }
  for (auto& [n, g] : firsts_) {
    if (g.data) g.data->abort();
  }
}

}  // namespace gpuscale
