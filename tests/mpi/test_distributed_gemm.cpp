// distributed_gemm under mpiexec -n 2 and -n 4: the same product on 1, 2 and
// all ranks verifies, ranks outside the group sit the case out, phases lie
// inside their samples and overlap only when asked, a group larger than the
// job is skipped with the reason, and a wrong block product fails.
#include <catch2/catch.hpp>

#include <algorithm>

#include "comm/clock_sync.hpp"
#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/case_tables.hpp"
#include "common/forwarding_device.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "runner/runner.hpp"
#include "workloads/workload.hpp"

using namespace gpuscale;

namespace {

// One entry of every block product off by one.
class WrongProductDevice final : public testing::ForwardingDevice {
 public:
  void gemm(GemmImpl i, DType t, GemmShape s, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c) override {
    cpu_.gemm(i, t, s, a, b, c);
    void* p = c.data();
    cpu_.host_task([p] { static_cast<double*>(p)[0] += 1.0; });
  }
};

template <class Dev>
struct DgRig {
  template <class... DevArgs>
  explicit DgRig(const MpiCommunicator& comm, DevArgs... args)
      : dev(args...),
        clock(comm),
        groups(comm, dev, make_mpi_data_comm),
        runner(comm, dev, &groups, clock, Backend::cpu, 7) {}
  Dev dev;
  CommonClock clock;
  Groups groups;
  Runner runner;
};

Case dg_case(int group_size, bool overlap, int size = 48) {
  const Config cfg = parse_config("[[experiment]]\nname = \"d\"\nworkload = \"distributed_gemm\"\nsize = " +
                                      std::to_string(size) + "\nwarmup = 1\nreps = 3\ngroup_size = " +
                                      std::to_string(group_size) + "\noverlap = " + (overlap ? "true" : "false") +
                                      "\nmodes = [\"parallel\"]\n",
                                  "d.toml", {}, workload_schemas());
  return expand(cfg).at(0);
}

}  // namespace

TEST_CASE("distributed_gemm verifies on 1, 2 and all ranks, the others sit it out", "[mpi][distributed_gemm]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  DgRig<CpuDevice> rig(comm);
  const int n = comm.size();
  for (const int g : {1, 2, n}) {
    for (const bool overlap : {true, false}) {
      const CaseRecord rec = rig.runner.run(dg_case(g, overlap));
      if (comm.rank() != 0) continue;
      INFO("group_size " << g << " overlap " << overlap);
      CHECK(rec.status == CaseStatus::ok);
      REQUIRE(rec.group.size() == static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        CHECK(rec.group[r] == (r < g ? 0 : -1));
        CHECK(rec.group_size[r] == (r < g ? g : 0));
      }
      CHECK(rec.flops_per_sample == 2.0 * (48 / g) * 48 * 48);  // rank 0's share
      const testing::PhaseRows p = testing::phase_rows(rec);
      // g matmuls and g-1 transfers per sample on every rank of the group, nothing elsewhere.
      CHECK(p.size() == static_cast<std::size_t>(g * rec.reps * (2 * g - 1)));
      int overlapping = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        CHECK(p.rank[i] < g);
        const std::size_t at = static_cast<std::size_t>(p.rank[i] * rec.reps + p.sample[i]);
        CHECK(p.start_s[i] >= rec.wall_start_s[at]);
        CHECK(p.end_s[i] <= rec.wall_end_s[at]);
        if (p.name(i) != "compute") continue;
        for (std::size_t j = 0; j < p.size(); ++j) {
          overlapping += p.name(j) == "transfer" && p.rank[j] == p.rank[i] && p.sample[j] == p.sample[i] &&
                         p.start_s[j] < p.end_s[i] && p.start_s[i] < p.end_s[j];
        }
      }
      if (!overlap) CHECK(overlapping == 0);  // with overlap, how much depends on free cores
    }
  }
}

TEST_CASE("distributed_gemm: a group larger than the job is skipped, a wrong block product fails",
          "[mpi][distributed_gemm]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  {
    DgRig<CpuDevice> rig(comm);
    const CaseRecord rec = rig.runner.run(dg_case(comm.size() + 1, true));
    CHECK(rec.status == CaseStatus::skipped);
    CHECK(rec.status_reason == "group_size = " + std::to_string(comm.size() + 1) + " needs at least " +
                                   std::to_string(comm.size() + 1) + " ranks; this job has " +
                                   std::to_string(comm.size()));
    const CaseRecord odd = rig.runner.run(dg_case(2, true, 47));
    CHECK(odd.status == CaseStatus::skipped);
    CHECK(odd.status_reason == "m = 47 and n = 47 must be multiples of the group's 2 ranks");
  }
  DgRig<WrongProductDevice> rig(comm);
  const CaseRecord rec = rig.runner.run(dg_case(2, true));
  if (comm.rank() == 0) {
    CHECK(rec.status == CaseStatus::verify_failed);
    CHECK(rec.wrong_elements[0] == 2);  // entry (0, 0) of each of its 2 blocks
  }
}

TEST_CASE("distributed_gemm phases: each ring transfer inside its block product exactly when overlap = true",
          "[mpi][distributed_gemm]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int g = comm.size();
  for (const bool overlap : {true, false}) {
    DgRig<testing::RingHandshakeDevice> rig(comm, g);  // makes the overlap deterministic (see its comment)
    const CaseRecord rec = rig.runner.run(dg_case(g, overlap));
    CHECK(rig.dev.timed_out == !overlap);
    if (comm.rank() != 0) continue;
    INFO("overlap = " << overlap);
    CHECK(rec.status == CaseStatus::ok);
    const testing::PhaseRows p = testing::phase_rows(rec);
    int overlapping = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p.name(i) != "compute") continue;
      for (std::size_t j = 0; j < p.size(); ++j) {
        overlapping += p.name(j) == "transfer" && p.rank[j] == p.rank[i] && p.sample[j] == p.sample[i] &&
                       p.start_s[j] < p.end_s[i] && p.start_s[i] < p.end_s[j];
      }
    }
    if (overlap) {
      CHECK(overlapping >= g * rec.reps * (g - 1));  // every transfer overlaps its step's product
    } else {
      CHECK(overlapping == 0);
    }
  }
}
