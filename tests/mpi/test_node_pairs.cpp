// The node-pair sweep under mpiexec -n 2 and -n 4, on one host: through the
// runner the case is skipped (one node) with only local rank 0 in its group;
// the sweep itself runs in a group made by hand in which every rank stands
// for a node (an even and, on 4 ranks, an odd count), one phase per round.
#include <catch2/catch.hpp>

#include <map>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_check.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/case_tables.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "device/cpu_device.hpp"
#include "runner/runner.hpp"
#include "workloads/collective.hpp"
#include "workloads/collective_pattern.hpp"
#include "workloads/node_pair_table.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

const char* kSweep = R"([[experiment]]
name = "np"
workload = "collective"
op = "pairs"
scope = "node-pairs"
bytes = 4104
iters = 2
warmup = 1
reps = 2
)";

Params sweep_params() { return expand(parse_config(kSweep, "np.toml", {}, workload_schemas())).at(0).params; }

// World ranks 0..n-1 as the nodes of a sweep; the others outside it.
Group first_as_nodes(const MpiCommunicator& comm, Device& dev, int n) {
  Group g;
  g.scope = Scope::node_pairs;
  const bool in = comm.rank() < n;
  MPI_Comm c = MPI_COMM_NULL;
  GPUSCALE_MPI(MPI_Comm_split(comm.comm(), in ? 0 : MPI_UNDEFINED, comm.rank(), &c));
  if (in) {
    g.control = CommHandle(c);
    g.rank = comm.rank();
    g.size = n;
    g.data = make_mpi_data_comm(c, dev);
  } else {
    g.index = g.rank = -1;
    g.size = 0;
  }
  return g;
}

}  // namespace

TEST_CASE("on one host the sweep is skipped, with local rank 0 alone in its group", "[mpi][node-pairs]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  CpuDevice dev;
  CommonClock clock(comm);
  Groups groups(comm, dev, make_mpi_data_comm);
  Runner runner(comm, dev, &groups, clock, Backend::cpu, 7);
  const Case c = expand(parse_config(kSweep, "np.toml", {}, workload_schemas())).at(0);
  const CaseRecord rec = runner.run(c);
  if (comm.rank() != 0) return;
  CHECK(rec.status == CaseStatus::skipped);
  CHECK(rec.status_reason == "scope node-pairs needs ranks on at least 2 nodes; this job runs on 1 node");
  CHECK(rec.scope == Scope::node_pairs);
  CHECK(rec.groups == 1);
  std::vector<std::int64_t> group(comm.size(), -1), size(comm.size(), 0);
  group[0] = 0;
  size[0] = 1;
  CHECK(rec.group == group);
  CHECK(rec.group_size == size);
  CHECK(find_table(rec.tables, kPairsTable) == nullptr);  // no sweep ran: no pairs
}

TEST_CASE("every rank standing for a node meets every other once, one phase per round, verified",
          "[mpi][node-pairs]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  CpuDevice dev;
  std::vector<int> counts{comm.size()};
  if (comm.size() > 3) counts.push_back(comm.size() - 1);  // odd: one node rests each round
  for (const int n : counts) {
    INFO("nodes: " << n);
    Group g = first_as_nodes(comm, dev, n);
    CaseContext ctx{dev};
    ctx.group = &g;
    ctx.nodes = n;
    PhaseLog log(dev);
    ctx.phases = &log;
    CollectiveWorkload w(sweep_params());
    CHECK(w.skip_reason(ctx).empty());
    w.setup(ctx, 1);
    CHECK(w.op_bytes() == (g.member() ? 4104.0 : 0.0));
    CHECK(w.bytes_per_sample() == (g.member() ? 4104.0 * 2 * (n - 1) : 0.0));
    for (int sample = 0; sample < 2; ++sample) {
      log.start_sample();
      auto start = dev.create_event();
      start->record();
      w.run_sample(ctx);
      ctx.synchronize();
      const auto intervals = log.intervals(*start);
      if (!g.member()) {
        CHECK(intervals.empty());
        continue;
      }
      // A phase for each round this node exchanged in: all but the one it rested in (odd n).
      std::map<std::string, int> seen;
      for (const auto& iv : intervals) {
        ++seen[log.names().at(iv.phase)];
        CHECK(iv.end_s >= iv.begin_s);
      }
      int rounds = 0;
      for (int round = 0; round < node_pair_rounds(n); ++round) {
        const bool busy = node_pair_partner(g.rank, round, n) >= 0;
        CHECK(seen["round " + std::to_string(round + 1)] == (busy ? 1 : 0));
        rounds += busy;
      }
      CHECK(rounds == n - 1);
      CHECK(static_cast<int>(intervals.size()) == n - 1);
    }
    const Verification v = w.verify(ctx);
    CHECK(v.ok);
    CHECK(v.wrong_elements == 0);
    CHECK(w.turn(ctx, comm.rank()) == 0);
    GPUSCALE_MPI(MPI_Barrier(comm.comm()));
  }
}
