// A workload: what one timed sample does on a device, how much work that is,
// and how its result is checked. Created per case by the registry.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/groups.hpp"
#include "core/config.hpp"
#include "core/param_spec.hpp"
#include "core/plan.hpp"
#include "core/value.hpp"
#include "device/device.hpp"
#include "io/case_table.hpp"
#include "workloads/phases.hpp"
#include "workloads/work.hpp"

namespace gpuscale {

struct Verification {
  bool ok = false;
  double max_error = 0.0;  // the workload's error measure (see its header)
  double tolerance = 0.0;
  std::int64_t wrong_elements = 0;  // transfers: result elements that differ from the expected ones
};

// What a workload may use while it runs one case on this rank: the device
// and, for a transfer, the data-plane group of the case's scope. Workloads
// never reach for MPI or NCCL themselves.
struct CaseContext {
  Device& dev;
  Group* group = nullptr;     // null for device-local workloads
  int nodes = 1;              // nodes of the job
  int node_index = 0;         // this rank's node, 0..nodes-1
  std::string hostname{};     // this rank's node's name
  int world_rank = 0;
  PhaseLog* phases = nullptr;  // where a workload marks named intervals of its samples

  DataComm& data() const { return *group->data; }
  int rank() const { return group ? group->rank : 0; }  // within the group
  int size() const { return group ? group->size : 1; }
  // Waits for the sample's work; through the data plane when there is one,
  // so that its errors (a dead peer) surface.
  void synchronize() const {
    if (group && group->data) {
      group->data->synchronize();
    } else {
      dev.synchronize();
    }
  }
};

class Workload {
 public:
  virtual ~Workload() = default;
  // "" when this job's shape (group sizes, nodes) can run the case, else why
  // not; the case is then kept in the file as skipped. Asked before setup().
  virtual std::string skip_reason(const CaseContext&) const { return ""; }
  // Allocates and fills inputs; `seed` differs per rank.
  virtual void setup(CaseContext& ctx, std::uint64_t seed) = 0;
  // Enqueues one sample's work; the runner synchronizes and times it.
  virtual void run_sample(CaseContext& ctx) = 0;
  virtual double flops_per_sample() const = 0;  // 0 for a bandwidth workload
  virtual double bytes_per_sample() const = 0;
  // Checks the last sample's result (a transfer may run one more, untimed, operation on fresh data).
  virtual Verification verify(CaseContext& ctx) = 0;
  // What a reader of the results must know about how this ran here ("" if nothing).
  virtual std::string note(const CaseContext&) const { return ""; }

  // Transfers only. In serial mode, ranks with the same turn run together
  // and turns run one after another; default: every rank alone.
  virtual int turn(const CaseContext& ctx, int world_rank) const {
    (void)ctx;
    return world_rank;
  }
  // Bytes of one operation as nccl-tests counts them, and the factor from
  // algorithm bandwidth to bus bandwidth; 0 for device-local workloads.
  virtual double op_bytes() const { return 0.0; }
  virtual double bus_factor(const CaseContext&) const { return 0.0; }

  // True when a sample puts work on lanes besides compute (Device::use_lane):
  // the runner then lets every lane start with the sample and joins them all
  // before its end event, so the sample's time covers every lane.
  virtual bool uses_lanes() const { return false; }

