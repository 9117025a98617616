#include "workloads/work.hpp"

#include <algorithm>
#include <utility>

#include "core/metrics.hpp"
#include "workloads/gemm_operands.hpp"

namespace gpuscale {

void SampleWork::add_gemm(DType t, GemmImpl impl, double m, double n, double k, double calls) {
  gemms.push_back({t, impl, gemm_flops(m, n, k), calls});
}

void SampleWork::add_gemm(const GemmProblem& g, double calls) {
  add_gemm(g.dtype, g.impl, g.shape.m, g.shape.n, g.shape.k, calls);
}

const char* const kHostPinned = "host-pinned";
const char* const kHostPageable = "host-pageable";
const char* const kDeviceCopy = "device";
const char* const kPass = "pass";

const std::vector<StreamKind>& builtin_stream_kinds() {
  static const std::vector<StreamKind> v{
      {kHostPinned, "", "copies between the host's pinned memory and the device"},
      {kHostPageable, "", "copies between the host's pageable memory and the device"},
      {kDeviceCopy, "", "copies inside the device's memory"},
      {kPass, "", "elementwise passes: bytes read and written"},
  };
  return v;
}

void SampleWork::add_stream(const std::string& kind, double bytes, double calls) {
  auto it = std::find_if(streams.begin(), streams.end(), [&](const StreamWork& s) { return s.kind == kind; });
  if (it == streams.end()) it = streams.insert(streams.end(), {kind, 0, 0});
  it->bytes += bytes;
  it->calls += calls;
}

void SampleWork::add_copy(CopyKind kind, bool pinned, double bytes, double calls) {
  add_stream(kind == CopyKind::d2d ? kDeviceCopy : pinned ? kHostPinned : kHostPageable, bytes, calls);
}

double SampleWork::stream_bytes() const {
  double b = 0;
  for (const auto& s : streams) b += s.bytes;
  return b;
}

double SampleWork::stream_calls() const {
  double c = 0;
  for (const auto& s : streams) c += s.calls;
  return c;
}

void SampleWork::add_transfer(TransferWork t, double count) {
  t.count = count;
  wire_bytes += t.op_bytes * t.bus_factor * count;
  transfers += count;
  across_nodes = across_nodes || t.group_nodes > 1;
  transfer_ops.push_back(std::move(t));
}

int ranks_per_node(const JobShape& job) { return std::max(1, job.ranks / std::max(1, job.nodes)); }

CaseWork local_case_work(const SampleWork& sample, const JobShape& job) {
  CaseWork cw;
  cw.sample = sample;
  cw.turns = job.ranks;
  cw.busy_ranks_per_node = ranks_per_node(job);
  return cw;
}

ScopeGroups scope_groups(Scope s, const JobShape& job) {
  const int per_node = ranks_per_node(job);
  switch (s) {
    case Scope::world: return {1, job.ranks, job.nodes > 1, job.nodes};
    case Scope::intra_node: return {job.nodes, per_node, false, 1};
    case Scope::inter_node: return {per_node, job.nodes, true, job.nodes};
    case Scope::node_pairs: return {1, job.nodes, true, job.nodes};
  }
  return {};
}

std::string scope_skip_reason(Scope s, int nodes) {
  if ((s == Scope::inter_node || s == Scope::node_pairs) && nodes < 2) {
    return std::string("scope ") + scope_name(s) + " needs ranks on at least 2 nodes; this job runs on 1 node";
  }
  return "";
}

bool single_group(Scope s) { return s == Scope::world || s == Scope::node_pairs; }

int pairs_in_group_of(int size) { return std::max(1, size / 2); }

int group_turn(int group, int turn_in_group) {
  constexpr int kStride = 1 << 16;  // more turns than any group has
  return group * kStride + turn_in_group;
}

std::string odd_group_reason(const std::string& what, Scope s, int group, int size) {
  if (size % 2 == 0) return "";
  return what + " needs groups of an even size; group " + std::to_string(group) + " of scope " + scope_name(s) +
         " has " + std::to_string(size) + " rank(s)";
}

}  // namespace gpuscale
