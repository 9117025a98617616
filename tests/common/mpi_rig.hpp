// What the MPI tests of workloads share: a runner on the CPU backend over the
// MPI data plane (or one a test wraps), a data plane that forwards every call,
// and one that corrupts what arrives.
#pragma once

#include <memory>

#include "comm/clock_sync.hpp"
#include "comm/data_comm.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "device/cpu_device.hpp"
#include "device/dtype.hpp"
#include "runner/runner.hpp"

namespace gpuscale::testing {

// A runner on device D (the CPU backend's by default) with the data plane `make` gives.
template <class D = CpuDevice>
struct Rig {
  explicit Rig(const MpiCommunicator& comm, DataCommFactory make = make_mpi_data_comm)
      : clock(comm), groups(comm, dev, std::move(make)), runner(comm, dev, &groups, clock, Backend::cpu, 7) {}
  D dev;
  CommonClock clock;
  Groups groups;
  Runner runner;
};

// Forwards every call to a real data plane; a test overrides what it changes.
class CommDecorator : public DataComm {
 public:
  explicit CommDecorator(std::unique_ptr<DataComm> inner) : inner_(std::move(inner)) {}
  CommKind kind() const override { return inner_->kind(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void allreduce(const void* s, void* r, std::size_t n, DType t) override { inner_->allreduce(s, r, n, t); }
  void allgather(const void* s, void* r, std::size_t n, DType t) override { inner_->allgather(s, r, n, t); }
  void reduce_scatter(const void* s, void* r, std::size_t n, DType t) override { inner_->reduce_scatter(s, r, n, t); }
  void broadcast(const void* s, void* r, std::size_t n, DType t, int root) override {
    inner_->broadcast(s, r, n, t, root);
  }
  void reduce(const void* s, void* r, std::size_t n, DType t, int root) override { inner_->reduce(s, r, n, t, root); }
  void alltoall(const void* s, void* r, std::size_t n, DType t) override { inner_->alltoall(s, r, n, t); }
  void sendrecv(const void* s, int to, void* r, int from, std::size_t n, DType t) override {
    inner_->sendrecv(s, to, r, from, n, t);
  }
  void send(const void* s, int to, std::size_t n, DType t) override { inner_->send(s, to, n, t); }
  void recv(void* r, int from, std::size_t n, DType t) override { inner_->recv(r, from, n, t); }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::unique_ptr<DataComm> inner_;
};

// A transport that silently adds 1 to the first element of every buffer it delivers.
class CorruptingComm final : public CommDecorator {
 public:
  CorruptingComm(std::unique_ptr<DataComm> inner, Device& dev) : CommDecorator(std::move(inner)), dev_(dev) {}
  void allreduce(const void* s, void* r, std::size_t n, DType t) override {
    CommDecorator::allreduce(s, r, n, t);
    corrupt(r, t);
  }
  void allgather(const void* s, void* r, std::size_t n, DType t) override {
    CommDecorator::allgather(s, r, n, t);
    corrupt(r, t);
  }
  void reduce_scatter(const void* s, void* r, std::size_t n, DType t) override {
    CommDecorator::reduce_scatter(s, r, n, t);
    corrupt(r, t);
  }
  void broadcast(const void* s, void* r, std::size_t n, DType t, int root) override {
    CommDecorator::broadcast(s, r, n, t, root);
    corrupt(r, t);
  }
  void reduce(const void* s, void* r, std::size_t n, DType t, int root) override {
    CommDecorator::reduce(s, r, n, t, root);
    corrupt(r, t);
  }
  void alltoall(const void* s, void* r, std::size_t n, DType t) override {
    CommDecorator::alltoall(s, r, n, t);
    corrupt(r, t);
  }
  void sendrecv(const void* s, int to, void* r, int from, std::size_t n, DType t) override {
    CommDecorator::sendrecv(s, to, r, from, n, t);
    corrupt(r, t);
  }
  void recv(void* r, int from, std::size_t n, DType t) override {
    CommDecorator::recv(r, from, n, t);
    corrupt(r, t);
  }

 private:
  void corrupt(void* r, DType t) {
    dev_.host_task([r, t] {
      double v = 0;
      decode(r, 1, t, &v);
      v += 1;
      encode(&v, 1, t, r);
    });
  }
  Device& dev_;
};

}  // namespace gpuscale::testing
