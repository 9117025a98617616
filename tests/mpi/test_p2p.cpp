// The p2p workload under mpiexec -n 2 and -n 4 through the runner: every
// pattern verifies in scopes world and intra-node with the bytes of one
// operation as the report counts them; serial pairs take turns; a data plane
// that corrupts what arrives fails verification.
#include <catch2/catch.hpp>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/mpi_rig.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "device/dtype.hpp"
#include "runner/runner.hpp"
#include "workloads/p2p.hpp"

using namespace gpuscale;
using testing::CorruptingComm;
using Rig = testing::Rig<>;

namespace {

Case p2p_case(const std::string& keys, const std::string& mode) {
  const Config cfg = parse_config("[[experiment]]\nname = \"t\"\nworkload = \"p2p\"\nwarmup = 1\nreps = 2\n" + keys +
                                      "\nmodes = [\"" + mode + "\"]\n",
                                  "t.toml", {}, workload_schemas());
  return expand(cfg).at(0);
}

}  // namespace

TEST_CASE("every pattern verifies in scopes world and intra-node, with the bytes of one operation", "[mpi][p2p]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const int n = comm.size();
  for (const std::string pattern : {"latency", "bw", "bibw"}) {
    for (const std::string scope : {"world", "intra-node"}) {
      // 4102 bytes: one message of 1025 whole 4-byte elements; bw and bibw send windows of 4 of them.
      const std::string keys =
          "pattern = \"" + pattern + "\"\nbytes = 4102\niters = 3\nwindow = 4\nscope = \"" + scope + "\"";
      const CaseRecord rec = rig.runner.run(p2p_case(keys, "parallel"));
      if (comm.rank() != 0) continue;
      INFO(keys);
      CHECK(rec.status == CaseStatus::ok);
      CHECK(rec.scope == parse_scope(scope));
      CHECK(rec.wrong_elements == std::vector<std::int64_t>(n, 0));
      // A round trip carries the message twice, a window 4 messages (bibw: each way).
      const double op = pattern == "latency" ? 2 * 4100 : pattern == "bw" ? 4 * 4100 : 2 * 4 * 4100;
      CHECK(rec.op_bytes == std::vector<double>(n, op));
      CHECK(rec.bus_factor == std::vector<double>(n, 1.0));
      CHECK(rec.bytes_per_sample == 3 * op);
      CHECK(rec.device_time_s.size() == static_cast<std::size_t>(n * 2));
    }
  }
}

TEST_CASE("serial pairs take turns, one pair at a time", "[mpi][p2p][modes]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const CaseRecord rec = rig.runner.run(p2p_case("pattern = \"latency\"\nbytes = 64", "serial"));
  if (comm.rank() != 0) return;
  const int n = comm.size(), reps = 2;
  CHECK(rec.status == CaseStatus::ok);
  for (int r = 0; r < n; ++r) CHECK(rec.turn[r] == r % (n / 2));  // rank r pairs with r + n/2
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (rec.turn[q] != rec.turn[r] + 1) continue;
      CHECK(rec.wall_start_s[q * reps] >= rec.wall_end_s[r * reps + reps - 1] - 1e-3);
    }
  }
}

TEST_CASE("a message that arrives changed fails verification, on the ranks that received it", "[mpi][p2p]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm, [](MPI_Comm c, Device& dev) {
    return std::make_unique<CorruptingComm>(make_mpi_data_comm(c, dev), dev);
  });
  for (const std::string pattern : {"latency", "bw", "bibw"}) {
    const CaseRecord rec = rig.runner.run(p2p_case("pattern = \"" + pattern + "\"\nbytes = 64", "parallel"));
    if (comm.rank() != 0) continue;
    INFO(pattern);
    CHECK(rec.status == CaseStatus::verify_failed);
    // Each rank receives: the message (latency, bibw; the upper half in bw) or the acknowledgement (bw, lower).
    CHECK(rec.wrong_elements == std::vector<std::int64_t>(comm.size(), 1));
  }
}
