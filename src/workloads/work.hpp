// What one sample of a case does, counted from its parameters alone (no
// device, nothing allocated), for the estimate (estimate.hpp): gemm calls,
// bytes copied, bytes on the wire. Each workload says its own next to its
// code (WorkloadType::work), with the helpers here.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "comm/groups.hpp"
#include "device/device.hpp"
#include "device/dtype.hpp"

namespace gpuscale {

struct GemmProblem;

// The job a plan is estimated for.
struct JobShape {
  int ranks = 1;
  int nodes = 1;
  int cores_per_node = 1;  // CPU backend: ranks x threads beyond this share cores
};

// The gemm calls of one sample of one rank, of one kind.
struct GemmWork {
  DType dtype = DType::fp64;
  GemmImpl impl = GemmImpl::vendor;
  double flops_per_call = 0;
  double calls = 0;
};

// One kind of transfer operation in a sample, as a model prices it: by its
// algorithm's steps over the group's ranks and nodes (model/transfer_fit.hpp).
struct TransferWork {
  std::string op;          // a collective op ("allreduce", ...; "sendrecv" for a ring shift) or "p2p-<pattern>"
  double op_bytes = 0;     // nccl-tests' size of one operation
  double bus_factor = 1;   // bytes on the wire per op byte (nccl-tests' bus factor)
  int group_size = 1;      // ranks of the group
  int group_nodes = 1;     // nodes the group spans
  double count = 0;        // operations per sample
};

// A kind of memory traffic, as the estimate and the model price it: seconds =
// calls x latency + bytes / rate, one rate per kind. The built-in kinds are
// copies (host-pinned, host-pageable, device) and passes (elementwise: bytes
// read and written); a workload whose traffic is of its own kind (gemv: its
// matrix streamed once) names it, and the built-in kind whose rate the
// estimate takes for it until a model has fitted its own (WorkloadType::stream_kinds).
struct StreamKind {
  std::string name;
  std::string priced_as;  // a built-in kind; empty for the built-ins themselves
  std::string what;       // one line for docs and model output
};
extern const char* const kHostPinned;
extern const char* const kHostPageable;
extern const char* const kDeviceCopy;
extern const char* const kPass;
// The built-in kinds, in the order a model lists them.
const std::vector<StreamKind>& builtin_stream_kinds();

// Bytes of one kind a sample moves, in `calls` calls.
struct StreamWork {
  std::string kind;
  double bytes = 0, calls = 0;
  double call_bytes() const { return bytes / std::max(1.0, calls); }  // one call's (no calls: all of them)
};

// What one rank does in one sample.
struct SampleWork {
  std::vector<GemmWork> gemms;
  std::vector<StreamWork> streams;  // copies, passes and workloads' own kinds, one entry per kind
  double wire_bytes = 0;         // op bytes x bus factor (nccl-tests' busbw counts), over the sample's transfers
  double transfers = 0;          // transfer operations
  bool across_nodes = false;     // the transfers' group spans nodes
  std::vector<TransferWork> transfer_ops;  // the same transfers, by kind (wire_bytes and transfers are their sums)
  double host_waits = 0;         // times the host waits for the device inside the sample
  bool overlapped = false;       // its lanes overlap: the sample takes about its longest part, not the sum

  void add_gemm(DType t, GemmImpl impl, double m, double n, double k, double calls);
  void add_gemm(const GemmProblem& g, double calls);
  // `calls` of `kind` moving `bytes` in all, added to the kind's entry.
  void add_stream(const std::string& kind, double bytes, double calls);
  // `pinned` host memory (else pageable; no matter for d2d).
  void add_copy(CopyKind kind, bool pinned, double bytes, double calls);
  double stream_bytes() const;  // of every kind
  double stream_calls() const;
  // `count` operations `t` (t.count is set from it) on a group that spans nodes or not: adds them to
  // transfer_ops, wire_bytes and transfers.
  void add_transfer(TransferWork t, double count);
};

// How a case runs on a job, from its workload and parameters.
struct CaseWork {
  SampleWork sample;
  int turns = 1;               // serial: one after another
  int busy_ranks_per_node = 1;  // ranks of a node working at once (CPU backend: they share its cores)
  // Why the job's shape cannot run it (one node for inter-node scopes), in the words the run records; "" runs.
  std::string skip_reason;
  bool skipped() const { return !skip_reason.empty(); }
};

// A device-local workload's case: every rank runs `sample` on its own device, in turns when serial.
CaseWork local_case_work(const SampleWork& sample, const JobShape& job);

// The groups of a scope on a job: how many, and the ranks of each.
struct ScopeGroups {
  int count = 1, size = 1;
  bool across_nodes = false;
  int nodes = 1;  // nodes one group spans
};
ScopeGroups scope_groups(Scope s, const JobShape& job);
// "" when a job on `nodes` nodes has the scope's groups, else why not (inter-node and node-pairs need 2 nodes).
std::string scope_skip_reason(Scope s, int nodes);
// True when the scope is one group on any job (world, node-pairs).
bool single_group(Scope s);

// Pairs inside a group of `size` ranks, rank r with r + size/2 (pair_partner): how many, at least 1.
int pairs_in_group_of(int size);
// The turn of `turn_in_group` of group `group` when every group's turns run one after another.
int group_turn(int group, int turn_in_group);
// "" for a group of an even size, else why `what` (e.g. "op pairs") cannot run in group `group` of scope s.
std::string odd_group_reason(const std::string& what, Scope s, int group, int size);

// Ranks of a node busy at once when every rank of the job works.
int ranks_per_node(const JobShape& job);

}  // namespace gpuscale
