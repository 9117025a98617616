// Transfers under mpiexec -n 2 and -n 4: every op through the runner and the
// MPI data plane, verified; skipped shapes; a corrupted result counted and
// kept through the file; pairs taking turns in serial mode.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/mpi_rig.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "io/result_reader.hpp"
#include "io/result_writer.hpp"
#include "runner/runner.hpp"
#include "workloads/collective.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;
using testing::CorruptingComm;
using Rig = testing::Rig<>;

namespace {

// Forwards to a real data plane, then adds 1 to the first received element:
// a transport that silently delivers one wrong value per operation.
Case collective_case(const std::string& keys, const std::string& mode) {
  const Config cfg = parse_config("[[experiment]]\nname = \"t\"\nworkload = \"collective\"\nwarmup = 1\nreps = 2\n" +
                                      keys + "\nmodes = [\"" + mode + "\"]\n",
                                  "t.toml", {}, workload_schemas());
  return expand(cfg).at(0);
}

}  // namespace

TEST_CASE("every op, dtype and in-place form verifies in scopes world and intra-node", "[mpi][collective]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const int n = comm.size();
  int cases = 0;
  for (const auto& op : coll_op_names()) {
    for (const std::string dtype : {"fp32", "fp64", "fp16", "bf16"}) {
      for (const bool inplace : {false, true}) {
        for (const std::string scope : {"world", "intra-node"}) {
          const Params probe = collective_case("op = \"" + op + "\"\ndtype = \"" + dtype + "\"\ninplace = " +
                                                   (inplace ? "true" : "false"),
                                               "parallel")
                                   .params;
          if (!collective_type().unsupported(probe, {Backend::cpu, CommKind::mpi}).empty()) continue;
          const std::string keys = "op = \"" + op + "\"\ndtype = \"" + dtype + "\"\nbytes = 4104\ninplace = " +
                                   (inplace ? "true" : "false") + "\niters = 2\nscope = \"" + scope + "\"";
          const CaseRecord rec = rig.runner.run(collective_case(keys, "parallel"));
          ++cases;
          if (comm.rank() != 0) continue;
          INFO(keys);
          CHECK(rec.status == CaseStatus::ok);
          CHECK(rec.comm == CommKind::mpi);
          CHECK(rec.scope == parse_scope(scope));
          CHECK(rec.groups == 1);  // one node here: one group in both scopes
          CHECK(rec.group == std::vector<std::int64_t>(n, 0));
          CHECK(rec.group_size == std::vector<std::int64_t>(n, n));
          CHECK(rec.wrong_elements == std::vector<std::int64_t>(n, 0));
          const CollShape s = coll_shape(parse_coll_op(op), 4104, parse_dtype(dtype), n);
          CHECK(rec.op_bytes == std::vector<double>(n, s.op_bytes));
          CHECK(rec.bus_factor == std::vector<double>(n, bus_factor(parse_coll_op(op), n)));
          CHECK(rec.bytes_per_sample == 2 * s.op_bytes);
          CHECK(rec.device_time_s.size() == static_cast<std::size_t>(n * 2));
        }
      }
    }
  }
  CHECK(cases > 60);
}

TEST_CASE("a shape the job cannot run is skipped by every rank with the reason", "[mpi][collective]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const CaseRecord inter = rig.runner.run(collective_case("scope = \"inter-node\"", "parallel"));
  CHECK(inter.status == CaseStatus::skipped);
  CHECK(inter.status_reason == "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node");
  CHECK(inter.device_time_s.empty());
  const CaseRecord tiny = rig.runner.run(collective_case("op = \"allgather\"\ndtype = \"fp64\"\nbytes = 8", "serial"));
  CHECK(tiny.status == CaseStatus::skipped);
  CHECK(tiny.status_reason ==
        "bytes = 8 is less than one fp64 element per rank of a group of " + std::to_string(comm.size()));
}

TEST_CASE("a corrupted result fails verification with its count, and the file keeps both", "[mpi][collective]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm, [](MPI_Comm g, Device& d) -> std::unique_ptr<DataComm> {
    return std::make_unique<CorruptingComm>(make_mpi_data_comm(g, d), d);
  });
  const CaseRecord rec = rig.runner.run(collective_case("op = \"allreduce\"\nbytes = 4096", "parallel"));
  const int n = comm.size();
  if (comm.rank() != 0) return;
  CHECK(rec.status == CaseStatus::verify_failed);
  CHECK(rec.wrong_elements == std::vector<std::int64_t>(n, 1));

  const std::string path = "/tmp/gpuscale-mpi-test-" + std::to_string(getpid()) + ".h5";
  RunRecord run;
  run.software_version = "test";
  run.ranks.resize(n);
  {
    std::remove(path.c_str());
    ResultWriter w(path, run);
    w.write_case(rec);
    w.finish(true, "complete", run.ranks);
  }
  const RunRecord back = read_result_file(path);
  std::remove(path.c_str());
  REQUIRE(back.cases.size() == 1);
  CHECK(back.cases[0].status == CaseStatus::verify_failed);
  CHECK(back.cases[0].wrong_elements == std::vector<std::int64_t>(n, 1));
  CHECK(back.cases[0].scope == Scope::world);
  CHECK(back.cases[0].op_bytes == rec.op_bytes);
}

TEST_CASE("serial pairs take turns: one pair at a time", "[mpi][collective][modes]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  Rig rig(comm);
  const CaseRecord rec = rig.runner.run(collective_case("op = \"pairs\"\nbytes = 65536", "serial"));
  if (comm.rank() != 0) return;
  const int n = comm.size(), reps = 2;
  CHECK(rec.status == CaseStatus::ok);
  // Rank r pairs with r + n/2: pair p is ranks p and p + n/2, and pairs go in order.
  for (int r = 0; r < n; ++r) CHECK(rec.turn[r] == r % (n / 2));
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (rec.turn[q] != rec.turn[r] + 1) continue;
      // Every sample of the later pair starts after every sample of the earlier one ended.
      CHECK(rec.wall_start_s[q * reps] >= rec.wall_end_s[r * reps + reps - 1] - 1e-3);
    }
  }
}
