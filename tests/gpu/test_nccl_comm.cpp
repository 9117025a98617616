// The NCCL data plane on real devices: every operation, out of place and in
// place, gives the exact sums and placements a group of `size` ranks must
// give (small integers, exact in fp16 too), and a CPU device is refused.
// Exit 77 (skipped) where no CUDA device is usable. Runs as one process or
// under mpirun.
#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "comm/nccl_data_comm.hpp"
#include "core/error.hpp"
#include "device/cpu_device.hpp"
#include "device/cuda_device.hpp"
#include "device/cuda_status.hpp"

using namespace gpuscale;

namespace {

int failures = 0;
int world_rank = 0;

void expect(bool ok, const std::string& what) {
  std::printf("[rank %d] %s %s\n", world_rank, ok ? "ok  " : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

// Values a rank contributes: small positive integers, distinct per rank and element.
double value(int rank, std::size_t i) { return 1.0 + rank + 3.0 * static_cast<double>(i % 5); }

// The part rank `from` sends to rank `to` in alltoall.
double part(int from, int to, std::size_t i) { return 1.0 + from + 4.0 * to + static_cast<double>(i % 3); }

class Harness {
 public:
  Harness(Device& dev, DataComm& dc, DType t) : dev_(dev), dc_(dc), t_(t) {}

  DeviceBuffer upload(const std::vector<double>& v) {
    DeviceBuffer b = dev_.alloc(bytes(v.size()));
    std::vector<unsigned char> raw(bytes(v.size()));
    encode(v.data(), v.size(), t_, raw.data());
    dev_.copy_to_device(b, raw.data(), raw.size());
    return b;
  }

  std::vector<double> download(const DeviceBuffer& b, std::size_t n) {
    std::vector<unsigned char> raw(bytes(n));
    dev_.copy_to_host(raw.data(), b, raw.size());
    std::vector<double> v(n);
    decode(raw.data(), n, t_, v.data());
    return v;
  }

  // Waits through the DataComm, then compares the elements from `offset` on.
  void check(const std::string& op, const DeviceBuffer& got_buf, const std::vector<double>& want,
             std::size_t offset = 0) {
    dc_.synchronize();
    const std::vector<double> all = download(got_buf, offset + want.size());
    const std::vector<double> got(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
    std::size_t bad = want.size();
    for (std::size_t i = 0; i < want.size() && bad == want.size(); ++i)
      if (got[i] != want[i]) bad = i;
    std::string what = std::string(dtype_name(t_)) + " " + op + " over " + std::to_string(dc_.size()) + " rank(s)";
    if (bad != want.size()) {
      what += ": element " + std::to_string(bad) + " is " + std::to_string(got[bad]) + ", expected " +
              std::to_string(want[bad]);
    }
    expect(bad == want.size(), what);
  }

  void* ptr(DeviceBuffer& b, std::size_t elements) { return static_cast<char*>(b.data()) + bytes(elements); }
  std::size_t bytes(std::size_t n) const { return n * dtype_size(t_); }

 private:
  Device& dev_;
  DataComm& dc_;
  DType t_;
};

void run_ops(Device& dev, DataComm& dc, DType t) {
  Harness h(dev, dc, t);
  const int r = dc.rank(), n = dc.size();
  const std::size_t c = 7;  // elements per rank (odd on purpose)
  const std::size_t nc = static_cast<std::size_t>(n) * c;

  std::vector<double> mine(c), sum(c, 0.0);
  for (std::size_t i = 0; i < c; ++i) {
    mine[i] = value(r, i);
    for (int q = 0; q < n; ++q) sum[i] += value(q, i);
  }

  {  // allreduce, out of place and in place
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(c, 0.0));
    dc.allreduce(send.data(), recv.data(), c, t);
    h.check("allreduce", recv, sum);
    dc.allreduce(send.data(), send.data(), c, t);
    h.check("allreduce in place", send, sum);
  }

  std::vector<double> gathered(nc);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < c; ++i) gathered[q * c + i] = value(q, i);
  {  // allgather, out of place and in place (own part already at r * c)
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(nc, 0.0));
    dc.allgather(send.data(), recv.data(), c, t);
    h.check("allgather", recv, gathered);
    std::vector<double> own(nc, 0.0);
    for (std::size_t i = 0; i < c; ++i) own[r * c + i] = mine[i];
    DeviceBuffer buf = h.upload(own);
    dc.allgather(h.ptr(buf, r * c), buf.data(), c, t);
    h.check("allgather in place", buf, gathered);
  }

  {  // reduce_scatter: rank q sends part(q, p, i) as part p; rank r gets the sum of parts r
    std::vector<double> parts(nc), want(c, 0.0);
    for (int p = 0; p < n; ++p)
      for (std::size_t i = 0; i < c; ++i) parts[p * c + i] = part(r, p, i);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < c; ++i) want[i] += part(q, r, i);
    DeviceBuffer send = h.upload(parts), recv = h.upload(std::vector<double>(c, 0.0));
    dc.reduce_scatter(send.data(), recv.data(), c, t);
    h.check("reduce_scatter", recv, want);
    // In place the result lands on part r; only that part is defined afterwards.
    DeviceBuffer buf = h.upload(parts);
    dc.reduce_scatter(buf.data(), h.ptr(buf, r * c), c, t);
    h.check("reduce_scatter in place", buf, want, r * c);
  }

