#include "comm/mpi_data_comm.hpp"

#include <climits>
#include <cstring>
#include <vector>

#include "comm/mpi_check.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

namespace gpuscale {

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::fp64: return MPI_DOUBLE;
    case DType::fp32:
    case DType::tf32: return MPI_FLOAT;
    case DType::fp16:
    case DType::bf16: return MPI_UINT16_T;  // moved, never added (see data_comm_unsupported)
  }
  return MPI_BYTE;
}

int mpi_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw RuntimeError("a transfer of " + std::to_string(count) + " elements is more than MPI's int count allows");
  }
  return static_cast<int>(count);
}

void check_sum(const std::string& op, DType t) {
  if (const std::string why = data_comm_unsupported(CommKind::mpi, op, t); !why.empty()) throw RuntimeError(why);
}

class MpiDataComm final : public DataComm {
 public:
  MpiDataComm(MPI_Comm group, Device& dev) : dev_(dev) {
    MPI_Comm d = MPI_COMM_NULL;
    GPUSCALE_MPI(MPI_Comm_dup(group, &d));
    comm_ = CommHandle(d);
    GPUSCALE_MPI(MPI_Comm_rank(d, &rank_));
    GPUSCALE_MPI(MPI_Comm_size(d, &size_));
  }

  CommKind kind() const override { return CommKind::mpi; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(const void* send, void* recv, std::size_t count, DType t) override {
    check_sum("allreduce", t);
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    if (send == recv) {
      in_place(recv, bytes, [=](void* buf) { GPUSCALE_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, n, ty, MPI_SUM, c)); });
    } else {
      apart(send, bytes, recv, bytes, true, [=](const void* s, void* r) {
        GPUSCALE_MPI(MPI_Allreduce(s, r, n, ty, MPI_SUM, c));
      });
    }
  }

  void allgather(const void* send, void* recv, std::size_t send_count, DType t) override {
    const int n = mpi_count(send_count);
    mpi_count(send_count * size_);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t part = send_count * dtype_size(t);
    if (send == static_cast<const char*>(recv) + rank_ * part) {
      in_place(recv, part * size_, [=](void* buf) {
        GPUSCALE_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, ty, c));
      });
    } else {
      apart(send, part, recv, part * size_, true, [=](const void* s, void* r) {
        GPUSCALE_MPI(MPI_Allgather(s, n, ty, r, n, ty, c));
      });
    }
  }

  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t) override {
    check_sum("reduce_scatter", t);
    const int n = mpi_count(recv_count);
    mpi_count(recv_count * size_);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t part = recv_count * dtype_size(t);
    const int me = rank_;
    if (recv == static_cast<const char*>(send) + me * part) {
      // MPI leaves an in-place result at the start of the buffer; NCCL (and we) at this rank's part. No MPI call
      // writes it there, so the move of one part on ranks other than 0 is part of the operation's time
      // (docs/metrics.md); out of place, the default, has none.
      in_place(const_cast<void*>(send), part * size_, [=](void* buf) {
        GPUSCALE_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, n, ty, MPI_SUM, c));
        if (me != 0) std::memmove(static_cast<char*>(buf) + me * part, buf, part);
      });
    } else {
      apart(send, part * size_, recv, part, true, [=](const void* s, void* r) {
        GPUSCALE_MPI(MPI_Reduce_scatter_block(s, r, n, ty, MPI_SUM, c));
      });
    }
  }

  void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) override {
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    if (send == recv) {
      in_place(recv, bytes, [=](void* buf) { GPUSCALE_MPI(MPI_Bcast(buf, n, ty, root, c)); });
    } else if (rank_ == root) {
      // MPI_Bcast reads the root's buffer and writes none of the root's memory: the root's recv stays the
      // caller's (see DataComm), and nothing but the send data is staged on CUDA.
      apart(send, bytes, nullptr, 0, false, [=](const void* s, void*) {
        GPUSCALE_MPI(MPI_Bcast(const_cast<void*>(s), n, ty, root, c));
      });
    } else {
      apart(nullptr, 0, recv, bytes, true, [=](const void*, void* r) { GPUSCALE_MPI(MPI_Bcast(r, n, ty, root, c)); });
    }
  }

  void reduce(const void* send, void* recv, std::size_t count, DType t, int root) override {
    check_sum("reduce", t);
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    const bool is_root = rank_ == root;
    if (send == recv) {
      in_place(recv, bytes, [=](void* buf) {
        GPUSCALE_MPI(MPI_Reduce(is_root ? MPI_IN_PLACE : buf, is_root ? buf : nullptr, n, ty, MPI_SUM, root, c));
      });
    } else {
      apart(send, bytes, recv, bytes, is_root, [=](const void* s, void* r) {
        GPUSCALE_MPI(MPI_Reduce(s, r, n, ty, MPI_SUM, root, c));
      });
    }
  }

  void alltoall(const void* send, void* recv, std::size_t count, DType t) override {
    if (send == recv) throw RuntimeError("alltoall has no in-place form");
    const int n = mpi_count(count);
    mpi_count(count * size_);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t) * size_;
    apart(send, bytes, recv, bytes, true, [=](const void* s, void* r) {
      GPUSCALE_MPI(MPI_Alltoall(s, n, ty, r, n, ty, c));
    });
  }

  void sendrecv(const void* send, int to, void* recv, int from, std::size_t count, DType t) override {
    if (send == recv) throw RuntimeError("sendrecv has no in-place form");
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    apart(send, bytes, recv, bytes, true, [=](const void* s, void* r) {
      GPUSCALE_MPI(MPI_Sendrecv(s, n, ty, to, 0, r, n, ty, from, 0, c, MPI_STATUS_IGNORE));
    });
  }

  void send(const void* send, int to, std::size_t count, DType t) override {
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    apart(send, count * dtype_size(t), nullptr, 0, false, [=](const void* s, void*) {
      GPUSCALE_MPI(MPI_Send(s, n, ty, to, 0, c));
    });
  }

  void recv(void* recv, int from, std::size_t count, DType t) override {
    const int n = mpi_count(count);
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm c = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    if (dev_.buffers_on_host()) {
      dev_.host_task([=] { GPUSCALE_MPI(MPI_Recv(recv, n, ty, from, 0, c, MPI_STATUS_IGNORE)); });
      return;
    }
    void* h = staging(recv_stage_, bytes);
    dev_.host_task([=] { GPUSCALE_MPI(MPI_Recv(h, n, ty, from, 0, c, MPI_STATUS_IGNORE)); });
    dev_.copy_async(recv, h, bytes, CopyKind::h2d);
  }

  // The window's requests live in requests_, which only the stream's tasks touch, one after another.
  void send_window(const void* send, int to, std::size_t count, DType t, std::int64_t n) override {
    const int c = mpi_count(count), k = mpi_count(static_cast<std::size_t>(n));
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm comm = comm_.get();
    apart(send, count * dtype_size(t), nullptr, 0, false, [=](const void* s, void*) {
      requests_.resize(static_cast<std::size_t>(k));
      for (int i = 0; i < k; ++i) GPUSCALE_MPI(MPI_Isend(s, c, ty, to, 0, comm, &requests_[i]));
      GPUSCALE_MPI(MPI_Waitall(k, requests_.data(), MPI_STATUSES_IGNORE));
    });
  }

  void recv_window(void* recv, int from, std::size_t count, DType t, std::int64_t n) override {
    const int c = mpi_count(count), k = mpi_count(static_cast<std::size_t>(n));
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm comm = comm_.get();
    apart(nullptr, 0, recv, count * dtype_size(t), true, [=](const void*, void* r) {
      requests_.resize(static_cast<std::size_t>(k));
      for (int i = 0; i < k; ++i) GPUSCALE_MPI(MPI_Irecv(r, c, ty, from, 0, comm, &requests_[i]));
      GPUSCALE_MPI(MPI_Waitall(k, requests_.data(), MPI_STATUSES_IGNORE));
    });
  }

  void sendrecv_window(const void* send, int to, void* recv, int from, std::size_t count, DType t,
                       std::int64_t n) override {
    if (send == recv) throw RuntimeError("sendrecv has no in-place form");
    const int c = mpi_count(count), k = mpi_count(static_cast<std::size_t>(n));
    mpi_count(2 * static_cast<std::size_t>(n));
    const MPI_Datatype ty = mpi_type(t);
    const MPI_Comm comm = comm_.get();
    const std::size_t bytes = count * dtype_size(t);
    apart(send, bytes, recv, bytes, true, [=](const void* s, void* r) {
      requests_.resize(2 * static_cast<std::size_t>(k));
      for (int i = 0; i < k; ++i) GPUSCALE_MPI(MPI_Irecv(r, c, ty, from, 0, comm, &requests_[i]));
      for (int i = 0; i < k; ++i) GPUSCALE_MPI(MPI_Isend(s, c, ty, to, 0, comm, &requests_[k + i]));
      GPUSCALE_MPI(MPI_Waitall(2 * k, requests_.data(), MPI_STATUSES_IGNORE));
    });
  }

  void synchronize() override { dev_.synchronize(); }

 private:
  // Runs `call` on the host in stream order on one buffer that is both input
  // and output. On CUDA the buffer goes through pinned host memory.
  // Templates, not std::function: a task calls the MPI call's lambda directly, one indirect call per operation.
  template <class Call>
  void in_place(void* buf, std::size_t bytes, Call call) {
    if (dev_.buffers_on_host()) {
      dev_.host_task([=] { call(buf); });
      return;
    }
    void* h = staging(recv_stage_, bytes);
    dev_.copy_async(h, buf, bytes, CopyKind::d2h);
    dev_.host_task([=] { call(h); });
    dev_.copy_async(buf, h, bytes, CopyKind::h2d);
  }

  // The same with separate input and output; `copy_back`: the output is written on this rank. A side of 0 bytes
  // is one the call does not use on this rank (broadcast's recv on the root, its send elsewhere): not staged.
  template <class Call>
  void apart(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, bool copy_back,
             Call call) {
    if (dev_.buffers_on_host()) {
      dev_.host_task([=] { call(send, recv); });
      return;
    }
    void* hs = staging(send_stage_, send_bytes);
    void* hr = staging(recv_stage_, recv_bytes);
    if (send_bytes > 0) dev_.copy_async(hs, send, send_bytes, CopyKind::d2h);
    dev_.host_task([=] { call(hs, hr); });
    if (copy_back) dev_.copy_async(recv, hr, recv_bytes, CopyKind::h2d);
  }

  // A pinned host buffer of at least `bytes`, grown when needed. Growing
  // waits for the stream, which may still be copying out of the old one.
  void* staging(HostBuffer& b, std::size_t bytes) {
    if (b.bytes() < bytes) {
      dev_.synchronize();
      b = dev_.alloc_host(bytes, true);
    }
    return b.data();
  }

  Device& dev_;
  CommHandle comm_;
  int rank_ = 0, size_ = 1;
  HostBuffer send_stage_, recv_stage_;
  std::vector<MPI_Request> requests_;  // a window's (the stream's tasks only)
};

}  // namespace

std::unique_ptr<DataComm> make_mpi_data_comm(MPI_Comm group, Device& dev) {
  return std::make_unique<MpiDataComm>(group, dev);
}

}  // namespace gpuscale
