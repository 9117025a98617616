// The data plane of a group of one rank: every operation copies the rank's own
// data (send to recv; nothing when they are the same buffer). What a transfer
// workload does around its operations (making inputs, checking results) can
// then be measured without other ranks: the estimate's calibration times the
// setup and check of transfer cases with it, and the memory tests count their
// buffers with it.
#pragma once

#include <cstddef>

#include "comm/data_comm.hpp"
#include "device/device.hpp"

namespace gpuscale {

class SelfDataComm final : public DataComm {
 public:
  explicit SelfDataComm(Device& dev) : dev_(dev) {}
  CommKind kind() const override { return CommKind::mpi; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce(const void* s, void* r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void allgather(const void* s, void* r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void reduce_scatter(const void* s, void* r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void broadcast(const void* s, void* r, std::size_t n, DType t, int) override { copy(s, r, n, t); }
  void reduce(const void* s, void* r, std::size_t n, DType t, int) override { copy(s, r, n, t); }
  void alltoall(const void* s, void* r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void sendrecv(const void* s, int, void* r, int, std::size_t n, DType t) override { copy(s, r, n, t); }
  void synchronize() override { dev_.synchronize(); }

 private:
  void copy(const void* s, void* r, std::size_t n, DType t) {
    if (s != r) dev_.copy_async(r, s, n * dtype_size(t), CopyKind::d2d);
  }
  Device& dev_;
};

}  // namespace gpuscale
