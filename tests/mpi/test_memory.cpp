// A transfer's memory need holds in a group of any size: what a rank
// allocates in a group of 2 or 4 (device buffers, and on a GPU the pinned
// buffers MPI stages through) is within the need from the parameters alone,
// for the examples of every registered transfer (WorkloadType::examples).
#include <catch2/catch.hpp>

#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/counting_device.hpp"
#include "core/plan.hpp"
#include "workloads/memory_need.hpp"

using namespace gpuscale;

namespace {

// The group the runner gives a case (runner.cpp): the first n ranks, or its scope's.
Group& group_of(Groups& groups, const WorkloadType& type, const Params& p, int world) {
  const int first = type.group_size(p);
  return first > 0 && first <= world ? groups.first(first) : groups.get(*type.scope(p));
}

}  // namespace

TEST_CASE("a transfer allocates no more than its memory need in a group of every size", "[mpi][memory]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  int measured = 0;
  for (const WorkloadType* type : workload_registry()) {
    for (const Params& p : type->examples()) {
      if (!type->scope(p)) continue;  // device-local: tests/unit/test_memory.cpp
      Case c;
      c.workload = type->schema().name;
      c.params = p;
      for (const bool on_host : {true, false}) {
        testing::CountingDevice dev(on_host);
        Groups groups(comm, dev, make_mpi_data_comm);  // afresh: MPI's staging buffers grow and stay with their group
        CaseContext ctx{dev, &group_of(groups, *type, p, comm.size())};
        auto w = type->make(p);
        if (!w->skip_reason(ctx).empty()) continue;  // tests/mpi/test_registry.cpp checks the reason
        ++measured;
        w->setup(ctx, 7);
        w->run_sample(ctx);
        dev.join_lanes();
        ctx.synchronize();
        CHECK(w->verify(ctx).ok);
        const MemoryNeed need = memory_need(c, on_host);
        INFO(c.workload << " " << c.param_label() << (on_host ? ", buffers on the host" : ", buffers on a device")
                        << ", " << comm.size() << " ranks: device " << dev.device_bytes << " of "
                        << need.device_bytes << ", host buffers " << dev.host_bytes << " of " << need.host_bytes);
        CHECK(dev.device_bytes <= need.device_bytes);
        CHECK(dev.host_bytes <= need.host_bytes);
      }
    }
  }
  CHECK(measured > 0);
}
