// Gathers who-is-where of every rank to rank 0, for `info`, `run` and the file.
#pragma once

#include <string>
#include <vector>

#include "comm/clock_sync.hpp"
#include "comm/mpi_communicator.hpp"
#include "device/device.hpp"
#include "io/result_model.hpp"
#include "telemetry/telemetry.hpp"

namespace gpuscale {

// What this rank knows of its GPU (all unknown on the CPU backend).
struct RankGpu {
  std::string telemetry;  // "nvml" | "not available: why"
  GpuStatic info;
  int numa_node = -1;
  std::string local_cpulist;
};
// NVML for this rank's GPU; on the CPU backend "not available" and why.
GpuTelemetry open_device_telemetry(const DeviceInfo& dev);
// This rank's GPU facts: the telemetry's static part and the PCI device's NUMA affinity.
RankGpu rank_gpu(const DeviceInfo& dev, const GpuTelemetry& telemetry);
// One line per rank with a GPU: telemetry, PCIe, NVLink, NUMA, clocks; then its links; then the GPUs each node's
// ranks were handed and the one each uses (app/gpu_binding, where any rank has CUDA_VISIBLE_DEVICES).
std::string format_gpu_facts(const std::vector<RankRecord>& table, const std::vector<LinkRecord>& links);

// A rank's row as the gather sends it, every field of kRankFields (io/rank_fields.hpp) in its order: each number
// (an int or a flag as a double, exactly) or a string's length in `numbers`, the strings one after another in
// `texts`.
struct PackedRank {
  std::vector<double> numbers;  // kRankFieldCount
  std::string texts;
};
PackedRank pack_rank(const RankRecord& row);
// The row back from its kRankFieldCount numbers and its texts.
RankRecord unpack_rank(const double* numbers, const std::string& texts);

// Collective; the table on rank 0, {} elsewhere. With `links`, also every
// rank's links to the other GPUs of its node (rank 0).
std::vector<RankRecord> gather_rank_table(const MpiCommunicator& comm, const DeviceInfo& dev, const ClockOffset& start,
                                          const RankGpu& gpu = {}, std::vector<LinkRecord>* links = nullptr);
// Collective; fills the end offsets of `table` on rank 0.
void gather_end_offsets(const MpiCommunicator& comm, const ClockOffset& end, std::vector<RankRecord>& table);

// One line per node with more ranks than online CPUs (oversubscribed: parallel numbers mean little).
std::vector<std::string> oversubscription_warnings(const std::vector<RankRecord>& table);
// What makes a run's numbers doubtful from where its ranks sit, the warnings `run` prints and writes into the file:
// oversubscribed nodes, then GPUs left idle or one GPU per rank (gpu_binding_warnings, app/gpu_binding).
std::vector<std::string> placement_warnings(const std::vector<RankRecord>& table);

// "" unless two ranks of one node use the same GPU (same UUID); then "ranks A and B on HOST share GPU UUID".
std::string shared_device_ranks(const std::vector<RankRecord>& table);
// "" unless two ranks of one node use the same GPU (same UUID), which would
// measure each other's work instead of scaling; then the message says so.
std::string shared_device_error(const std::vector<RankRecord>& table);

// On rank 0, once the job is being ended: "rank 1 (pid 4242 on HOST)" for the
// first other rank of rank 0's node whose process is gone (or a zombie), ""
// when every one there is alive. Ranks on other nodes cannot be seen from here.
std::string ended_peer(const std::vector<RankRecord>& table);

// A fixed-width table, one line per rank.
std::string format_rank_table(const std::vector<RankRecord>& table);

// "  HEAD: NOTE" once where every rank has the same note, else "  HEAD of ranks 0-3, 6: NOTE" per distinct note:
// what ranks share (why they use the CPU) is said once, not on every row.
std::string format_rank_notes(const std::string& head, const std::vector<std::string>& notes);

}  // namespace gpuscale
