// Broadcast's contract under mpiexec -n 2 and -n 4 (DataComm::broadcast): every
// other rank receives the root's data; out of place the MPI data plane leaves
// the root's recv as it was, on host buffers and through host staging alike;
// the collective workload fills the root's recv itself when it prepares its
// buffers, and still checks every other rank's recv from NaNs.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/counting_device.hpp"
#include "common/mpi_rig.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;
using testing::CommDecorator;

namespace {

constexpr std::size_t kCount = 3001;  // floats: not a multiple of any segment or page

std::vector<float> data_of(int rank) {
  std::vector<float> v(kCount);
  for (std::size_t i = 0; i < kCount; ++i) v[i] = static_cast<float>(1000 * (rank + 1) + i % 997);
  return v;
}

// Bytes as NaN-filled buffers start (Device::poison).
std::vector<unsigned char> poison_bytes() { return std::vector<unsigned char>(kCount * sizeof(float), 0xff); }

std::vector<unsigned char> bytes_of(const std::vector<float>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<unsigned char> download(Device& dev, const DeviceBuffer& b) {
  std::vector<unsigned char> out(b.bytes());
  dev.copy_to_host(out.data(), b, out.size());
  return out;
}

Case broadcast_case(const std::string& keys) {
  const std::string toml = "[[experiment]]\nname = \"b\"\nworkload = \"collective\"\nop = \"broadcast\"\n"
                           "bytes = 12004\nwarmup = 1\nreps = 3\niters = 2\nmodes = [\"parallel\"]\n" + keys;
  return expand(parse_config(toml, "b.toml", {}, workload_schemas())).at(0);
}

// Looks at the root's buffers in stream order around each out-of-place
// broadcast: whether its recv held its send data before and after the call.
class RootRecvProbe final : public CommDecorator {
 public:
  RootRecvProbe(std::unique_ptr<DataComm> inner, Device& dev) : CommDecorator(std::move(inner)), dev_(dev) {}
  void broadcast(const void* s, void* r, std::size_t n, DType t, int root) override {
    const bool look = rank() == root && s != r;
    const std::size_t bytes = n * dtype_size(t);
    if (look) dev_.host_task([=] { before_differs += std::memcmp(s, r, bytes) != 0 ? 1 : 0; });
    CommDecorator::broadcast(s, r, n, t, root);
    if (look) dev_.host_task([=] { after_differs += std::memcmp(s, r, bytes) != 0 ? 1 : 0; });
    calls += look ? 1 : 0;
  }
  int calls = 0, before_differs = 0, after_differs = 0;  // on the root

 private:
  Device& dev_;
};

// A transport whose broadcast delivers nothing anywhere.
class DroppedBroadcast final : public CommDecorator {
 public:
  using CommDecorator::CommDecorator;
  void broadcast(const void*, void*, std::size_t, DType, int) override {}
};

}  // namespace

TEST_CASE("an out-of-place broadcast reaches every other rank and leaves the root's recv alone",
          "[mpi][collective][broadcast]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size(), me = comm.rank();
  for (const bool on_host : {true, false}) {  // false: MPI's data plane stages through host buffers, as on a GPU
    for (const int root : {0, n - 1}) {
      INFO((on_host ? "host buffers" : "staged through host buffers") << ", root " << root << " of " << n);
      testing::CountingDevice dev(on_host);
      const auto data = make_mpi_data_comm(MPI_COMM_WORLD, dev);
      DeviceBuffer send = dev.alloc(kCount * sizeof(float)), recv = dev.alloc(kCount * sizeof(float));
      const std::vector<float> mine = data_of(me);
      dev.copy_to_device(send, mine.data(), send.bytes());
      dev.poison(recv.data(), recv.bytes());
      data->broadcast(send.data(), recv.data(), kCount, DType::fp32, root);
      data->synchronize();
      CHECK(download(dev, send) == bytes_of(mine));  // nobody's send is written
      if (me == root) {
        CHECK(download(dev, recv) == poison_bytes());  // MPI_Bcast writes none of the root's memory
      } else {
        CHECK(download(dev, recv) == bytes_of(data_of(root)));
      }
    }
  }
}

TEST_CASE("an in-place broadcast gives every rank the root's buffer", "[mpi][collective][broadcast]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size(), me = comm.rank();
  for (const bool on_host : {true, false}) {
    INFO((on_host ? "host buffers" : "staged through host buffers") << ", root " << n - 1 << " of " << n);
    testing::CountingDevice dev(on_host);
    const auto data = make_mpi_data_comm(MPI_COMM_WORLD, dev);
    DeviceBuffer buf = dev.alloc(kCount * sizeof(float));
    const std::vector<float> mine = data_of(me);
    dev.copy_to_device(buf, mine.data(), buf.bytes());
    data->broadcast(buf.data(), buf.data(), kCount, DType::fp32, n - 1);
    data->synchronize();
    CHECK(download(dev, buf) == bytes_of(data_of(n - 1)));
  }
}

TEST_CASE("the collective workload fills the root's recv with its data before the operations it times",
          "[mpi][collective][broadcast]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  RootRecvProbe* probe = nullptr;  // owned by the rig's group
  testing::Rig<> rig(comm, [&probe](MPI_Comm g, Device& d) -> std::unique_ptr<DataComm> {
    auto p = std::make_unique<RootRecvProbe>(make_mpi_data_comm(g, d), d);
    probe = p.get();
    return p;
  });
  const CaseRecord rec = rig.runner.run(broadcast_case(""));
  REQUIRE(probe != nullptr);
  if (comm.rank() == kCollRoot) {
    // At least the timed samples' and the verification's calls (warm-up adds more): each saw the root's data.
    CHECK(probe->calls >= 3 * 2 + 1);
    CHECK(probe->before_differs == 0);
    CHECK(probe->after_differs == 0);
  } else {
    CHECK(probe->calls == 0);
  }
  if (comm.rank() != 0) return;
  CHECK(rec.status == CaseStatus::ok);
  CHECK(rec.wrong_elements == std::vector<std::int64_t>(comm.size(), 0));
}

TEST_CASE("a broadcast that delivers nothing fails verification on every rank but the root",
          "[mpi][collective][broadcast]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  testing::Rig<> rig(comm, [](MPI_Comm g, Device& d) -> std::unique_ptr<DataComm> {
    return std::make_unique<DroppedBroadcast>(make_mpi_data_comm(g, d));
  });
  const CaseRecord rec = rig.runner.run(broadcast_case(""));
  if (comm.rank() != 0) return;
  CHECK(rec.status == CaseStatus::verify_failed);
  // The root's recv holds its own data from the preparation; every other rank's still holds the NaNs it started as.
  std::vector<std::int64_t> want(comm.size(), 12004 / 4);
  want[kCollRoot] = 0;
  CHECK(rec.wrong_elements == want);
}
