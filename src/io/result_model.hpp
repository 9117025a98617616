// What a result file holds, as plain structs: the writer stores them, the
// reader returns them, the report computes from them. Layout and units:
// docs/results-format.md.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/data_comm.hpp"
#include "comm/scope.hpp"
#include "core/config.hpp"
#include "core/value.hpp"
#include "device/device.hpp"
#include "io/case_table.hpp"

namespace gpuscale {

constexpr const char* kSchemaVersion = "1.10";
// Files of kSchemaVersion's major version are read from this minor version on; an older one is one line naming
// the last commit that reads it.
constexpr int kOldestMinorRead = 7;
constexpr const char* kLastReaderOfOlder = "ef8f806";

// A case's limits (CaseRecord::expect) are its attributes named this and the limit's name.
constexpr const char* kExpectPrefix = "expect.";

struct RankRecord {
  std::string hostname;
  int node_index = 0;
  int local_rank = 0;
  int local_size = 1;
  int pid = 0;
  std::string device_kind, device_name, device_uuid, device_pci_bus_id;
  // This rank's clock minus rank 0's, at the start and the end of the run.
  double clock_offset_start_s = 0.0, clock_uncertainty_start_s = 0.0;
  double clock_offset_end_s = 0.0, clock_uncertainty_end_s = 0.0;
  bool clock_shared = false;  // on rank 0's node: its very clock, offsets 0 by construction
  // The estimate the rank's wall times are on: the start one, or the end one
  // where that is better (applied when the run finishes); NaN: older files, the start one.
  double clock_offset_applied_s = NAN, clock_uncertainty_applied_s = NAN;
  // Where the rank may run: the CPUs of its affinity ("0-3"), how many, the
  // node's online CPUs, and CUDA_VISIBLE_DEVICES as the rank saw it ("" unset).
  std::string cpu_affinity;
  int cores_available = 0, node_cores = 0;
  std::string cuda_visible_devices;
  // The GPUs CUDA_VISIBLE_DEVICES gives the rank and the index among them it uses (local_rank mod their number,
  // app/gpu_binding); -1 where the variable is unset (which GPUs it sees is the driver's business) or before 1.9.
  int gpus_visible = -1, gpu_index = -1;
  // Which of the GPUs the rank sees its own can reach directly (peer access: NVLink or PCIe peer to peer), one
  // entry each in the CUDA runtime's order, "1,1,0,1" ("" not known: the CPU backend, or before 1.9).
  std::string gpu_peers;
  // The GPU's telemetry: "nvml", or "not available: why" (the CPU backend, no driver, ...).
  std::string telemetry;
  // The GPU, once per run (NaN / -1 / "" where unknown).
  double max_sm_clock_mhz = NAN, max_mem_clock_mhz = NAN, power_limit_w = NAN;
  int pcie_gen = -1, pcie_width = -1, pcie_max_gen = -1, pcie_max_width = -1, nvlinks_active = -1;
  int numa_node = -1;          // of the GPU's PCI device
  std::string local_cpulist;  // CPUs close to the GPU, e.g. "0-15"
  // The rank's kernel (/proc/sys/kernel/random/boot_id): nodes that share one (containers, emulated hosts) share
  // its CPUs, so each other's ranks are not others' work there; "" where unreadable or in older files.
  std::string boot_id;
};

// True when a rank's end clock estimate is better (a smaller uncertainty)
// than its start one: the run's wall times are then moved onto it.
inline bool end_clock_is_better(const RankRecord& r) {
  return !r.clock_shared && std::isfinite(r.clock_uncertainty_end_s) &&
         r.clock_uncertainty_end_s < r.clock_uncertainty_start_s;
}

// The uncertainty of the clock estimate a rank's wall times are on.
inline double applied_clock_uncertainty(const RankRecord& r) {
  return std::isfinite(r.clock_uncertainty_applied_s) ? r.clock_uncertainty_applied_s : r.clock_uncertainty_start_s;
}

// How a rank's GPU reaches another GPU of its node (NVML's view).
struct LinkRecord {
  int rank = 0;
  std::string peer_pci_bus_id;
  int nvlinks = 0;              // active NVLinks straight to the peer
  std::string common_ancestor;  // internal | single | multiple | hostbridge | node | system; "" unknown
};

// The tables the runner gives a case (a workload may add its own, Workload::tables).
// GPU readings, one row per reading: rank, time (common clock), sm_clock,
// mem_clock, temperature, power (NaN: not readable), clock_event_reasons (NVML
// bitmask; -1: not readable); attribute "interval" (s).
constexpr const char* kTelemetryTable = "telemetry";
// Named intervals inside the timed samples, one row per interval: rank,
// sample, phase (an index into the levels "names"), start, end (common clock).
constexpr const char* kPhasesTable = "phases";
// What else the host did while the case ran, one row per rank (1.8 on): rank, wall, cpu, run_wait,
// involuntary_switches, node_busy, node_steal, node_cpus, cpus_allowed, cpu_quota, procs_running, load
// (runner/host_load.hpp; judged by report/host_noise.hpp).
constexpr const char* kHostTable = "host";

// How a case ended: an enum in memory, its name in the file and wherever it is printed.
enum class CaseStatus { ok, verify_failed, skipped };
inline const char* status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok: return "ok";
    case CaseStatus::verify_failed: return "verify-failed";
    case CaseStatus::skipped: return "skipped";
  }
  return "?";
}
// The status of a name as status_name writes it; none for another text.
inline std::optional<CaseStatus> parse_status(const std::string& s) {
  for (CaseStatus c : {CaseStatus::ok, CaseStatus::verify_failed, CaseStatus::skipped}) {
    if (s == status_name(c)) return c;
  }
  return std::nullopt;
}

