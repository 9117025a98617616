// The data plane: moves data between the ranks of one group, in order on the
// rank's device stream. Every call returns once the operation is enqueued;
// synchronize() waits for it. The control plane (barriers, gathers to rank 0,
// the clock) stays with MpiCommunicator. Implementations: MpiDataComm (host
// memory, or host staging on CUDA) and NcclDataComm (the device stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "device/dtype.hpp"

namespace gpuscale {

// What moves data between ranks: an enum in memory, its name (comm_name) in configs, files and print.
enum class CommKind { mpi, nccl };
const char* comm_name(CommKind c);  // "mpi" | "nccl"
// "" for none: what a record without a data plane (a file of schema 1.0, a case whose group had none) writes.
inline const char* comm_name(const std::optional<CommKind>& c) { return c ? comm_name(*c) : ""; }
// The data plane of a name as comm_name writes it; none for another text ("auto" included).
std::optional<CommKind> parse_comm(const std::string& s);

// Buffers are device buffers of the rank's Device. Counts are elements of
// `t`; reductions are sums; `root`, `to` and `from` are ranks of the group.
// In place, as NCCL defines it: allreduce, broadcast, reduce with send == recv;
// allgather with send == recv + rank * send_count; reduce_scatter with
// recv == send + rank * recv_count.
// An operation does the transport's own work and nothing a caller could do
// beforehand, so that its time is the transport's: see broadcast.
class DataComm {
 public:
  virtual ~DataComm() = default;
  virtual CommKind kind() const = 0;
  virtual int rank() const = 0;          // within the group
  virtual int size() const = 0;

  virtual void allreduce(const void* send, void* recv, std::size_t count, DType t) = 0;
  // recv holds size() * send_count, rank r's part at r * send_count.
  virtual void allgather(const void* send, void* recv, std::size_t send_count, DType t) = 0;
  // send holds size() * recv_count; rank r gets the sum of every rank's part r.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t) = 0;
  // Out of place, the root sends from `send` and other ranks receive into `recv`; their `send` is not read. The
  // root's `recv` is the caller's: MPI leaves it as it was, NCCL copies `send` into it. A caller that reads the
  // root's `recv` afterwards fills it with the root's data itself, before the operations it times, rather than pay
  // a copy inside each of them that MPI_Bcast does not make.
  virtual void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  virtual void reduce(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  // send and recv hold size() * count: part p of send goes to rank p, part p of recv came from rank p.
  virtual void alltoall(const void* send, void* recv, std::size_t count, DType t) = 0;
  // Sends `count` elements to rank `to` while receiving `count` from rank `from` (either may be this rank).
  virtual void sendrecv(const void* send, int to, void* recv, int from, std::size_t count, DType t) = 0;
  // One way: `count` elements to rank `to`, or from rank `from`; the peer enqueues the matching call. Both data
  // planes have them; a test's stand-in need not.
  virtual void send(const void* send, int to, std::size_t count, DType t);
  virtual void recv(void* recv, int from, std::size_t count, DType t);
  // A window, as OSU's osu_bw and osu_bibw keep one: `n` messages of `count` elements to rank `to` (each from
  // `send`), from rank `from` (each into `recv`, the last one stays), or both ways at once, all in flight together
  // and then waited for together. By default one after another (n sends, receives or sendrecvs); MPI posts them
  // as MPI_Isend and MPI_Irecv and waits for all.
  virtual void send_window(const void* send, int to, std::size_t count, DType t, std::int64_t n);
  virtual void recv_window(void* recv, int from, std::size_t count, DType t, std::int64_t n);
  virtual void sendrecv_window(const void* send, int to, void* recv, int from, std::size_t count, DType t,
                               std::int64_t n);

  // Waits for everything enqueued on the device stream, and reports the
  // transport's own errors (a dead peer, a broken link) as RuntimeError.
  virtual void synchronize() = 0;
  // Ends outstanding operations so that a hung job can exit. May be called
  // from another thread while an operation is blocked; the communicator is
  // unusable afterwards.
  virtual void abort() noexcept {}

  // Whether sub-groups come from this communicator by split (NCCL >= 2.18: ncclCommSplit, cheaper than a fresh
  // ncclCommInitRank each); otherwise each group's data plane is made anew from its MPI communicator.
  virtual bool splits() const { return false; }
  // Collective over this communicator's ranks: this rank's part of the group `color` (ranks ordered by `key`), or
  // null where color < 0 (this rank is in none).
  virtual std::unique_ptr<DataComm> split(int color, int key);
};

// "" when the transport can run `op` (a CollOp name) in dtype `t`, else why not.
std::string data_comm_unsupported(CommKind kind, const std::string& op, DType t);

}  // namespace gpuscale