  // Rows this rank adds to the case's own tables, asked after verify(): the
  // runner gathers every rank's into one table per name on rank 0, led by a
  // rank column (merge_rank_tables), and the file keeps them.
  virtual std::vector<CaseTable> tables(const CaseContext&) const { return {}; }
  // Rank 0, after the gather: the tables as the file keeps them (e.g. rows of
  // node pairs joined from the rows of their ranks).
  virtual void finish_tables(std::vector<CaseTable>&) const {}
};

// What one rank allocates for a case, at most, for any group size: device
// buffers (Device::alloc) and host memory (Device::alloc_host, and the large
// std::vectors a workload keeps or builds: staged inputs, downloads for
// checking, expected results). Doubles, so that absurd sizes cannot overflow.
struct MemoryNeed {
  double device_bytes = 0;
  double host_bytes = 0;
};

// The choices that decide whether a case can run before anything starts.
struct RunTarget {
  Backend backend = Backend::cpu;
  CommKind comm = CommKind::mpi;  // what moves data between ranks
};

struct RowAnalysis;  // report/analysis.hpp: what a workload adds to the report

// A workload as the plan, the checks and the estimate see it, from a case's
// parameters alone. Each workload defines its own in its files; the registry
// lists them.
class WorkloadType {
 public:
  virtual ~WorkloadType() = default;
  virtual const WorkloadSchema& schema() const = 0;
  virtual std::unique_ptr<Workload> make(const Params& p) const = 0;
  // "" when the target can run a case with these parameters, else why not.
  virtual std::string unsupported(const Params& p, const RunTarget& target) const = 0;
  // From the parameters alone, nothing allocated. `buffers_on_host`: device
  // memory is host memory (CPU backend), so nothing is staged through host
  // memory on its way to the device.
  virtual MemoryNeed memory(const Params& p, bool buffers_on_host) const = 0;
  // One sample's work on a job and how the case runs there, from the parameters alone (the estimate's input).
  virtual CaseWork work(const Params& p, const JobShape& job) const = 0;
  // The scope of a case's group, for transfers; empty for device-local workloads.
  virtual std::optional<Scope> scope(const Params&) const { return std::nullopt; }
  // n > 0: the case runs in one group of world ranks 0..n-1 instead of the
  // scope's groups (Groups::first); the other ranks sit it out.
  virtual int group_size(const Params&) const { return 0; }
  // True when serial and parallel are one and the same for a case on any job
  // (a single group takes every turn): the plan then runs it once, as parallel.
  virtual bool single_turn(const Params&) const { return false; }
  // What the workload adds to the report; null when it adds nothing.
  virtual const RowAnalysis* analysis() const { return nullptr; }
  // Small cases of this workload, each with every key a case has after the config loader (example_params), that
  // run in about a second on 2 CPU ranks. The tests run every one (tests/mpi/test_registry.cpp, the memory tests),
  // so a new workload is covered by giving them.
  virtual std::vector<Params> examples() const = 0;
  // The case (its parameters as a Case carries them, the runner's keys too) shrunk to tens of MiB, for the
  // calibration's measurement of setup and check (calibrate.hpp); as it is by default.
  virtual Params small(const Params& p) const { return p; }
  // Kinds of memory traffic of this workload's own, which its work() names in SampleWork::add_stream and a model
  // fits apart from every other kind (work.hpp); none by default.
  virtual std::vector<StreamKind> stream_kinds() const { return {}; }
};

// The parameters of the cases that experiments of `schema` with these keys have after the config loader, less
// the runner's keys: each of the schema's keys, as given or at its default. Each string is one experiment's keys
// in TOML ("size = 96\nops = 2"; a list gives a case per value). InputError for keys the config would refuse.
inline std::vector<Params> example_params(const WorkloadSchema& schema, const std::vector<std::string>& experiments) {
  std::string text;
  for (const std::string& keys : experiments) {
    text += "[[experiment]]\nworkload = \"" + schema.name + "\"\nmodes = [\"parallel\"]\n" + keys + "\n";
  }
  std::vector<Params> out;
  for (const Case& c : expand(parse_config(text, schema.name + " examples", {}, {schema}))) {
    out.push_back(c.params.without(runner_param_keys()));
  }
  return out;
}

// `graph = true`: the runner records one sample's work into a device graph
// once, after setup, and every sample (warm-up included) replays it.
ParamSpec graph_param();
bool uses_graph(const Params& p);  // the case has `graph` and it is true
// "" when the target can replay the case's work as a graph, else why not.
std::string graph_unsupported(const Params& p, const RunTarget& target);

// The explicit list of workloads, in the order `--help` shows them.
const std::vector<const WorkloadType*>& workload_registry();
std::vector<WorkloadSchema> workload_schemas();
// Throws std::out_of_range for an unknown name (the config loader rejects those first).
const WorkloadType& find_workload(const std::string& name);
// The built-in kinds of memory traffic, then the workloads' own, in registry order.
const std::vector<StreamKind>& stream_kinds();
// Throws std::out_of_range for a kind no one declared.
const StreamKind& find_stream_kind(const std::string& name);

struct Case;
// InputError naming the first case that the target cannot run, and why.
void check_plan_runs_on(const std::vector<Case>& plan, const RunTarget& target);
// Drops the serial twin of every case whose serial and parallel runs are the
// same (see single_turn) and renumbers the plan; returns one note per
// experiment that lost cases, for the output.
std::vector<std::string> drop_single_turn_serials(std::vector<Case>& plan);

}  // namespace gpuscale
