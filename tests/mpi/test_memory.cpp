// A transfer's memory need holds in a group of any size: what a rank
// allocates in a group of 2 or 4 (device buffers, and on a GPU the pinned
// buffers MPI stages through) is within the need from the parameters alone.
#include <catch2/catch.hpp>

#include "comm/groups.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_data_comm.hpp"
#include "common/counting_device.hpp"
#include "core/config.hpp"
#include "core/plan.hpp"
#include "workloads/memory_need.hpp"

using namespace gpuscale;

TEST_CASE("a transfer allocates no more than its memory need in a group of every size", "[mpi][memory]") {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const char* cases[] = {
      "workload = \"collective\"\nop = \"allreduce\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"allreduce\"\nbytes = 3000000\ndtype = \"fp64\"\ninplace = true\n",
      "workload = \"collective\"\nop = \"allgather\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"allgather\"\nbytes = 1048576\ninplace = true\n",
      "workload = \"collective\"\nop = \"reduce_scatter\"\nbytes = 1048576\ninplace = true\n",
      "workload = \"collective\"\nop = \"broadcast\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"reduce\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"alltoall\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"sendrecv\"\nbytes = 1048576\n",
      "workload = \"collective\"\nop = \"pairs\"\nbytes = 1048576\n",
      "workload = \"distributed_gemm\"\nsize = 64\n",
      "workload = \"dp_step\"\nhidden = 64\nbatch = 8\nlayers = 4\nbucket_bytes = 20000\n",
  };
  for (const char* keys : cases) {
    for (const bool on_host : {true, false}) {
      const Case c = expand(parse_config(std::string("[[experiment]]\n") + keys, "m.toml", {}, workload_schemas())).at(0);
      testing::CountingDevice dev(on_host);
      Groups groups(comm, dev, make_mpi_data_comm);  // afresh: MPI's staging buffers grow and stay with their group
      CaseContext ctx{dev, &groups.get(*find_workload(c.workload).scope(c.params))};
      auto w = find_workload(c.workload).make(c.params);
      REQUIRE(w->skip_reason(ctx).empty());
      w->setup(ctx, 7);
      w->run_sample(ctx);
      dev.join_lanes();
      ctx.synchronize();
      CHECK(w->verify(ctx).ok);
      const MemoryNeed need = memory_need(c, on_host);
      INFO(keys << (on_host ? "buffers on the host" : "buffers on a device") << ", " << comm.size() << " ranks: device "
                << dev.device_bytes << " of " << need.device_bytes << ", host buffers " << dev.host_bytes << " of "
                << need.host_bytes);
      CHECK(dev.device_bytes <= need.device_bytes);
      CHECK(dev.host_bytes <= need.host_bytes);
    }
  }
}