  const int root = n - 1;
  std::vector<double> from_root(c);
  for (std::size_t i = 0; i < c; ++i) from_root[i] = value(root, i);
  {  // broadcast from the last rank, out of place and in place
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(c, 0.0));
    dc.broadcast(send.data(), recv.data(), c, t, root);
    h.check("broadcast from rank " + std::to_string(root), recv, from_root);
    dc.broadcast(send.data(), send.data(), c, t, root);
    h.check("broadcast in place from rank " + std::to_string(root), send, from_root);
  }

  {  // reduce to rank 0: only the root's receive buffer is defined
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(c, 0.0));
    dc.reduce(send.data(), recv.data(), c, t, 0);
    if (r == 0) {
      h.check("reduce to rank 0", recv, sum);
    } else {
      dc.synchronize();
    }
    dc.reduce(send.data(), send.data(), c, t, 0);
    if (r == 0) {
      h.check("reduce in place to rank 0", send, sum);
    } else {
      dc.synchronize();
    }
  }

  {  // alltoall: part p of recv came from rank p
    std::vector<double> parts(nc), want(nc);
    for (int p = 0; p < n; ++p)
      for (std::size_t i = 0; i < c; ++i) {
        parts[p * c + i] = part(r, p, i);
        want[p * c + i] = part(p, r, i);
      }
    DeviceBuffer send = h.upload(parts), recv = h.upload(std::vector<double>(nc, 0.0));
    dc.alltoall(send.data(), recv.data(), c, t);
    h.check("alltoall", recv, want);
  }

  {  // sendrecv around the ring: to the next rank, from the previous one
    const int to = (r + 1) % n, from = (r + n - 1) % n;
    std::vector<double> want(c);
    for (std::size_t i = 0; i < c; ++i) want[i] = value(from, i);
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(c, 0.0));
    dc.sendrecv(send.data(), to, recv.data(), from, c, t);
    h.check("sendrecv ring (to " + std::to_string(to) + ", from " + std::to_string(from) + ")", recv, want);
  }

  if (n > 1 && (r ^ 1) < n) {  // one way, as p2p's ping-pong: each rank with its pair's other, the lower first
    const int peer = r ^ 1;
    std::vector<double> want(c);
    for (std::size_t i = 0; i < c; ++i) want[i] = value(peer, i);
    DeviceBuffer send = h.upload(mine), recv = h.upload(std::vector<double>(c, 0.0));
    if (r < peer) {
      dc.send(send.data(), peer, c, t);
      dc.recv(recv.data(), peer, c, t);
    } else {
      dc.recv(recv.data(), peer, c, t);
      dc.send(send.data(), peer, c, t);
    }
    h.check("send and recv with rank " + std::to_string(peer), recv, want);
  }
}

int node_local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

}  // namespace

int main(int argc, char** argv) {
  const CudaStatus status = probe_cuda();
  if (!status.usable) {
    std::printf("skipped: %s\n", status.reason.c_str());
    return 77;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  try {
    if (world_rank == 0) std::printf("NCCL %s, %d rank(s)\n", nccl_version().c_str(), world_size);

    {
      CpuDevice cpu;
      bool refused = false;
      try {
        make_nccl_data_comm(MPI_COMM_WORLD, cpu);
      } catch (const RuntimeError&) {
        refused = true;
      }
      expect(refused, "a CPU device is refused");
    }

    auto dev = make_cuda_device(node_local_rank());
    {
      auto dc = make_nccl_data_comm(MPI_COMM_WORLD, *dev);
      expect(dc->kind() == CommKind::nccl && dc->rank() == world_rank && dc->size() == world_size,
             "kind, rank and size match MPI_COMM_WORLD");
      for (DType t : {DType::fp32, DType::fp64, DType::fp16}) run_ops(*dev, *dc, t);
    }  // the communicator goes before the device whose stream it uses
  } catch (const std::exception& e) {
    // A throw on one rank would leave the others waiting inside a collective.
    std::fprintf(stderr, "[rank %d] FAIL: %s\n", world_rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) std::printf("%s: %d failed check(s)\n", total == 0 ? "passed" : "FAILED", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