struct CaseRecord {
  std::size_t index = 0;
  std::string experiment, workload;
  Mode mode = Mode::parallel;
  Backend backend = Backend::cpu;
  CaseStatus status = CaseStatus::ok;
  std::string status_reason;  // why it was skipped ("" otherwise)
  std::string note;           // what the workload says about how it ran here ("" if nothing)
  int ranks = 1, nodes = 1, reps = 0, warmup = 0;
  Params params;  // everything the case was run with (warmup, reps, threads, workload's own)
  double flops_per_sample = 0.0;
  double bytes_per_sample = 0.0;
  // [ranks][reps], row-major, seconds.
  std::vector<double> device_time_s;  // device time of the sample (events)
  std::vector<double> enqueue_s;      // host time until the sample's work was enqueued
  std::vector<double> wall_start_s;   // host time at start, common clock (s since the run's epoch)
  std::vector<double> wall_end_s;     // host time after synchronize, common clock
  // Of device_time, the time the rank's stream thread waited for a core (Device::waited_s; NaN: not known).
  // Empty: none given (written as NaN), or a file before schema 1.9.
  std::vector<double> core_wait_s;
  std::vector<double> verify_error;   // [ranks]
  double verify_tolerance = 0.0;
  // [ranks]: in serial mode the ranks of one turn ran together, turns one after another (0..turns-1).
  std::vector<std::int64_t> turn;
  // Warm-up: [ranks] samples each rank ran before its timed ones, and their
  // device times [ranks][warmup_width] (the first 1000 per rank; NaN past a rank's count).
  std::vector<std::int64_t> warmup_samples;
  int warmup_width = 0;
  std::vector<double> warmup_device_time_s;

  // Transfers only (scope empty for device-local workloads).
  std::optional<Scope> scope;  // none: a device-local workload
  std::optional<CommKind> comm;
  int groups = 0;     // groups in the scope
  std::vector<std::int64_t> group, group_rank, group_size;  // [ranks]
  std::vector<std::int64_t> wrong_elements;                 // [ranks], of the verification
  std::vector<double> op_bytes;    // [ranks], bytes of one operation (nccl-tests' size) in the rank's group
  std::vector<double> bus_factor;  // [ranks], busbw / algbw for the rank's group size

  // Tables beside the samples: the runner's (kTelemetryTable, kPhasesTable) and the workload's own.
  std::vector<CaseTable> tables;

  // The limits its experiment's [experiment.expect] set (name, value), checked by `report --check`.
  std::vector<std::pair<std::string, double>> expect;
};

// A case the run set out to run (schema 1.5 on: /plan), so that a reader
// knows what did not run: its label and the names of its limits.
struct PlannedCase {
  std::string label;  // "gemm-512 size=512 dtype=fp64 ops=4 [serial]"
  std::vector<std::pair<std::string, double>> limits;  // the [experiment.expect] limits that apply to it
};

struct RunRecord {
  std::string software = "gpuscale";
  std::string software_version;
  std::string date;  // ISO 8601 with offset
  std::string schema_version = kSchemaVersion;
  std::string software_dependencies;  // "openmpi@4.1.4;hdf5@1.10.8;..."
  std::string mpi_library;            // MPI_Get_library_version's text ("" in files before it was written)
  // The library's settings that pick its collective algorithms, read from it (MPI_T) by rank 0: name, value.
  // Empty in files before schema 1.10, and for a library without them.
  std::vector<std::pair<std::string, std::string>> mpi_settings;
  std::string command_line;
  std::string config_file, config_text, config_overrides;
  Backend backend = Backend::cpu;
  std::string backend_reason;
  std::optional<CommKind> comm;  // what moved data between ranks (none: a file of schema 1.0), and why
  std::string comm_reason;
  std::string slurm_job_id;
  std::size_t cases_planned = 0;  // cases the run set out to run (0: unknown, older files)
  std::vector<PlannedCase> plan;  // one per planned case (empty: files before schema 1.5)
  std::string last_update;        // ISO 8601 time of the last flush: a writer that vanished stops updating it
  bool complete = false;
  std::string status;  // "running" | "complete" | "failed: ..."
  // Not in the file: whether a process held its write lock when it was read (a live run's rank 0 does until it
  // closes the file), as the reader found it.
  bool being_written = false;
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<RankRecord> ranks;
  std::vector<LinkRecord> links;  // every rank's GPU to the other GPUs of its node
  std::vector<std::string> warnings;  // what makes the numbers doubtful (e.g. more ranks than cores), one per line
  // The data plane's set-up before the first case: rank 0's communicators and the slowest rank's seconds to make
  // and first use them (-1 and NaN: none made, or files before it was written).
  int data_plane_communicators = -1;
  double data_plane_setup_s = NAN;
  int nodes = 1;
  std::vector<CaseRecord> cases;
};

}  // namespace gpuscale
