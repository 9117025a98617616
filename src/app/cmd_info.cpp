// gpuscale info: where every rank of this job runs and which device it would
// use (and why), without running any workload.
#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "app/mpi_session.hpp"
#include "app/rank_table.hpp"
#include "app/run_metadata.hpp"
#include "comm/clock_sync.hpp"
#include "comm/comm_choice.hpp"
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
  std::string cuda_line = cuda.built ? "CUDA runtime " + cuda.runtime_version + ": " +
                                           (cuda.usable ? std::to_string(cuda.device_count) + " device(s)" : cuda.reason)
                                     : cuda.reason;
  const auto notes = comm.gather(choice.reason);
  const auto cuda_lines = comm.gather(cuda_line);
  if (comm.rank() == 0) {
    std::printf("gpuscale %s: %d rank(s) on %d node(s); %s\n", software_version().c_str(), comm.size(),
                comm.node_count(), software_dependencies(cuda).c_str());
    std::printf("%s%s", format_rank_table(table, notes).c_str(), format_gpu_facts(table, links).c_str());
    for (const auto& w : oversubscription_warnings(table)) std::printf("  WARNING: %s\n", w.c_str());
    // One CUDA line per distinct answer (ranks on one node usually agree).
    std::vector<std::string> seen;
    for (std::size_t r = 0; r < cuda_lines.size(); ++r) {
      if (std::find(seen.begin(), seen.end(), cuda_lines[r]) != seen.end()) continue;
      seen.push_back(cuda_lines[r]);
      std::printf("  %s (%s)\n", cuda_lines[r].c_str(), table[r].hostname.c_str());
    }
    const CommChoice transfers = comm_for_shared_devices(choose_comm("auto", choice.backend, nccl_built()), "auto",
                                                         shared_device_ranks(table));
    std::printf("  transfers between ranks: %s (%s)\n", transfers.comm.c_str(), transfers.reason.c_str());
  }
  return kExitOk;
}

}  // namespace gpuscale
