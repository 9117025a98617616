// gpuscale info: where every rank of this job runs and which device it would
// use (and why), without running any workload.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "app/mpi_session.hpp"
#include "app/rank_table.hpp"
#include "app/run_metadata.hpp"
#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
#include "comm/mpi_library.hpp"
#include "core/error.hpp"
#include "device/backend.hpp"

namespace gpuscale {

CLI::App* add_info_command(CLI::App& app) {
  auto* info = app.add_subcommand("info", "Show where every rank runs and which device it uses, and why");
  info->footer("Example:\n  mpirun -np 4 gpuscale info");
  return info;
}

int cmd_info(int* argc, char*** argv) {
  const CudaStatus cuda = probe_cuda();
  const BackendChoice choice = choose_backend("auto", cuda);
  MpiSession mpi(argc, argv);
  MpiCommunicator comm(MPI_COMM_WORLD);
  const auto dev = make_device(choice, comm.local_rank());
  const ClockOffset offset = estimate_clock_offset(comm);
  const GpuTelemetry telemetry = open_device_telemetry(dev->info());
  std::vector<LinkRecord> links;
  const auto table = gather_rank_table(comm, dev->info(), offset, rank_gpu(dev->info(), telemetry), &links);
  // Each rank's backend and why (the CUDA probe's answer: devices usable, or why none is), said once for the ranks
  // that agree; the CUDA runtime's version is among the dependencies.
  const auto reasons = comm.gather(choice.reason);
  if (comm.rank() == 0) {
    std::printf("gpuscale %s: %d rank(s) on %d node(s); %s\n", software_version().c_str(), comm.size(),
                comm.node_count(), software_dependencies(cuda).c_str());
    std::printf("  MPI: %s; %s asked, %s provided\n", mpi_runs_with().c_str(),
                mpi_thread_level_name(mpi.requested()).c_str(), mpi_thread_level_name(mpi.provided()).c_str());
    std::printf("%s%s", format_rank_table(table).c_str(), format_gpu_facts(table, links).c_str());
    for (const auto& w : placement_warnings(table)) std::printf("  WARNING: %s\n", w.c_str());
    std::printf("%s", format_rank_notes("backend", reasons).c_str());
    const CommChoice transfers = comm_for_shared_devices(choose_comm("auto", choice.backend, nccl_built()), "auto",
                                                         shared_device_ranks(table));
    std::printf("  transfers between ranks: %s (%s)\n", comm_name(transfers.comm), transfers.reason.c_str());
  }
  return kExitOk;
}

}  // namespace gpuscale
