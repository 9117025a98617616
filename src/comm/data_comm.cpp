#include "comm/data_comm.hpp"

#include "core/error.hpp"

namespace gpuscale {

const char* comm_name(CommKind c) { return c == CommKind::mpi ? "mpi" : "nccl"; }

std::optional<CommKind> parse_comm(const std::string& s) {
  for (CommKind c : {CommKind::mpi, CommKind::nccl}) {
    if (s == comm_name(c)) return c;
  }
  return std::nullopt;
}

std::string data_comm_unsupported(CommKind kind, const std::string& op, DType t) {
  const bool sums = op == "allreduce" || op == "reduce_scatter" || op == "reduce";
  if (kind == CommKind::mpi && sums && (t == DType::fp16 || t == DType::bf16)) {
    return "op '" + op + "' with dtype " + dtype_name(t) +
           " is not available over MPI (MPI has no 16-bit float sum; it moves fp16 and bf16 but does not add them); "
           "use dtype fp32 or fp64, or comm \"nccl\" on a GPU";
  }
  return "";
}

std::unique_ptr<DataComm> DataComm::split(int, int) {
  throw RuntimeError(std::string("the ") + comm_name(kind()) + " data plane makes no sub-groups by split");
}

void DataComm::send(const void*, int, std::size_t, DType) {
  throw RuntimeError(std::string("the ") + comm_name(kind()) + " data plane here has no one-way send");
}

void DataComm::recv(void*, int, std::size_t, DType) {
  throw RuntimeError(std::string("the ") + comm_name(kind()) + " data plane here has no one-way recv");
}

void DataComm::send_window(const void* send, int to, std::size_t count, DType t, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) this->send(send, to, count, t);
}

void DataComm::recv_window(void* recv, int from, std::size_t count, DType t, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) this->recv(recv, from, count, t);
}

void DataComm::sendrecv_window(const void* send, int to, void* recv, int from, std::size_t count, DType t,
                               std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) sendrecv(send, to, recv, from, count, t);
}

}  // namespace gpuscale
